// `supervise explain [policy flags] [--json] read|write|exec|connect|socket TARGET
//                    [--as-exe PATH] [--profile NAME]`
// `supervise explain [policy flags] [--json] env NAME`  (kept = allow, stripped = deny)
// `supervise explain [policy flags] [--json] --audit-file F EVENT_ID`
// `supervise explain [policy flags] [--json] -`        (one audit line on stdin)
//
// Asks the Engine what it would decide and why: verdict, rule id, reason, the
// chain of rules considered and the smallest policy edit that flips a deny.
// For a recorded event it first shows what was recorded, then asks the
// current policy the same question again, so an operator sees both "why was
// this denied" and "what would allow it now". Needs no privileges and starts
// nothing. Exit 0 allow, 1 deny, 2 bad policy, event or usage, so scripts can
// branch on it.
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
#include "supervisor/cli/policy_args.h"
#include "supervisor/cli/policy_discovery.h"

namespace sv::supervisor {
namespace {

constexpr int kExitAllow = 0;
constexpr int kExitDeny = 1;
constexpr int kExitError = 2;

struct Target {
  policy::Ip6 ip{};
  uint16_t port = 0;
  std::string host;
};

// "ip:port", "[v6]:port" or "host:port".
bool parseConnectTarget(const std::string& text, Target* t, std::string* error) {
  std::string addr, port;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      *error = "expected [v6]:port";
      return false;
    }
    addr = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos || text.find(':') != colon) {
      *error = "expected ip:port, [v6]:port or host:port";
      return false;
    }
    addr = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  int p = 0;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (port.empty() || ec != std::errc() || ptr != port.data() + port.size() || p < 1 ||
      p > 65535) {
    *error = "bad port '" + port + "'";
    return false;
  }
  t->port = static_cast<uint16_t>(p);
  if (auto ip = policy::parseIp(addr)) {
    t->ip = *ip;
  } else if (!addr.empty() && addr.find_first_of("/ ") == std::string::npos) {
    t->host = addr;  // matched against host entries by name
  } else {
    *error = "bad address '" + addr + "'";
    return false;
  }
  return true;
}


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

namespace {

// The event EVENT_ID names in an audit file. Several sessions may share an
// audit file (sinks append), so a bare seq picks the last session that has it.
std::optional<std::string> findEventLine(const std::string& file, const EventId& id,
                                         std::string* error, std::string* note) {
  std::ifstream in(file);
  if (!in) {
    *error = "cannot read audit file " + file + ": " + std::strerror(errno);
    return std::nullopt;
  }
  const std::string needle = "\"seq\":" + std::to_string(id.seq) + ",";
  std::optional<std::string> found;
  std::vector<std::string> sessions;
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(needle) == std::string::npos) continue;  // cheap filter before parsing
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    auto seq = j.find("seq");
    if (seq == j.end() || !seq->is_number_unsigned() || seq->get<uint64_t>() != id.seq) continue;
    std::string session = str(j, "session_id");
    if (!session.starts_with(id.session)) continue;
    sessions.push_back(session);
    found = line;
  }
  if (!found) {
    *error = "no event " + std::to_string(id.seq) +
             (id.session.empty() ? "" : " in a session " + id.session + "*") + " in " + file;
    return std::nullopt;
  }
  if (sessions.size() > 1) {
    *note = std::to_string(sessions.size()) + " sessions in " + file + " have event " +
            std::to_string(id.seq) + "; this is the last one (name another as SESSION:SEQ)";
  }
  return found;
}


struct ExplainArgs {
  PolicyArgs policy;
  std::vector<std::string> words;  // OPERATION TARGET, or EVENT_ID, or -
  std::string audit_file;
  std::string as_exe;
  std::string profile;
  bool json = false;
};

