// compile(): Policy → Landlock rules, seccomp plan, network plan (see compile.h).
//
// Landlock only knows "this access right beneath this directory", so every
// root becomes one rule on its literal path, and globs (deny rules, exec.allow
// patterns) contribute their literal leading directory at most. The output is
// sorted and deduplicated so golden tests can pin it.
#include "policy/compile.h"

#include <algorithm>
#include <sstream>
#include <tuple>

#include "policy/engine.h"
#include "policy/path.h"
#include "policy/presets.h"

namespace sv::policy {
namespace {

using RuleMap = std::map<std::string, LandlockRule>;

void addRule(RuleMap& rules, const std::string& path, bool read, bool write, bool exec) {
  LandlockRule& r = rules[path];
  r.path = path;
  r.read |= read;
  r.write |= write;
  r.exec |= exec;
}

void addRoots(RuleMap& rules, const std::vector<PathRule>& roots, bool write, bool exec) {
  for (const auto& r : roots) addRule(rules, r.glob.literalPrefix(), true, write, exec);
}

const char* modeName(NetworkMode m) {
  switch (m) {
    case NetworkMode::None: return "none";
    case NetworkMode::Localhost: return "localhost";
    case NetworkMode::Allowlist: return "allowlist";
    case NetworkMode::All: return "all";
  }
  return "?";
}

void addNetRules(NetworkPlan& plan, const std::vector<NetRule>& rules) {
  for (const auto& r : rules) {
    if (r.cidr) {
      plan.entries.push_back({*r.cidr, r.port_lo, r.port_hi, r.id});
    } else {
      plan.hosts.push_back({r.host, r.port_lo, r.port_hi, r.id});
    }
  }
}

void finishNet(NetworkPlan& plan) {
  if (plan.mode == NetworkMode::None || plan.mode == NetworkMode::All) {
    plan.entries.clear();  // the mode decides alone; entries would never fire
    plan.hosts.clear();
  }
  if (plan.mode == NetworkMode::Localhost) {
    std::string err;
    plan.entries.push_back({*Cidr::parse("127.0.0.0/8", &err), 0, 65535, std::string(kAllowLoopback)});
    plan.entries.push_back({*Cidr::parse("::1/128", &err), 0, 65535, std::string(kAllowLoopback)});
  }
  auto key = [](const NetEntry& e) {
    return std::tie(e.cidr.addr, e.cidr.prefix_len, e.port_lo, e.port_hi, e.rule_id);
  };
  std::sort(plan.entries.begin(), plan.entries.end(),
            [&](const NetEntry& a, const NetEntry& b) { return key(a) < key(b); });
  plan.entries.erase(std::unique(plan.entries.begin(), plan.entries.end()), plan.entries.end());
  std::sort(plan.hosts.begin(), plan.hosts.end());
  plan.hosts.erase(std::unique(plan.hosts.begin(), plan.hosts.end()), plan.hosts.end());
}

}  // namespace

std::string NetHost::toString() const {
  std::string ports = port_lo == port_hi ? std::to_string(port_lo)
                                         : std::to_string(port_lo) + "-" + std::to_string(port_hi);
  return name + ":" + ports;
}

CompiledPolicy compile(const Policy& policy) {
  CompiledPolicy out;

  // exec: when no exec.allow list exists anywhere, whatever is readable may be
  // executed, so readable roots carry EXECUTE. Otherwise only the literal
  // directories of the exec.allow patterns do (a superset of the globs: the
  // Engine narrows it on the user-notify exec path).
  bool narrowed = !policy.exec.allow.empty();
  RuleMap rules;
  addRoots(rules, policy.filesystem.readable_roots, false, !narrowed);
  addRoots(rules, policy.filesystem.writable_roots, true, !narrowed);
  for (const auto& r : policy.system_read) {
    const std::string& path = r.glob.literalPrefix();
    addRule(rules, path, true, false, !narrowed && !isNoExecSystemPath(path));
  }
  addRoots(rules, policy.system_write, true, false);
  for (const auto& r : policy.exec.allow) addRule(rules, r.glob.literalPrefix(), false, false, true);
  for (const auto& [_, prof] : policy.profiles) {
    addRoots(rules, prof.filesystem.readable_roots, false, !narrowed);
    addRoots(rules, prof.filesystem.writable_roots, true, !narrowed);
    for (const auto& r : prof.exec.allow) addRule(rules, r.glob.literalPrefix(), false, false, true);
  }
  for (const auto& [_, r] : rules) out.landlock.rules.push_back(r);

  // Pathname unix sockets: where the tree may write, it may connect.
  std::map<std::string, std::string> unix_roots;
  auto addUnix = [&](const std::vector<PathRule>& roots) {
    for (const auto& r : roots) unix_roots.emplace(r.glob.literalPrefix(), r.id);
  };
  addUnix(policy.filesystem.writable_roots);
  addUnix(policy.system_write);
  for (const auto& [_, prof] : policy.profiles) addUnix(prof.filesystem.writable_roots);

  // A denyRead rule needs read opens in user space only where Landlock would
  // let the read through: its area meets a readable root. One outside every
  // root (~/.ssh when $HOME is not readable) is already the kernel's denial,
  // and one on a secret that did not exist at load has nothing to read.
  auto meetsARoot = [&](const PathRule& d) {
    if (d.absent_at_load) return false;
    const std::string& p = d.glob.literalPrefix();
    for (const auto& [path, r] : rules)
      if (r.read && (isUnder(p, path) || isUnder(path, p))) return true;
    return false;
  };
  auto anyMeets = [&](const std::vector<PathRule>& list) {
    return std::any_of(list.begin(), list.end(), meetsARoot);
  };
  bool deny_read = anyMeets(policy.filesystem.deny_read) || anyMeets(policy.self_protect.deny_read);
  for (const auto& [_, prof] : policy.profiles)
    deny_read = deny_read || anyMeets(prof.filesystem.deny_read);
  out.seccomp.notify_write_opens = true;
  // audit.level all is the full file-access trail: every read open goes to
  // user space too (decided there and recorded), at a notify round trip per
  // open (docs/audit-events.md). Otherwise only a denyRead glob needs them.
  out.seccomp.notify_read_opens = deny_read || policy.audit.level == AuditLevel::All;
  // Every exec is decided in user space, whatever the exec rules: even
  // audit.level deny records every exec decision (docs/audit-events.md).
  // With execs notified, the process tracker's exec re-check runs too.
  out.seccomp.notify_exec = true;
  out.seccomp.allow_user_namespaces = false;
  // Address families: refused unless every plan is network.mode all (a
  // profile in mode all is then let through by the user-notify handler).
  bool restricted = policy.network.mode.value_or(NetworkMode::Localhost) != NetworkMode::All;
  for (const auto& [_, prof] : policy.profiles)
    restricted = restricted || prof.network.mode.value_or(
                                   policy.network.mode.value_or(NetworkMode::Localhost)) !=
                                   NetworkMode::All;
  out.seccomp.notify_socket_families = restricted;

  out.network.mode = policy.network.mode.value_or(NetworkMode::Localhost);
  addNetRules(out.network, policy.network.allow);
  finishNet(out.network);
  for (const auto& [path, id] : unix_roots) out.network.unix_roots.push_back({path, id});
  for (const auto& [name, prof] : policy.profiles) {
    NetworkPlan plan;
    plan.mode = prof.network.mode.value_or(out.network.mode);
    addNetRules(plan, prof.network.allow);
    addNetRules(plan, policy.network.allow);
    finishNet(plan);
    out.profile_network[name] = std::move(plan);
  }
  return out;
}

std::string toText(const CompiledPolicy& c) {
  std::ostringstream o;
  o << "landlock scope_abstract_unix=" << c.landlock.scope_abstract_unix
    << " scope_signal=" << c.landlock.scope_signal << "\n";
  for (const auto& r : c.landlock.rules) {
    o << "  " << (r.read ? 'r' : '-') << (r.write ? 'w' : '-') << (r.exec ? 'x' : '-') << " "
      << r.path << "\n";
  }
  o << "seccomp notify_write_opens=" << c.seccomp.notify_write_opens
    << " notify_read_opens=" << c.seccomp.notify_read_opens
    << " notify_exec=" << c.seccomp.notify_exec
    << " allow_user_namespaces=" << c.seccomp.allow_user_namespaces
    << " notify_socket_families=" << c.seccomp.notify_socket_families << "\n";
  auto net = [&](const std::string& label, const NetworkPlan& n) {
    o << label << " mode=" << modeName(n.mode) << "\n";
    for (const auto& e : n.entries) {
      o << "  " << e.cidr.toString() << " ports " << e.port_lo << "-" << e.port_hi << " "
        << e.rule_id << "\n";
    }
    for (const auto& h : n.hosts) o << "  host " << h.toString() << "\n";
  };
  net("network", c.network);
  for (const auto& [name, n] : c.profile_network) net("network[" + name + "]", n);
  return o.str();
}

}  // namespace sv::policy
