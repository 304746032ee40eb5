// Report::add(): one record into the bounded summaries (aggregate.h).
#include "supervisor/report/aggregate.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <functional>

namespace sv::report {
namespace {

Outcome outcomeOf(const std::string& decision) {
  if (decision == "deny") return kDeny;
  if (decision == "would-deny") return kWouldDeny;
  return kAllow;
}

// The category a decision is counted under: the exec re-check and the
// process tracker write category "process" for an exec; it is still an exec.
std::string categoryOf(const Record& r) {
  if (r.category.empty()) return "other";
  return r.category;
}

// The tables' keys are strings of the trail: a session id, a rule id, up to
// a line's 4 MiB when hostile. A key past kMaxKey bytes is kept as its first
// kMaxKey bytes, '#' and a hash of the whole (longer than any key kept as it
// is), so that a table's memory is its cap times about kMaxKey.
constexpr size_t kMaxKey = 512;

std::string_view boundedKey(std::string_view s, std::string* buffer) {
  if (s.size() <= kMaxKey) return s;
  char hash[17];
  const uint64_t h = std::hash<std::string_view>{}(s);
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(h));
  buffer->assign(s.substr(0, kMaxKey));
  *buffer += '#';
  *buffer += hash;
  return *buffer;
}

}  // namespace

void DistinctCount::add(std::string_view key) {
  if (seen_.size() >= kMaxKept) {
    ++past_;  // an upper bound from here on
    return;
  }
  seen_.insert(std::hash<std::string_view>{}(key));
}

std::string SessionSummary::exitText() const {
  if (!ended) return "no end record (running, killed or cut)";
  if (!exit_signal.empty()) return "killed by " + exit_signal;
  return exit_code >= 0 ? std::to_string(exit_code) : "unknown";
}

void Report::assignCut(std::string* dst, std::string_view s) const {
  if (s.size() <= limits_.text) {
    dst->assign(s);
    return;
  }
  size_t n = limits_.text;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // whole UTF-8 chars
  dst->assign(s.substr(0, n));
  dst->append("…");
}

std::string Report::cut(std::string_view s) const {
  std::string out;
  assignCut(&out, s);
  return out;
}

void Report::addMalformed(const std::string& where, const std::string& why) {
  ++lines_;
  ++malformed_;
  if (malformed_examples_.size() < limits_.malformed_examples)
    malformed_examples_.push_back(where + ": " + why);
}

SessionSummary* Report::session(const std::string& id, const Record& r) {
  const std::string_view key = boundedKey(id, &session_key_);
  auto it = session_index_.find(key);
  if (it != session_index_.end()) return &sessions_[it->second];
  if (sessions_.size() >= limits_.sessions) {
    sessions_overflow_.add(id);
    return nullptr;
  }
  session_index_.emplace(std::string(key), sessions_.size());
  SessionSummary s;
  s.id = cut(id);
  s.format = r.format;
  sessions_.push_back(std::move(s));
  return &sessions_.back();
}

ProcessSummary* Report::process(const Record& r) {
  if (r.pid < 0) return nullptr;
  const std::string_view session_key = boundedKey(r.session_id, &session_key_);
  auto it = process_index_.find(std::pair<std::string_view, int64_t>(session_key, r.pid));
  if (it != process_index_.end()) return &processes_[it->second];
  if (processes_.size() >= limits_.processes) {
    // Every decision of an untracked process comes here: no allocation.
    char pid[24];
    scratch_.assign(r.session_id);
    scratch_ += '/';
    scratch_.append(pid, std::to_chars(pid, pid + sizeof pid, r.pid).ptr);
    processes_overflow_.add(scratch_);
    return nullptr;
  }
  process_index_.emplace(std::make_pair(std::string(session_key), r.pid), processes_.size());
  ProcessSummary p;
  p.session_id = r.session_id;
  p.pid = r.pid;
  processes_.push_back(std::move(p));
  return &processes_.back();
}

