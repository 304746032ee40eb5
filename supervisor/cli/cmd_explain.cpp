// `supervise explain [policy flags] [--json] read|write|exec|connect|socket TARGET
//                    [--as-exe PATH] [--profile NAME]`
// `supervise explain [policy flags] [--json] env NAME`  (kept = allow, stripped = deny)
// `supervise explain [policy flags] [--json] --audit-file F EVENT_ID`
// `supervise explain [policy flags] [--json] -`        (one audit line on stdin)
// `supervise explain [policy flags] --summary`         (the policy in a few lines)
//
// Asks the Engine what it would decide and why: verdict, rule id, reason, the
// chain of rules considered and the smallest policy edit that flips a deny.
// For a recorded event it first shows what was recorded, then asks the
// current policy the same question again, so an operator sees both "why was
// this denied" and "what would allow it now". Needs no privileges and starts
// nothing. Exit 0 allow, 1 deny, 2 bad policy, event or usage, so scripts can
// branch on it. The body is explainQuery() (explain_query.h), which the MCP
// server's explain tool shares; --summary is policySummary() (policy_summary.h).
//
// Also the recorded-decision helpers `policy learn` shares (commands.h).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "policy/engine.h"
#include "policy/env_rules.h"
#include "policy/home_rules.h"
#include "policy/path.h"
#include "supervisor/audit/redact.h"
#include "supervisor/cli/commands.h"
#include "supervisor/cli/explain_query.h"
#include "supervisor/cli/policy_args.h"
#include "supervisor/cli/policy_discovery.h"
#include "supervisor/cli/policy_summary.h"

namespace sv::supervisor {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr char kDeleted[] = " (deleted)";

// A string member, "" when absent, null or not a string (audit fields may be
// null when the supervisor could not read them).
std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string connectDest(const RecordedDecision& d) {
  std::string ip = d.ip_text.find(':') != std::string::npos ? "[" + d.ip_text + "]" : d.ip_text;
  return ip + ":" + std::to_string(d.port);
}

bool hasRule(const std::vector<policy::PathRule>& rules, std::string_view id) {
  for (const auto& r : rules)
    if (r.id == id) return true;
  return false;
}

bool profileDenies(const policy::Profile& prof, std::string_view id) {
  return hasRule(prof.filesystem.deny_read, id) || hasRule(prof.filesystem.deny_write, id) ||
         hasRule(prof.exec.deny, id);
}

// "learned-git" for /usr/bin/git (profile names: letters, digits, -, _, .).
std::string learnedProfileName(std::string_view exe) {
  std::string out = "learned-";
  for (char c : exe.substr(exe.rfind('/') + 1)) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    out += ok ? c : '_';
  }
  return out;
}

// The list `section.list` of the base policy, or of profiles.<profile>.
ordered_json& listIn(ordered_json& frag, const std::string& profile, const char* section,
                     const char* list) {
  ordered_json& scope = profile.empty() ? frag : frag["profiles"][profile];
  return scope[section][list];
}

// The pattern a list entry is about: the string itself or its path / to /
// match (with the profile of a switch).
std::string entryKey(const ordered_json& e) {
  if (e.is_string()) return e.get<std::string>();
  if (!e.is_object()) return e.dump();
  for (const char* k : {"path", "to", "match"}) {
    auto it = e.find(k);
    if (it == e.end() || !it->is_string()) continue;
    auto p = e.find("profile");
    return it->get<std::string>() + (p != e.end() && p->is_string() ? "|" + p->get<std::string>() : "");
  }
  return e.dump();
}

}  // namespace

policy::Request RecordedDecision::request() const {
  policy::Request r;
  r.op = op;
  r.profile = profile;
  if (op == policy::Operation::Connect) {
    r.ip = ip;
    r.port = port;
  } else {
    r.path = path;
  }
  return r;
}

std::string RecordedDecision::target() const {
  std::string verb(policy::toString(op));
  return verb + " " + (op == policy::Operation::Connect ? connectDest(*this) : path);
}

