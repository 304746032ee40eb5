// policySummary(): see policy_summary.h.
#include "supervisor/cli/policy_summary.h"

#include <map>
#include <set>
#include <vector>

namespace sv::supervisor {
namespace {

// Past this, a list says "and N more": the summary is read by an agent at
// every start, and `explain` answers for any one path.
constexpr size_t kMaxShown = 8;

// A pattern as a person wrote it; a derived rule's absolute path with ~ for
// the home, the workspace's own paths relative to it.
std::string shown(const policy::Policy& p, const std::string& path) {
  if (path == p.workspace) return "the workspace";
  if (!p.workspace.empty() && path.starts_with(p.workspace + "/"))
    return "./" + path.substr(p.workspace.size() + 1);
  if (!p.home.empty() && path.starts_with(p.home + "/")) return "~" + path.substr(p.home.size());
  if (path == ".") return "the workspace";
  return path;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < kMaxShown; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > kMaxShown) out += " and " + std::to_string(items.size() - kMaxShown) + " more";
  return out;
}

struct Patterns {
  std::vector<std::string> written, derived;  // derived: found in the home at launch
};

Patterns split(const policy::Policy& p, const std::vector<policy::PathRule>& rules) {
  Patterns out;
  std::set<std::string> seen;
  for (const auto& r : rules) {
    std::string s = shown(p, r.pattern);
    if (seen.insert(s).second) (r.origin.derived() ? out.derived : out.written).push_back(s);
  }
  return out;
}

std::string counted(const std::vector<std::string>& derived, const std::string& label) {
  return std::to_string(derived.size()) + " " + label + (derived.size() == 1 ? "" : "s") +
         " found in the home (" + joined(derived) + ")";
}

// The patterns of `rules` as written, then the derived ones counted as `label`.
std::string patterns(const policy::Policy& p, const std::vector<policy::PathRule>& rules,
                     const std::string& label = "path") {
  Patterns s = split(p, rules);
  std::string out = joined(s.written);
  if (!s.derived.empty()) out += (out.empty() ? "" : "; ") + counted(s.derived, label);
  return out;
}

// "a; b; c" of the non-empty parts.
std::string clauses(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& part : parts)
    if (!part.empty()) out += (out.empty() ? "" : "; ") + part;
  return out;
}

std::string networkText(policy::NetworkMode mode, const std::vector<policy::NetRule>& allow) {
  std::vector<std::string> to;
  for (const auto& r : allow) to.push_back(r.spec);
  switch (mode) {
    case policy::NetworkMode::None:
      return "none (no connection at all, not even localhost)";
    case policy::NetworkMode::Localhost:
      return "localhost only" + (to.empty() ? std::string() : ", and " + joined(to));
    case policy::NetworkMode::Allowlist:
      return to.empty() ? "allowlist, empty: no connection" : "only to " + joined(to);
    case policy::NetworkMode::All:
      return "any destination";
  }
  return "?";
}

// What a profile changes, in one clause each.
std::string profileText(const policy::Policy& p, const policy::Profile& prof) {
  std::vector<std::string> parts;
  const auto& fs = prof.filesystem;
  if (!fs.writable_roots.empty()) parts.push_back("may write " + patterns(p, fs.writable_roots));
  if (!fs.readable_roots.empty()) parts.push_back("may read " + patterns(p, fs.readable_roots));
  if (!fs.deny_write.empty()) parts.push_back("may not write " + patterns(p, fs.deny_write));
  if (!fs.deny_read.empty()) parts.push_back("may not read " + patterns(p, fs.deny_read));
  if (!prof.exec.allow.empty()) parts.push_back("may run only " + patterns(p, prof.exec.allow));
  if (!prof.exec.deny.empty()) parts.push_back("may not run " + patterns(p, prof.exec.deny));
  if (prof.network.mode || !prof.network.allow.empty())
    parts.push_back("network " +
                    networkText(prof.network.mode.value_or(*p.network.mode), prof.network.allow));
  const std::string out = clauses(parts);
  return out.empty() ? "the base rules" : out;
}

}  // namespace