// Prints verdict, rule, reason, chain and suggestion; returns the exit code.
int report(const ExplainArgs& args, const policy::Policy& pol, const policy::Explanation& e,
           const std::string& op, const std::string& shown, const std::string& profile,
           const RecordedDecision* event, const ordered_json& edit, const std::string& note) {
  bool deny = e.decision.verdict == policy::Verdict::Deny;
  bool audit = pol.mode == policy::Mode::Audit;
  if (args.json) {
    ordered_json j = {{"operation", op},
                      {"target", shown},
                      {"profile", profile},
                      {"verdict", std::string(policy::toString(e.decision.verdict))},
                      {"rule_id", std::string(e.decision.rule_id)},
                      {"reason", std::string(e.decision.reason)},
                      {"mode", audit ? "audit" : "enforce"},
                      {"would_deny", audit && deny},
                      {"policy", pol.name},
                      {"chain", ordered_json::array()},
                      {"suggestion", e.suggestion}};
    for (const auto& s : e.chain) {
      j["chain"].push_back(
          {{"rule_id", s.rule_id}, {"description", s.description}, {"matched", s.matched}});
    }
    if (event) {
      j["event"] = {{"seq", event->seq},         {"session_id", event->session_id},
                    {"decision", event->decision}, {"rule_id", event->rule_id},
                    {"reason", event->rule_reason}, {"errno", event->errno_name},
                    {"comm", event->comm},         {"exe", event->exe}};
      j["edit"] = edit;
      if (!note.empty()) j["note"] = note;
    }
    std::printf("%s\n", j.dump(2).c_str());
    return deny ? kExitDeny : kExitAllow;
  }
  if (event) {
    std::printf("event %llu%s: %s %s\n", static_cast<unsigned long long>(event->seq),
                event->session_id.empty() ? "" : (" of session " + event->session_id).c_str(),
                event->decision.c_str(), event->target().c_str());
    if (!event->comm.empty() || !event->exe.empty())
      std::printf("  process:  %s (%s)%s\n", event->comm.c_str(), event->exe.c_str(),
                  event->profile.empty() ? "" : (" in profile " + event->profile).c_str());
    std::printf("  recorded: rule %s%s%s%s\n", event->rule_id.c_str(),
                event->rule_reason.empty() ? "" : (": " + event->rule_reason).c_str(),
                event->errno_name.empty() ? "" : (", errno " + event->errno_name).c_str(),
                "");
    if (!note.empty()) std::printf("  note:     %s\n", note.c_str());
    std::printf("now, under policy %s:\n", pol.name.c_str());
  }
  std::printf("%s\n", std::string(policy::toString(e.decision.verdict)).c_str());
  std::printf("  %s %s%s\n", op.c_str(), shown.c_str(),
              profile.empty() ? "" : (" (profile " + profile + ")").c_str());
  std::printf("  rule:   %s\n", std::string(e.decision.rule_id).c_str());
  if (!e.decision.reason.empty())
    std::printf("  reason: %s\n", std::string(e.decision.reason).c_str());
  if (audit && deny)
    std::fputs(op == "env"
                   ? "  mode:   audit (the command keeps it; the start event lists it in "
                     "session.environment.would_remove)\n"
                   : "  mode:   audit (the operation would proceed and be recorded as would-deny)\n",
               stdout);
  std::printf("chain:\n");
  for (const auto& s : e.chain) {
    std::printf("  %s %s%s%s\n", s.matched ? "=>" : "  ", s.rule_id.c_str(),
                s.rule_id.empty() ? "" : ": ", s.description.c_str());
  }
  if (!e.suggestion.empty()) std::printf("suggestion: %s\n", e.suggestion.c_str());
  if (event && !edit.is_null())
    std::printf("policy edit (add to your policy file, or let `supervise policy learn` do it):\n"
                "  %s\n", edit.dump().c_str());
  return deny ? kExitDeny : kExitAllow;
}

int fail(const std::string& message) {
  std::fprintf(stderr, "supervise explain: %s\n", message.c_str());
  return kExitError;
}