std::optional<RecordedDecision> parseRecordedDecision(std::string_view line, std::string* why) {
  json j = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    *why = "not a JSON object";
    return std::nullopt;
  }
  RecordedDecision d;
  d.category = str(j, "category");
  d.operation = str(j, "operation");
  d.decision = str(j, "decision");
  if (d.decision.empty()) {
    *why = "not a decision event (" + d.category + " " + d.operation + ")";
    return std::nullopt;
  }
  if (auto it = j.find("seq"); it != j.end() && it->is_number_unsigned()) d.seq = it->get<uint64_t>();
  d.session_id = str(j, "session_id");
  d.errno_name = str(j, "errno");
  if (auto it = j.find("rule"); it != j.end() && it->is_object()) {
    d.rule_id = str(*it, "id");
    d.rule_reason = str(*it, "reason");
  }
  if (auto it = j.find("process"); it != j.end() && it->is_object()) {
    d.comm = str(*it, "comm");
    d.exe = str(*it, "exe");
    d.profile = str(*it, "profile");
  }
  const json empty = json::object();
  auto obj = [&](const char* key) -> const json& {
    auto it = j.find(key);
    return it != j.end() && it->is_object() ? *it : empty;
  };
  if (d.category == "file") {
    // The decided path is file.path (path2 is the other name of a rename or
    // link, decided by its own event). A plain "open" is a read; every other
    // file operation was decided as a write.
    d.path = str(obj("file"), "path");
    d.op = d.operation == "open" || d.operation == "read" ? policy::Operation::Read
                                                           : policy::Operation::Write;
  } else if (d.category == "exec") {
    d.path = str(obj("exec"), "path");
    if (d.path.empty()) d.path = str(obj("file"), "path");
    d.op = policy::Operation::Exec;
  } else if (d.category == "network") {
    if (d.operation != "connect" && d.operation != "sendmsg") {
      *why = "a network " + d.operation + " decision has no destination to allow";
      return std::nullopt;
    }
    const json& net = obj("network");
    d.ip_text = str(net, "ip");
    auto ip = policy::parseIp(d.ip_text);
    auto port = net.find("port");
    if (!ip || port == net.end() || !port->is_number_unsigned() || port->get<uint64_t>() > 65535) {
      *why = "a network event without an ip and port (unix sockets are not decided by the policy)";
      return std::nullopt;
    }
    d.ip = *ip;
    d.port = static_cast<uint16_t>(port->get<uint64_t>());
    d.op = policy::Operation::Connect;
    return d;
  } else {
    *why = "category \"" + d.category + "\" is not a file, exec or network decision";
    return std::nullopt;
  }
  if (d.path == kRedacted) {
    *why = "the event's target path was redacted (audit.redact)";
    return std::nullopt;
  }
  if (d.path.empty() || d.path.front() != '/') {
    *why = "the event has no absolute target path";
    return std::nullopt;
  }
  // A path cut at the size limit (on a UTF-8 boundary: up to 3 bytes short)
  // names another file: nothing to explain or learn from.
  auto cut = j.find("truncated");
  if (cut != j.end() && *cut == true && d.path.size() + 3 >= kAuditMaxPathBytes) {
    *why = "the event's target path was truncated";
    return std::nullopt;
  }
  return d;
}

std::optional<EventId> parseEventId(std::string_view text) {
  EventId id;
  size_t colon = text.rfind(':');
  std::string_view seq = text;
  if (colon != std::string_view::npos) {
    id.session = std::string(text.substr(0, colon));
    seq = text.substr(colon + 1);
    if (id.session.empty() ||
        id.session.find_first_not_of("0123456789abcdef") != std::string::npos)
      return std::nullopt;
  }
  auto [ptr, ec] = std::from_chars(seq.data(), seq.data() + seq.size(), id.seq);
  if (seq.empty() || ec != std::errc() || ptr != seq.data() + seq.size() || id.seq == 0)
    return std::nullopt;
  return id;
}

