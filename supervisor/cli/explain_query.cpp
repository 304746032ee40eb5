// explainQuery(): see explain_query.h. Moved from cmd_explain.cpp with its
// printf()s turned into appends to the returned output.
#include "supervisor/cli/explain_query.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "policy/engine.h"
#include "policy/env_rules.h"
#include "policy/path.h"
#include "supervisor/cli/commands.h"
#include "supervisor/cli/policy_discovery.h"

namespace sv::supervisor {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

void appendf(std::string& to, const char* format, ...) __attribute__((format(printf, 2, 3)));
void appendf(std::string& to, const char* format, ...) {
  va_list args, copy;
  va_start(args, format);
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  if (n > 0) {
    const size_t at = to.size();
    to.resize(at + size_t(n) + 1);
    std::vsnprintf(to.data() + at, size_t(n) + 1, format, args);
    to.resize(at + size_t(n));
  }
  va_end(args);
}

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
  if (port.empty() || ec != std::errc() || ptr != port.data() + port.size() || p < 1 || p > 65535) {
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
    auto sid = j.find("session_id");
    std::string session = sid != j.end() && sid->is_string() ? sid->get<std::string>() : "";
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

using ExplainArgs = ExplainQuery;

// Prints verdict, rule, reason, chain and suggestion; returns the exit code.
int report(ExplainOutput& o, const ExplainArgs& args, const policy::Policy& pol,
           const policy::Explanation& e, const std::string& op, const std::string& shown,
           const std::string& profile, const RecordedDecision* event, const ordered_json& edit,
           const std::string& note) {
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
      j["event"] = {{"seq", event->seq},
                    {"session_id", event->session_id},
                    {"decision", event->decision},
                    {"rule_id", event->rule_id},
                    {"reason", event->rule_reason},
                    {"errno", event->errno_name},
                    {"comm", event->comm},
                    {"exe", event->exe}};
      j["edit"] = edit;
      if (!note.empty()) j["note"] = note;
    }
    appendf(o.out, "%s\n", j.dump(2).c_str());
    return deny ? kExplainDeny : kExplainAllow;
  }
  if (event) {
    appendf(o.out, "event %llu%s: %s %s\n", static_cast<unsigned long long>(event->seq),
            event->session_id.empty() ? "" : (" of session " + event->session_id).c_str(),
            event->decision.c_str(), event->target().c_str());
    if (!event->comm.empty() || !event->exe.empty())
      appendf(o.out, "  process:  %s (%s)%s\n", event->comm.c_str(), event->exe.c_str(),
              event->profile.empty() ? "" : (" in profile " + event->profile).c_str());
    appendf(o.out, "  recorded: rule %s%s%s%s\n", event->rule_id.c_str(),
            event->rule_reason.empty() ? "" : (": " + event->rule_reason).c_str(),
            event->errno_name.empty() ? "" : (", errno " + event->errno_name).c_str(), "");
    if (!note.empty()) appendf(o.out, "  note:     %s\n", note.c_str());
    appendf(o.out, "now, under policy %s:\n", pol.name.c_str());
  }
  appendf(o.out, "%s\n", std::string(policy::toString(e.decision.verdict)).c_str());
  appendf(o.out, "  %s %s%s\n", op.c_str(), shown.c_str(),
          profile.empty() ? "" : (" (profile " + profile + ")").c_str());
  appendf(o.out, "  rule:   %s\n", std::string(e.decision.rule_id).c_str());
  if (!e.decision.reason.empty())
    appendf(o.out, "  reason: %s\n", std::string(e.decision.reason).c_str());
  if (audit && deny)
    o.out += op == "env"
                 ? "  mode:   audit (the command keeps it; the start event lists it in "
                   "session.environment.would_remove)\n"
                 : "  mode:   audit (the operation would proceed and be recorded as would-deny)\n";
  appendf(o.out, "chain:\n");
  for (const auto& s : e.chain) {
    appendf(o.out, "  %s %s%s%s\n", s.matched ? "=>" : "  ", s.rule_id.c_str(),
            s.rule_id.empty() ? "" : ": ", s.description.c_str());
  }
  if (!e.suggestion.empty()) appendf(o.out, "suggestion: %s\n", e.suggestion.c_str());
  if (event && !edit.is_null())
    appendf(o.out,
            "policy edit (add to your policy file, or let `supervise policy learn` do it):\n"
            "  %s\n",
            edit.dump().c_str());
  return deny ? kExplainDeny : kExplainAllow;
}

int fail(ExplainOutput& o, const std::string& message) {
  appendf(o.err, "supervise explain: %s\n", message.c_str());
  return kExplainError;
}

