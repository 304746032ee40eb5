// The comparison of compare.h.
#include "tests/differential/compare.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

namespace sv::differential {
namespace {

using Tally = std::map<std::pair<std::string, std::string>,
                       size_t>;  // (decision, rule) -> n

std::string describe(const Tally& t) {
  if (t.empty()) return "{no event}";
  std::string s = "{";
  for (const auto& [dr, n] : t) {
    if (s.size() > 1) s += ", ";
    s += dr.first + " " + dr.second + " x" + std::to_string(n);
  }
  return s + "}";
}

std::string errnoName(int err) {
  if (err == 0) return "ok";
  if (err >= 1000) return "killed by signal " + std::to_string(err - 1000);
  const char* name = strerrorname_np(err);
  return name ? name : "E" + std::to_string(err);
}

bool deniedBy(int err) { return err == EACCES || err == EPERM || err >= 1000; }

const KnownDifference* knownFor(const std::string& text,
                                const std::vector<KnownDifference>& known) {
  for (const auto& k : known)
    if (text.find(k.match) != std::string::npos) return &k;
  return nullptr;
}

// CompareOptions::Events::DenialRules.
template <typename Note>
void compareDenialRules(const std::vector<Request>& requests,
                        const std::vector<Expectation>& expected, const std::vector<int>& outcomes,
                        const AuditTrail& trail, Comparison& c, Note note) {
  using Key = std::pair<std::string, std::string>;  // (subject, rule)
  std::map<Key, size_t> want;                        // -> first request
  for (size_t i = 0; i < expected.size() && i < outcomes.size(); ++i) {
    if (!deniedBy(outcomes[i]) || expected[i].verdict != policy::Verdict::Deny) continue;
    for (const auto& ev : expected[i].events)
      if (ev.decision == "deny") want.emplace(Key{ev.subject, ev.rule}, i);
  }
  std::map<Key, std::string> got;  // -> the first event's what
  for (const auto& ev : trail.decisions)
    if (ev.decision == "deny") got.emplace(Key{ev.subject, ev.rule}, ev.what);
  c.denial_rules = got.size();
  for (const auto& [key, i] : want)
    if (!got.count(key))
      note(format(requests[i]), "request #" + std::to_string(i) + " '" + format(requests[i]) +
                                    "': engine deny of " + key.first + " (rule " + key.second +
                                    "), backend refused it with no denial event by that rule");
  for (const auto& [key, what] : got)
    if (!want.count(key))
      note(what, "event '" + what + "': backend deny (rule " + key.second +
                     "), a rule the engine gave no refused request on " + key.first);
}

}  // namespace

Comparison compare(const std::vector<Request>& requests, const std::vector<Expectation>& expected,
                   const std::vector<int>& outcomes, const AuditTrail& trail,
                   const std::vector<EventKey>& extra, const CompareOptions& options) {
  Comparison c;
  c.requests = requests.size();
  auto note = [&](const std::string& text, const std::string& line) {
    if (const KnownDifference* k = knownFor(text, options.known)) {
      ++c.known;
      c.lines.push_back("known: " + line + "\n    because " + k->reason);
    } else {
      ++c.differences;
      c.lines.push_back("DIFFERENCE: " + line);
    }
  };

  // Verdicts, one distinct (request, engine, outcome) per line.
  std::map<std::tuple<std::string, std::string, int>, std::pair<size_t, size_t>> verdicts;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (i >= outcomes.size()) {
      note(format(requests[i]), "request #" + std::to_string(i) + " '" + format(requests[i]) +
                                    "': no outcome (the runner stopped early)");
      break;
    }
    if (std::find(options.undecided.begin(), options.undecided.end(), outcomes[i]) !=
        options.undecided.end()) {
      ++c.undecided;
      continue;
    }
    const bool denied = deniedBy(outcomes[i]);
    ++(denied ? c.denied : c.allowed);
    if (denied == (expected[i].verdict == policy::Verdict::Deny)) continue;
    auto& [first, n] = verdicts[{format(requests[i]), expected[i].rule, outcomes[i]}];
    if (n++ == 0) first = i;
  }
  for (const auto& [key, seen] : verdicts) {
    const auto& [text, rule, err] = key;
    const Expectation& e = expected[seen.first];
    note(text, "request #" + std::to_string(seen.first) + " '" + text + "' (x" +
                   std::to_string(seen.second) + "): engine " +
                   std::string(verdictName(e.verdict)) + " (rule " + rule + "), backend " +
                   (deniedBy(err) ? "deny" : "allow") + " (" + errnoName(err) + ")");
  }

  if (trail.dropped)
    note("", std::to_string(trail.dropped) + " audit events dropped by the session");
  if (trail.unrecorded)
    note("", std::to_string(trail.unrecorded) +
                 " decisions the kernel enforced but could not report (counters.unrecorded)");
  if (options.events == CompareOptions::Events::DenialRules) {
    compareDenialRules(requests, expected, outcomes, trail, c, note);
    return c;
  }
  // Events, as multisets per thing decided.
  std::map<std::string, Tally> want, got;
  std::map<std::string, size_t> first_request;
  for (size_t i = 0; i < expected.size(); ++i)
    for (const auto& ev : expected[i].events) {
      ++want[ev.what][{ev.decision, ev.rule}];
      first_request.emplace(ev.what, i);
    }
  for (const auto& ev : extra) ++want[ev.what][{ev.decision, ev.rule}];
  for (const auto& ev : trail.decisions) {
    // Events about nothing requested (the runner's start-up, a program's
    // dynamic loader) are not compared, unless they are denials.
    if (!want.count(ev.what) && ev.decision == "allow") {
      ++c.events_ignored;
      continue;
    }
    ++c.events_compared;
    ++got[ev.what][{ev.decision, ev.rule}];
  }
  std::set<std::string> whats;
  for (const auto& [w, t] : want) whats.insert(w);
  for (const auto& [w, t] : got) whats.insert(w);
  for (const auto& w : whats) {
    const Tally& a = want[w];
    const Tally& b = got[w];
    if (a == b) continue;
    auto req = first_request.find(w);
    const std::string request =
        req == first_request.end()
            ? "none"
            : "#" + std::to_string(req->second) + " '" + format(requests[req->second]) + "'";
    note(w + " " + (req == first_request.end() ? "" : format(requests[req->second])),
         "events for '" + w + "' (first request " + request + "): engine " + describe(a) +
             ", backend " + describe(b));
  }
  return c;
}

}  // namespace sv::differential