ordered_json smallestEdit(const policy::Engine& engine, const RecordedDecision& d,
                          std::string* why) {
  policy::Explanation ex = engine.explain(d.request());
  const std::string rule(ex.decision.rule_id);
  if (ex.decision.verdict == policy::Verdict::Allow) {
    *why = "the policy allows it (rule " + rule + ")";
    return nullptr;
  }
  if (rule.starts_with("self-protect:")) {
    // Checked before every profile: no fragment can allow it (policy.md,
    // "Self-protection").
    *why = "rule " + rule + " keeps supervise's own files out of the tree's reach; no policy "
           "edit lifts it";
    return nullptr;
  }
  const policy::Policy& p = engine.policy();
  const auto prof_it = p.profiles.find(d.profile);
  const policy::Profile* prof = prof_it == p.profiles.end() ? nullptr : &prof_it->second;
  // An event recorded under a profile the policy no longer has is decided by
  // the base policy (Engine::explain), so the edit goes there too.
  std::string scope = prof ? d.profile : "";
  const std::string reason = "learned from audit event " + std::to_string(d.seq) +
                             (d.comm.empty() ? "" : " (" + d.comm + ")");
  ordered_json frag = ordered_json::object();
  auto add = [&](const std::string& in, const char* section, const char* list, const char* key,
                 const std::string& value) {
    listIn(frag, in, section, list).push_back({{key, value}, {"reason", reason}});
  };
  const bool exec_allow_list = !p.exec.allow.empty() || (prof && !prof->exec.allow.empty());
  // The allow list that covers this operation.
  auto allowList = [&](const char** section, const char** list) {
    *section = "filesystem";
    *list = d.op == policy::Operation::Write ? "writableRoots" : "readableRoots";
    if (d.op == policy::Operation::Exec && exec_allow_list) {
      *section = "exec";
      *list = "allow";
    }
  };
  const char* section = nullptr;
  const char* list = nullptr;
  if (d.op == policy::Operation::Connect) {
    if (rule == policy::kDenyNetworkNone) {
      (scope.empty() ? frag : frag["profiles"][scope])["network"]["mode"] = "allowlist";
    } else if (rule != policy::kDefaultDenyConnect) {
      *why = "rule " + rule + " denies it: " + ex.suggestion;
      return nullptr;
    }
    add(scope, "network", "allow", "to", connectDest(d));
    return frag;
  }
  allowList(&section, &list);
  if (rule == policy::kDefaultDenyRead || rule == policy::kDefaultDenyWrite ||
      rule == policy::kDefaultDenyExec) {
    // A read or exec is learned as the toolchain that holds it (a shim runs
    // more of its toolchain than itself); a write or an exec.allow entry as
    // the path alone.
    const bool root = std::string_view(list) == "readableRoots";
    add(scope, section, list, "path", root ? policy::toolchainRootFor(p.home, d.path) : d.path);
    return frag;
  }
  // An explicit deny rule. A profile's own deny beats every allow of that
  // profile: no addition helps.
  if (prof && profileDenies(*prof, rule)) {
    *why = "rule " + rule + " of profile " + scope + " denies it and no addition can allow it: " +
           ex.suggestion;
    return nullptr;
  }
  if (!scope.empty()) {  // a base deny: the process's profile may allow it
    add(scope, section, list, "path", d.path);
    return frag;
  }
  if (d.exe.empty() || d.exe.front() != '/') {
    *why = "rule " + rule + " denies it, and the event names no binary to give a profile: " +
           ex.suggestion;
    return nullptr;
  }
  std::string exe = d.exe;
  if (exe.ends_with(kDeleted)) exe.resize(exe.size() - sizeof kDeleted + 1);
  const std::string name = learnedProfileName(exe);
  frag["exec"]["switch"].push_back({{"match", exe}, {"profile", name}, {"reason", reason}});
  // Exec rules in a fresh profile: an empty profile exec.allow falls through
  // to the base, so only an explicit exec.deny needs the profile's allow.
  add(name, section, list, "path", d.path);
  return frag;
}