int runExplain(const ExplainArgs& args) {
  static const std::vector<std::string> kOps = {"read", "write", "exec", "connect", "socket",
                                                "env"};
  const bool is_op = std::find(kOps.begin(), kOps.end(), args.words[0]) != kOps.end();
  if (is_op != (args.words.size() == 2)) {
    return fail(is_op ? "\"" + args.words[0] + "\" needs a TARGET"
                      : "expected OPERATION TARGET, EVENT_ID or -, got " +
                            std::to_string(args.words.size()) + " arguments");
  }
  // A recorded event: from stdin, or looked up in the audit file.
  std::optional<RecordedDecision> event;
  std::string note;
  if (!is_op) {
    std::string line, error;
    if (args.words[0] == "-") {
      while (std::getline(std::cin, line) && line.find_first_not_of(" \t\r") == std::string::npos) {
      }
      if (line.empty()) return fail("no audit line on stdin");
    } else {
      auto id = parseEventId(args.words[0]);
      if (!id) return fail("bad EVENT_ID \"" + args.words[0] + "\" (expected SEQ or SESSION:SEQ)");
      if (args.audit_file.empty()) return fail("EVENT_ID needs --audit-file FILE");
      auto found = findEventLine(args.audit_file, *id, &error, &note);
      if (!found) return fail(error);
      line = *found;
    }
    event = parseRecordedDecision(line, &error);
    if (!event) return fail("cannot explain this event: " + error);
  }

  // The policy a run here would use: --policy, else the discovered file
  // (./.supervise.json, ...), as `status` reports it.
  // --audit-file is the run's audit file: self-protected as in that run.
  PolicyArgs policy_args = args.policy;
  if (!args.audit_file.empty()) policy_args.audit_files.push_back(args.audit_file);
  std::vector<policy::Diagnostic> diags;
  auto effective = loadEffectivePolicy(policy_args, &diags);
  for (const auto& d : diags) std::fprintf(stderr, "%s\n", d.format().c_str());
  if (!effective) {
    if (diags.empty()) return fail(effective.error().message());
    return kExitError;
  }
  const std::shared_ptr<const policy::Policy> loaded = effective->policy;
  if (!event && args.words[0] == "env") {
    // Decided once at launch for the whole tree: no profile, no binary.
    if (!args.profile.empty() || !args.as_exe.empty())
      return fail("env takes no --profile or --as-exe: the environment is decided once, when the "
                  "command starts, for the whole tree");
    const std::string& name = args.words[1];
    return report(args, *loaded, policy::explainEnv(*loaded, name), "env", name, "", nullptr,
                  nullptr, "");
  }
  policy::Engine engine(loaded);
  if (event) {
    std::string why;
    ordered_json edit = smallestEdit(engine, *event, &why);
    policy::Request req = event->request();
    policy::Explanation e = engine.explain(req);
    if (edit.is_null() && e.decision.verdict == policy::Verdict::Deny && !why.empty())
      e.suggestion = why;
    std::string shown = event->op == policy::Operation::Connect ? connectDest(*event) : event->path;
    return report(args, *loaded, e, std::string(policy::toString(event->op)), shown,
                  event->profile, &*event, edit, note);
  }

  // Relative targets are relative to the cwd, like the command's own paths.
  std::string here = "/";
  if (char buf[4096]; ::getcwd(buf, sizeof buf)) here = buf;
  policy::Request req;
  const std::string& op = args.words[0];
  const std::string& target_text = args.words[1];
  req.op = op == "read"    ? policy::Operation::Read
           : op == "write" ? policy::Operation::Write
           : op == "exec"  ? policy::Operation::Exec
           : op == "socket" ? policy::Operation::Socket
                           : policy::Operation::Connect;
  std::string profile = args.profile;
  if (!profile.empty() && !loaded->profiles.count(profile))
    return fail("unknown profile \"" + profile + "\"");
  if (!args.as_exe.empty()) {
    std::string exe = policy::normalizePath(here, args.as_exe);
    profile = std::string(engine.profileAfterExec(profile, exe));
  }
  req.profile = profile;
  std::string path;
  Target target;
  if (req.op == policy::Operation::Connect) {
    std::string err;
    if (!parseConnectTarget(target_text, &target, &err))
      return fail("connect target \"" + target_text + "\": " + err);
    req.ip = target.ip;
    req.port = target.port;
    req.host = target.host;
  } else if (req.op == policy::Operation::Socket) {
    // FAMILY[:PROTOCOL]: vsock, AF_PACKET, 40, netlink:audit, netlink:9.
    const size_t colon = target_text.find(':');
    req.family = policy::socketFamilyFromName(target_text.substr(0, colon));
    req.protocol = colon == std::string::npos
                       ? 0
                       : policy::netlinkProtocolFromName(target_text.substr(colon + 1));
    if (req.family < 0 || req.protocol < 0)
      return fail("socket target \"" + target_text +
                  "\": expected FAMILY[:NETLINK_PROTOCOL] (vsock, AF_PACKET, 40, netlink:audit)");
  } else {
    path = policy::normalizePath(here, target_text);
    req.path = path;
  }
  policy::Explanation e = engine.explain(req);
  std::string shown =
      req.op == policy::Operation::Connect || req.op == policy::Operation::Socket ? target_text
                                                                                : path;
  return report(args, *loaded, e, op, shown, profile, nullptr, nullptr, "");
}

}  // namespace

void registerExplain(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<ExplainArgs>();
  CLI::App* sub = app.add_subcommand(
      "explain",
      "show what the policy decides for one operation or recorded audit event, and why "
      "(exit 0 allow, 1 deny)");
  args->policy.addTo(*sub);
  sub->add_option("what", args->words,
                  "OPERATION TARGET (read|write|exec|connect|socket, a path or ip:port / "
                  "[v6]:port / host:port, or an address family such as vsock or netlink:audit; "
                  "or env NAME: whether the command keeps that environment variable), or EVENT_ID (SEQ or SESSION:SEQ, with --audit-file), or - (one "
                  "audit line on stdin)")
      ->required()
      ->expected(1, 2);
  sub->add_option("--audit-file", args->audit_file,
                  "the run's audit file (JSON lines): EVENT_ID is looked up in it, and it is "
                  "self-protected as in that run");
  sub->add_option("--as-exe", args->as_exe,
                  "decide as a process running this binary (selects its exec.switch profile)");
  sub->add_option("--profile", args->profile, "decide inside this profile");
  sub->add_flag("--json", args->json, "print the explanation as JSON");
  sub->footer(
      "Examples:\n"
      "  supervise explain write .env\n"
      "  supervise explain --profile git connect github.com:22\n"
      "  supervise explain socket vsock\n"
      "  supervise explain env GITHUB_TOKEN\n"
      "  supervise explain --audit-file audit.jsonl 17\n"
      "  tail -n1 audit.jsonl | supervise explain -");
  sub->callback([&ctx, args] {
    ctx.exit_code = runGuarded("explain", kExitError, [&] { return runExplain(*args); });
  });
}

}  // namespace sv::supervisor