void Report::addToTimeline(int64_t ms, Outcome o) {
  if (ms < 0) return;
  if (timeline_.empty()) t0_ = ms;  // (t0_ may be negative once moved back)
  const int64_t cap = static_cast<int64_t>(limits_.timeline_buckets);
  const int64_t end = t0_ + bucket_ms_ * static_cast<int64_t>(timeline_.size());
  const int64_t lo = std::min(t0_, ms), hi = std::max(end, ms + 1);
  if (lo < t0_ || hi - t0_ > bucket_ms_ * cap) {
    // Wider buckets (a power of two of the old width) and an earlier start
    // (a whole number of new buckets before the old one), so each old
    // bucket falls into exactly one new bucket.
    int64_t w = bucket_ms_, start = t0_;
    for (;;) {
      start = t0_ - (t0_ - lo + w - 1) / w * w;
      if (hi - start <= w * cap) break;
      w *= 2;
    }
    std::vector<TimelineBucket> rebinned(static_cast<size_t>((hi - start + w - 1) / w));
    for (size_t i = 0; i < timeline_.size(); ++i) {
      const size_t j = static_cast<size_t>((t0_ + bucket_ms_ * static_cast<int64_t>(i) - start) / w);
      for (int k = 0; k < kOutcomes; ++k) rebinned[j].counts[k] += timeline_[i].counts[k];
    }
    timeline_ = std::move(rebinned);
    t0_ = start;
    bucket_ms_ = w;
  }
  const size_t index = static_cast<size_t>((ms - t0_) / bucket_ms_);
  if (index >= timeline_.size()) timeline_.resize(index + 1);
  timeline_[index].counts[o]++;
}

void Report::add(const Record& r) {
  ++lines_;
  SessionSummary* s = session(r.session_id, r);
  if (s && r.time_ms >= 0) {
    if (s->first_ms < 0 || r.time_ms < s->first_ms) s->first_ms = r.time_ms;
    if (r.time_ms > s->last_ms) s->last_ms = r.time_ms;
  }
  switch (r.kind) {
    case RecordKind::SessionStart:
      if (s) {
        s->started = true;
        s->start = r.time;
        assignCut(&s->command, r.command);
      }
      return;
    case RecordKind::SessionEnd:
      if (s) {
        s->ended = true;
        s->end = r.time;
        s->exit_code = r.exit_code;
        assignCut(&s->exit_signal, r.exit_signal);
      }
      return;
    case RecordKind::Other:
      ++other_;
      return;
    case RecordKind::Decision:
      break;
  }
  const Outcome o = outcomeOf(r.decision);
  totals_[o]++;
  if (auto it = by_category_.find(r.category); it != by_category_.end())
    it->second[o]++;
  else if (by_category_.size() < 16)
    by_category_[cut(categoryOf(r))][o]++;
  else
    by_category_["other"][o]++;
  if (s) s->decisions[o]++;
  addToTimeline(r.time_ms, o);

  ProcessSummary* p = process(r);
  if (p) {
    p->decisions++;
    if (r.ppid >= 0) p->ppid = r.ppid;
    if (!r.comm.empty()) assignCut(&p->comm, r.comm);
    // An exec decision names the image being started; the process's own
    // argv is what it ran as when it made the call. Keep the latest.
    if (!r.command.empty()) assignCut(&p->command, r.command);
  } else {
    ++untracked_decisions_;
  }
  if (o == kAllow) return;

  const std::string_view rule_id = r.rule_id.empty() ? "(no rule)" : std::string_view(r.rule_id);
  const std::string_view rule_key = boundedKey(rule_id, &rule_key_);
  auto it = rules_.find(rule_key);
  if (it == rules_.end()) {
    if (rules_.size() >= limits_.rules) {
      rules_overflow_.add(rule_id);
    } else {
      RuleSummary rule;
      rule.id = cut(rule_id);
      rule.reason = cut(r.rule_reason);
      it = rules_.emplace(std::string(rule_key), std::move(rule)).first;
    }
  }
  if (it != rules_.end()) {
    RuleSummary& rule = it->second;
    (o == kDeny ? rule.deny : rule.would_deny)++;
    if (!r.target.empty()) {
      assignCut(&scratch_, r.target);
      const std::string& t = scratch_;
      if (std::find(rule.examples.begin(), rule.examples.end(), t) == rule.examples.end()) {
        if (rule.examples.size() < limits_.examples_per_rule)
          rule.examples.push_back(t);
        else
          ++rule.more_targets;
      }
    }
    if (rule.denials.size() < limits_.denials_per_rule)
      rule.denials.push_back(DenialRef{source_, cut(r.event_id), cut(r.session_id), cut(r.target),
                                       cut(r.comm), r.seq, o == kWouldDeny});
  }
  if (p) {
    p->denials++;
    auto pr = p->denied_rules.find(rule_id);
    if (pr != p->denied_rules.end())
      pr->second++;
    else if (p->denied_rules.size() < 8)
      p->denied_rules[cut(rule_id)] = 1;
    else
      p->other_denials++;
  }
}

std::vector<const RuleSummary*> Report::rulesByDenials() const {
  std::vector<const RuleSummary*> out;
  for (const auto& [id, rule] : rules_) out.push_back(&rule);
  std::stable_sort(out.begin(), out.end(), [](const RuleSummary* a, const RuleSummary* b) {
    return a->deny + a->would_deny > b->deny + b->would_deny;
  });
  return out;
}

}  // namespace sv::report