void mergePolicyFragment(ordered_json& into, const ordered_json& fragment) {
  if (!fragment.is_object()) return;
  if (!into.is_object()) into = ordered_json::object();
  for (auto it = fragment.begin(); it != fragment.end(); ++it) {
    ordered_json& dst = into[it.key()];
    if (it->is_object()) {
      mergePolicyFragment(dst, *it);
    } else if (it->is_array()) {
      if (!dst.is_array()) dst = ordered_json::array();
      for (const auto& e : *it) {
        bool have = false;
        for (const auto& x : dst) have = have || entryKey(x) == entryKey(e);
        if (!have) dst.push_back(e);
      }
    } else {
      dst = *it;
    }
  }
}

void registerExplain(CLI::App& app, CommandContext& ctx) {
  struct Args {
    ExplainQuery query;
    bool summary = false;
  };
  auto args = std::make_shared<Args>();
  ExplainQuery& q = args->query;
  CLI::App* sub = app.add_subcommand(
      "explain",
      "show what the policy decides for one operation or recorded audit event, and why "
      "(exit 0 allow, 1 deny); --summary: the whole policy in a few lines");
  q.policy.addTo(*sub);
  sub->add_option("what", q.words,
                  "OPERATION TARGET (read|write|exec|connect|socket, a path or ip:port / "
                  "[v6]:port / host:port, or an address family such as vsock or netlink:audit; "
                  "or env NAME: whether the command keeps that environment variable), or "
                  "EVENT_ID (SEQ or SESSION:SEQ, with --audit-file), or - (one audit line on "
                  "stdin)")
      ->expected(1, 2);
  sub->add_option("--audit-file", q.audit_file,
                  "the run's audit file (JSON lines): EVENT_ID is looked up in it, and it is "
                  "self-protected as in that run");
  sub->add_option("--as-exe", q.as_exe,
                  "decide as a process running this binary (selects its exec.switch profile)");
  sub->add_option("--profile", q.profile, "decide inside this profile");
  sub->add_flag("--json", q.json, "print the explanation as JSON");
  sub->add_flag("--summary", args->summary,
                "print what the effective policy allows and refuses in a few lines (roots, "
                "protected names, exec, network, profiles), to give to an agent");
  sub->footer(
      "Examples:\n"
      "  supervise explain write .env\n"
      "  supervise explain --profile git connect github.com:22\n"
      "  supervise explain socket vsock\n"
      "  supervise explain env GITHUB_TOKEN\n"
      "  supervise explain --audit-file audit.jsonl 17\n"
      "  tail -n1 audit.jsonl | supervise explain -\n"
      "  supervise explain --summary");
  sub->callback([&ctx, args] {
    ctx.exit_code = runGuarded("explain", kExplainError, [&] {
      ExplainQuery& query = args->query;
      if (args->summary) {
        if (!query.words.empty() || query.json || !query.as_exe.empty() || !query.profile.empty()) {
          std::fprintf(stderr, "supervise explain: --summary takes only the policy flags\n");
          return kExplainError;
        }
        auto effective = loadEffectivePolicyOrReport(query.policy, "explain");
        if (!effective) return kExplainError;
        std::fputs(policySummary(*effective->policy).c_str(), stdout);
        return kExplainAllow;
      }
      if (query.words.empty()) {
        std::fprintf(stderr,
                     "supervise explain: expected OPERATION TARGET, EVENT_ID, - or "
                     "--summary\n");
        return kExplainError;
      }
      if (query.words.size() == 1 && query.words[0] == "-") {
        // The first line that is not blank.
        std::string line;
        while (std::getline(std::cin, line) &&
               line.find_first_not_of(" \t\r") == std::string::npos) {
        }
        query.audit_line = line;
      }
      ExplainOutput result = explainQuery(query);
      std::fputs(result.err.c_str(), stderr);
      std::fputs(result.out.c_str(), stdout);
      return result.exit_code;
    });
  });
}

}  // namespace sv::supervisor