std::string policySummary(const policy::Policy& p) {
  const bool audit = p.mode == policy::Mode::Audit;
  const auto& fs = p.filesystem;
  std::string out;
  auto line = [&](const std::string& label, const std::string& text) {
    if (!text.empty()) out += label + text + "\n";
  };
  line("policy: ", p.name +
                       (audit ? " (audit mode: nothing is refused, each refusal is only "
                                "recorded as would-deny)"
                              : " (enforced)") +
                       ", workspace " + p.workspace);
  line("may write: ", patterns(p, fs.writable_roots, "cache") +
                          (p.system_write.empty() ? "" : "; the usual devices (/dev/null, ...)"));
  line("may read: ", "what it may write; " + patterns(p, fs.readable_roots, "toolchain") +
                         (p.system_read.empty() ? "" : "; the system (/usr, /etc, ...)"));
  // The secrets found in the home are denied both ways: said once.
  const Patterns deny_write = split(p, fs.deny_write), deny_read = split(p, fs.deny_read);
  const bool same_secrets = deny_write.derived == deny_read.derived;
  const std::string refused =
      clauses({deny_write.written.empty() ? "" : "writing " + joined(deny_write.written),
               deny_read.written.empty() ? "" : "reading " + joined(deny_read.written),
               same_secrets && !deny_read.derived.empty()
                   ? "reading or writing " + counted(deny_read.derived, "secret")
                   : "",
               !same_secrets && !deny_write.derived.empty()
                   ? "writing " + counted(deny_write.derived, "secret")
                   : "",
               !same_secrets && !deny_read.derived.empty()
                   ? "reading " + counted(deny_read.derived, "secret")
                   : "",
               p.self_protect.empty() ? ""
                                      : "supervise's own files (its policy, audit trail, binary, "
                                        "socket)"});
  line("refused whatever the roots say: ", refused);
  std::string exec =
      p.exec.allow.empty() ? "anything it may read" : "only " + patterns(p, p.exec.allow);
  if (!p.exec.deny.empty()) exec += ", except " + patterns(p, p.exec.deny);
  line("may run: ", exec);
  line("network: ", networkText(*p.network.mode, p.network.allow));
  // Which commands switch into each profile: the base policy's exec.switch
  // and those of other profiles (a profile entered from another).
  std::map<std::string, std::vector<std::string>> entered_by;
  auto collect = [&](const std::vector<policy::SwitchRule>& switches, const std::string& from) {
    for (const auto& sw : switches)
      entered_by[sw.profile].push_back(shown(p, sw.pattern) +
                                       (from.empty() ? "" : " (inside " + from + ")"));
  };
  collect(p.exec.switches, "");
  for (const auto& [name, prof] : p.profiles) collect(prof.exec.switches, name);
  for (const auto& [name, prof] : p.profiles) {
    auto by = entered_by.find(name);
    line("profile " + name + ": ",
         (by == entered_by.end() ? std::string("entered only with `supervise exec --profile`")
                                 : "entered by running " + joined(by->second)) +
             "; " + profileText(p, prof));
  }
  const auto& env = p.environment;
  line("environment: ", env.mode == policy::EnvMode::Allowlist
                            ? std::string("only allowed variables reach the command")
                        : env.secrets || !env.deny.empty()
                            ? std::string("credential-looking variables (tokens, keys, "
                                          "passwords) are removed")
                            : std::string());
  out +=
      "A refused operation fails with a permission error and supervise prints "
      "\"supervise: denied <what> (rule <id>: <reason>) [event <id>]\" on stderr; "
      "`supervise explain write PATH` (or read, exec, connect HOST:PORT) tells in advance, "
      "`supervise explain --audit-file TRAIL <event id>` afterwards.\n";
  return out;
}

}  // namespace sv::supervisor