int runExplain(const ExplainArgs& args, ExplainOutput& o) {
  static const std::vector<std::string> kOps = {"read",    "write",  "exec",
                                                "connect", "socket", "env"};
  const bool is_op = std::find(kOps.begin(), kOps.end(), args.words[0]) != kOps.end();
  if (is_op != (args.words.size() == 2)) {
    return fail(o, is_op ? "\"" + args.words[0] + "\" needs a TARGET"
                         : "expected OPERATION TARGET, EVENT_ID or -, got " +
                               std::to_string(args.words.size()) + " arguments");
  }
  // A recorded event: from stdin, or looked up in the audit file.
  std::optional<RecordedDecision> event;
  std::string note;
  if (!is_op) {
    std::string line, error;
    if (args.words[0] == "-") {
      line = args.audit_line;
      if (line.find_first_not_of(" \t\r\n") == std::string::npos)
        return fail(o, "no audit line on stdin");
    } else {
      auto id = parseEventId(args.words[0]);
      if (!id)
        return fail(o, "bad EVENT_ID \"" + args.words[0] + "\" (expected SEQ or SESSION:SEQ)");
      if (args.audit_file.empty()) return fail(o, "EVENT_ID needs --audit-file FILE");
      auto found = findEventLine(args.audit_file, *id, &error, &note);
      if (!found) return fail(o, error);
      line = *found;
    }
    event = parseRecordedDecision(line, &error);
    if (!event) return fail(o, "cannot explain this event: " + error);
  }

  // The policy a run here would use: --policy, else the discovered file
  // (./.supervise.json, ...), as `status` reports it.
  // --audit-file is the run's audit file: self-protected as in that run.
  PolicyArgs policy_args = args.policy;
  if (!args.audit_file.empty()) policy_args.audit_files.push_back(args.audit_file);
  std::vector<policy::Diagnostic> diags;
  auto effective = loadEffectivePolicy(policy_args, &diags);
  for (const auto& d : diags) appendf(o.err, "%s\n", d.format().c_str());
  if (!effective) {
    if (diags.empty()) return fail(o, effective.error().message());
    return kExplainError;
  }
  const std::shared_ptr<const policy::Policy> loaded = effective->policy;
  if (!event && args.words[0] == "env") {
    // Decided once at launch for the whole tree: no profile, no binary.
    if (!args.profile.empty() || !args.as_exe.empty())
      return fail(o,
                  "env takes no --profile or --as-exe: the environment is decided once, when the "
                  "command starts, for the whole tree");
    const std::string& name = args.words[1];
    return report(o, args, *loaded, policy::explainEnv(*loaded, name), "env", name, "", nullptr,
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
    // target() is "VERB WHAT": the part after the verb.
    std::string shown = event->target();
    shown.erase(0, shown.find(' ') + 1);
    return report(o, args, *loaded, e, std::string(policy::toString(event->op)), shown,
                  event->profile, &*event, edit, note);
  }

  // Relative targets are relative to the cwd, like the command's own paths.
  std::string here = "/";
  if (char buf[4096]; ::getcwd(buf, sizeof buf)) here = buf;
  policy::Request req;
  const std::string& op = args.words[0];
  const std::string& target_text = args.words[1];
  req.op = op == "read"     ? policy::Operation::Read
           : op == "write"  ? policy::Operation::Write
           : op == "exec"   ? policy::Operation::Exec
           : op == "socket" ? policy::Operation::Socket
                            : policy::Operation::Connect;
  std::string profile = args.profile;
  if (!profile.empty() && !loaded->profiles.count(profile))
    return fail(o, "unknown profile \"" + profile + "\"");
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
      return fail(o, "connect target \"" + target_text + "\": " + err);
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
      return fail(
          o, "socket target \"" + target_text +
                 "\": expected FAMILY[:NETLINK_PROTOCOL] (vsock, AF_PACKET, 40, netlink:audit)");
  } else {
    path = policy::normalizePath(here, target_text);
    req.path = path;
  }
  policy::Explanation e = engine.explain(req);
  std::string shown = req.op == policy::Operation::Connect || req.op == policy::Operation::Socket
                          ? target_text
                          : path;
  return report(o, args, *loaded, e, op, shown, profile, nullptr, nullptr, "");
}

}  // namespace

ExplainOutput explainQuery(const ExplainQuery& query) {
  ExplainOutput o;
  if (query.words.empty()) {
    o.exit_code = fail(o, "expected OPERATION TARGET, EVENT_ID or -");
    return o;
  }
  o.exit_code = runExplain(query, o);
  return o;
}

}  // namespace sv::supervisor
