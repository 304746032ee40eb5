// Engine: decisions and explanations (see engine.h).
//
// decide() and explain() share one evaluation routine parameterised by a
// tracer: decide() passes none, so the hot path only walks vectors and
// compares string_views; explain() records every rule it considers.
#include "policy/engine.h"

#include "policy/home_rules.h"
#include "policy/compile.h"

#include <algorithm>

#include "policy/presets.h"

namespace sv::policy {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

constexpr std::string_view kReasonDefaultRead = "not under any readable root";
constexpr std::string_view kReasonDefaultWrite = "not under any writable root";
constexpr std::string_view kReasonDefaultExec = "not allowed by exec rules";
constexpr std::string_view kReasonDefaultConnect = "destination not in network.allow";
constexpr std::string_view kReasonNone = "network.mode is none";
constexpr std::string_view kReasonAll = "network.mode is all";
constexpr std::string_view kReasonLoopback = "loopback is allowed in network.mode localhost";
constexpr std::string_view kReasonDefaultUnix =
    "pathname unix sockets may be reached only under a writable root";
// rule.name of the rules that are no entry of the policy.
constexpr std::string_view kNameDefaultRead = "default: read outside every readable root";
constexpr std::string_view kNameDefaultWrite = "default: write outside every writable root";
constexpr std::string_view kNameDefaultExec = "default: exec not allowed by the exec rules";
constexpr std::string_view kNameDefaultConnect = "default: destination not in network.allow";
constexpr std::string_view kNameNone = "network.mode none";
constexpr std::string_view kNameAll = "network.mode all";
constexpr std::string_view kNameLoopback = "network.mode localhost (loopback)";
constexpr std::string_view kNameDefaultUnix = "default: unix socket outside every writable root";
constexpr std::string_view kReasonSocketFamily =
    "unix, inet, inet6 and netlink route sockets are what ordinary tools need";
constexpr std::string_view kReasonDenySocketFamily =
    "only unix, inet, inet6 and netlink route sockets may be created";
constexpr std::string_view kNameSocketFamily = "network: unix, inet, inet6, netlink route sockets";
constexpr std::string_view kNameDenyFamilyNone =
    "default: address family not allowed by network.mode none";
constexpr std::string_view kNameDenyFamilyLocalhost =
    "default: address family not allowed by network.mode localhost";
constexpr std::string_view kNameDenyFamilyAllowlist =
    "default: address family not allowed by network.mode allowlist";

// Collects explain steps; a null tracer records nothing (decide()).
struct Tracer {
  std::vector<Step>* steps = nullptr;
  // Takes views so that decide() (steps == nullptr) never builds a string.
  void add(std::string_view id, std::string_view desc, bool matched) {
    if (steps) steps->push_back({std::string(id), std::string(desc), matched});
  }
  bool on() const { return steps != nullptr; }
};

const char* scopeName(const Profile* prof) { return prof ? "profile" : "base"; }

const PathRule* firstMatch(const std::vector<PathRule>& rules, std::string_view path,
                           Tracer& t, const char* what, const Profile* prof) {
  for (const auto& r : rules) {
    bool m = r.glob.matches(path);
    if (t.on()) {
      t.add(r.id,
            std::string(scopeName(prof)) + (prof ? " " + prof->name : "") + " " + what + " " +
                r.glob.pattern() + (m ? " matches" : " does not match"),
            m);
    }
    if (m) return &r;
  }
  return nullptr;
}

Decision fromRule(Verdict v, const PathRule& r) { return {v, r.id, r.reason, r.name}; }
Decision selfProtection(const PathRule& r) {
  Decision d = fromRule(Verdict::Deny, r);
  d.binding = true;
  return d;
}

const Profile* findProfile(const Policy& p, std::string_view name) {
  if (name.empty()) return nullptr;
  auto it = p.profiles.find(std::string(name));  // explain/test path only allocates here
  return it == p.profiles.end() ? nullptr : &it->second;
}

// Allocation-free lookup for the hot path.
const Profile* findProfileNoAlloc(const Policy& p, std::string_view name) {
  if (name.empty()) return nullptr;
  for (const auto& [k, v] : p.profiles) {
    if (k == name) return &v;
  }
  return nullptr;
}

// Self-protection comes first, before every profile: no layer can lift it.
const PathRule* selfProtected(const std::vector<PathRule>& rules, std::string_view path,
                              Tracer& t) {
  for (const auto& r : rules) {
    bool m = r.glob.matches(path);
    // Only a match is a step worth showing: the list is the same for every
    // request (the binary, the pins...), and explain prints every step.
    if (m && t.on()) t.add(r.id, "self-protection " + r.pattern + " matches", true);
    if (m) return &r;
  }
  return nullptr;
}

Decision decideRead(const Policy& p, const Profile* prof, std::string_view path, Tracer& t) {
  if (auto* r = selfProtected(p.self_protect.deny_read, path, t)) return selfProtection(*r);
  if (prof) {
    if (auto* r = firstMatch(prof->filesystem.deny_read, path, t, "denyRead", prof))
      return fromRule(Verdict::Deny, *r);
    if (auto* r = firstMatch(prof->filesystem.readable_roots, path, t, "readableRoot", prof))
      return fromRule(Verdict::Allow, *r);
    if (auto* r = firstMatch(prof->filesystem.writable_roots, path, t, "writableRoot", prof))
      return fromRule(Verdict::Allow, *r);
  }
  if (auto* r = firstMatch(p.filesystem.deny_read, path, t, "denyRead", nullptr))
    return fromRule(Verdict::Deny, *r);
  if (auto* r = firstMatch(p.filesystem.readable_roots, path, t, "readableRoot", nullptr))
    return fromRule(Verdict::Allow, *r);
  if (auto* r = firstMatch(p.filesystem.writable_roots, path, t, "writableRoot", nullptr))
    return fromRule(Verdict::Allow, *r);
  if (auto* r = firstMatch(p.system_read, path, t, "system read path", nullptr))
    return fromRule(Verdict::Allow, *r);
  t.add(kDefaultDenyRead, "no rule allows reading", true);
  return {Verdict::Deny, kDefaultDenyRead, kReasonDefaultRead, kNameDefaultRead};
}

Decision decideWrite(const Policy& p, const Profile* prof, std::string_view path, Tracer& t) {
  if (auto* r = selfProtected(p.self_protect.deny_write, path, t)) return selfProtection(*r);
  if (prof) {
    if (auto* r = firstMatch(prof->filesystem.deny_write, path, t, "denyWrite", prof))
      return fromRule(Verdict::Deny, *r);
    if (auto* r = firstMatch(prof->filesystem.writable_roots, path, t, "writableRoot", prof))
      return fromRule(Verdict::Allow, *r);
  }
  if (auto* r = firstMatch(p.filesystem.deny_write, path, t, "denyWrite", nullptr))
    return fromRule(Verdict::Deny, *r);
  if (auto* r = firstMatch(p.filesystem.writable_roots, path, t, "writableRoot", nullptr))
    return fromRule(Verdict::Allow, *r);
  if (auto* r = firstMatch(p.system_write, path, t, "system write path", nullptr))
    return fromRule(Verdict::Allow, *r);
  t.add(kDefaultDenyWrite, "no rule allows writing", true);
  return {Verdict::Deny, kDefaultDenyWrite, kReasonDefaultWrite, kNameDefaultWrite};
}

Decision decideExec(const Policy& p, const Profile* prof, std::string_view path, Tracer& t) {
  if (prof) {
    if (auto* r = firstMatch(prof->exec.deny, path, t, "exec.deny", prof))
      return fromRule(Verdict::Deny, *r);
    if (auto* r = firstMatch(prof->exec.allow, path, t, "exec.allow", prof))
      return fromRule(Verdict::Allow, *r);
  }
  if (auto* r = firstMatch(p.exec.deny, path, t, "exec.deny", nullptr))
    return fromRule(Verdict::Deny, *r);
  if (!p.exec.allow.empty()) {
    if (auto* r = firstMatch(p.exec.allow, path, t, "exec.allow", nullptr))
      return fromRule(Verdict::Allow, *r);
    t.add(kDefaultDenyExec, "exec.allow is set and nothing in it matches", true);
    return {Verdict::Deny, kDefaultDenyExec, kReasonDefaultExec, kNameDefaultExec};
  }
  t.add("", "exec.allow is empty: anything readable may be executed", false);
  Decision read = decideRead(p, prof, path, t);
  if (read.verdict == Verdict::Allow && !(read.rule_id.starts_with("system-read:") &&
                                          isNoExecSystemPath(path))) {
    return read;
  }
  t.add(kDefaultDenyExec, "not readable, so not executable", true);
  return {Verdict::Deny, kDefaultDenyExec, kReasonDefaultExec, kNameDefaultExec};
}

bool isLoopback(const Ip6& ip) {
  static const Ip6 kV6Loopback = [] {
    Ip6 a{};
    a[15] = 1;
    return a;
  }();
  if (ip == kV6Loopback) return true;
  // ::ffff:127.0.0.0/104
  for (int i = 0; i < 10; ++i) {
    if (ip[i] != 0) return false;
  }
  return ip[10] == 0xff && ip[11] == 0xff && ip[12] == 127;
}

const NetRule* netMatch(const std::vector<NetRule>& rules, const Request& req, Tracer& t,
                        const Profile* prof) {
  for (const auto& r : rules) {
    bool port_ok = req.port >= r.port_lo && req.port <= r.port_hi;
    bool addr_ok = false;
    if (r.cidr) {
      addr_ok = r.cidr->contains(req.ip);
    } else {
      addr_ok = (!req.host.empty() && iequals(req.host, r.host)) ||
                (req.resolved_hosts && req.resolved_hosts->contains(r.host, req.ip));
    }
    bool m = port_ok && addr_ok;
    if (t.on()) {
      t.add(r.id,
            std::string(scopeName(prof)) + (prof ? " " + prof->name : "") + " network.allow " +
                r.spec + (m ? " matches" : addr_ok ? " (port outside range)" : " does not match"),
            m);
    }
    if (m) return &r;
  }
  return nullptr;
}

// The network mode of the caller's plan: the profile's, else the base's.
NetworkMode planMode(const Policy& p, const Profile* prof) {
  if (prof && prof->network.mode) return *prof->network.mode;
  return p.network.mode.value_or(NetworkMode::Localhost);
}

Decision allowAll(Tracer& t) {
  t.add(kAllowAll, "network.mode is all", true);
  return {Verdict::Allow, kAllowAll, kReasonAll, kNameAll};
}

Decision decideConnect(const Policy& p, const Profile* prof, const Request& req, Tracer& t) {
  const NetworkMode mode = planMode(p, prof);
  if (mode == NetworkMode::None) {
    t.add(kDenyNetworkNone, "network.mode is none", true);
    return {Verdict::Deny, kDenyNetworkNone, kReasonNone, kNameNone};
  }
  if (mode == NetworkMode::All) return allowAll(t);
  if (prof) {
    if (auto* r = netMatch(prof->network.allow, req, t, prof))
      return {Verdict::Allow, r->id, r->reason, r->name};
  }
  if (auto* r = netMatch(p.network.allow, req, t, nullptr))
    return {Verdict::Allow, r->id, r->reason, r->name};
  if (mode == NetworkMode::Localhost) {
    bool lo = isLoopback(req.ip);
    t.add(kAllowLoopback, lo ? "destination is loopback" : "destination is not loopback", lo);
    if (lo) return {Verdict::Allow, kAllowLoopback, kReasonLoopback, kNameLoopback};
  }
  t.add(kDefaultDenyConnect, "no network rule allows this destination", true);
  return {Verdict::Deny, kDefaultDenyConnect, kReasonDefaultConnect, kNameDefaultConnect};
}

// socket(2): mode all allows every family; the other modes the families of
// kAllowedSocketFamilies (netlink: kAllowedNetlinkProtocols). Mode none
// refuses inet sockets too, as the cgroup sock_create program does.
Decision decideSocket(const Policy& p, const Profile* prof, const Request& req, Tracer& t) {
  const NetworkMode mode = planMode(p, prof);
  if (mode == NetworkMode::All) return allowAll(t);
  const bool inet = req.family == 2 || req.family == 10;
  if (mode == NetworkMode::None && inet) {
    t.add(kDenyNetworkNone, "network.mode is none: no inet socket", true);
    return {Verdict::Deny, kDenyNetworkNone, kReasonNone, kNameNone};
  }
  const std::string what = socketFamilyName(req.family) +
                           (req.family == kFamilyNetlink
                                ? " protocol " + netlinkProtocolName(req.protocol)
                                : std::string());
  if (socketFamilyAllowed(req.family, req.protocol)) {
    t.add(kAllowSocketFamily, what + " sockets are allowed", true);
    return {Verdict::Allow, kAllowSocketFamily, kReasonSocketFamily, kNameSocketFamily};
  }
  t.add(kDefaultDenySocketFamily, what + " is not an allowed address family", true);
  const std::string_view name = mode == NetworkMode::None        ? kNameDenyFamilyNone
                                : mode == NetworkMode::Localhost ? kNameDenyFamilyLocalhost
                                                                 : kNameDenyFamilyAllowlist;
  return {Verdict::Deny, kDefaultDenySocketFamily, kReasonDenySocketFamily, name};
}

Decision evaluate(const Policy& p, const Profile* prof, const Request& req, Tracer& t) {
  switch (req.op) {
    case Operation::Read: return decideRead(p, prof, req.path, t);
    case Operation::Write: return decideWrite(p, prof, req.path, t);
    case Operation::Exec: return decideExec(p, prof, req.path, t);
    case Operation::Connect: return decideConnect(p, prof, req, t);
    case Operation::Socket: return decideSocket(p, prof, req, t);
  }
  return {Verdict::Deny, kDefaultDenyRead, kReasonDefaultRead, kNameDefaultRead};
}

std::string quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

const PathRule* findPathRule(const Policy& p, std::string_view id) {
  auto scan = [&](const std::vector<PathRule>& v) -> const PathRule* {
    for (const auto& r : v)
      if (r.id == id) return &r;
    return nullptr;
  };
  auto scanFs = [&](const FilesystemRules& fs, const ExecRules& ex) -> const PathRule* {
    for (auto* v : {&fs.deny_read, &fs.deny_write, &ex.deny})
      if (auto* r = scan(*v)) return r;
    return nullptr;
  };
  if (auto* r = scanFs(p.filesystem, p.exec)) return r;
  for (const auto& [_, prof] : p.profiles)
    if (auto* r = scanFs(prof.filesystem, prof.exec)) return r;
  return nullptr;
}

std::string suggestionFor(const Policy& p, const Request& req, const Decision& d,
                          std::string_view profile) {
  if (d.verdict == Verdict::Allow) return "";
  std::string scope = profile.empty() ? "" : "profiles." + std::string(profile) + ".";
  // A program (or a file of one) is readable with its whole toolchain: a
  // shim alone runs more of it (home_rules.h).
  auto readable = [&] {
    const std::string root = toolchainRootFor(p.home, req.path);
    return "add " + quote(root) + " to " + scope + "filesystem.readableRoots" +
           (root == req.path ? "" : " (the directory that holds the whole toolchain)");
  };
  if (d.rule_id == kDefaultDenyRead) return readable();
  if (d.rule_id == kDefaultDenyWrite) return "add " + quote(req.path) + " to " + scope + "filesystem.writableRoots";
  if (d.rule_id == kDefaultDenyExec) {
    if (!p.exec.allow.empty()) return "add " + quote(req.path) + " to " + scope + "exec.allow";
    return readable();
  }
  std::string dest = !req.host.empty() ? std::string(req.host) : ipToString(req.ip);
  if (dest.find(':') != std::string::npos) dest = "[" + dest + "]";
  dest += ":" + std::to_string(req.port);
  if (d.rule_id == kDefaultDenySocketFamily)
    return "only network.mode \"all\" allows this address family (set " + scope + "network.mode)";
  if (d.rule_id == kDenyNetworkNone && req.op == Operation::Socket)
    return "set " + scope + "network.mode to \"localhost\" or \"allowlist\"";
  if (d.rule_id == kDenyNetworkNone) {
    return "set " + scope + "network.mode to \"allowlist\" and add " + quote(dest) + " to " + scope +
           "network.allow";
  }
  if (d.rule_id == kDefaultDenyConnect) return "add " + quote(dest) + " to " + scope + "network.allow";
  if (d.rule_id.starts_with("self-protect:")) {
    return "self-protection: supervise's own files are out of the tree's reach, whatever the "
           "policy says; no policy edit lifts it (put the file elsewhere, e.g. audit files "
           "outside the writable roots)";
  }
  if (auto* r = findPathRule(p, d.rule_id)) {
    std::string where = r->origin.file;
    if (r->origin.line) where += ":" + std::to_string(r->origin.line);
    return "rule " + quote(r->id) + " (" + where + ") denies this; remove it or narrow its pattern " +
           quote(r->pattern) + (profile.empty() ? ", or allow it in a profile" : "");
  }
  return "rule " + quote(d.rule_id) + " denies this";
}

}  // namespace

std::string_view toString(Verdict v) { return v == Verdict::Allow ? "allow" : "deny"; }

std::string_view toString(Operation op) {
  switch (op) {
    case Operation::Read: return "read";
    case Operation::Write: return "write";
    case Operation::Exec: return "exec";
    case Operation::Connect: return "connect";
    case Operation::Socket: return "socket";
  }
  return "?";
}

bool socketFamilyAllowed(int family, int protocol) {
  for (int f : kAllowedSocketFamilies) {
    if (f != family) continue;
    if (family != kFamilyNetlink) return true;
    for (int proto : kAllowedNetlinkProtocols)
      if (proto == protocol) return true;
    return false;
  }
  return false;
}

namespace {
// "40" → 40; "vsock"/"AF_VSOCK" → the index whose name() matches.
template <typename Name>
int numberOrName(std::string_view text, std::string_view prefix, Name name) {
  if (text.empty()) return -1;
  if (std::all_of(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
    return text.size() < 6 ? std::stoi(std::string(text)) : -1;
  std::string lower;
  for (char ch : text) lower += static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  if (lower.starts_with(prefix)) lower.erase(0, prefix.size());
  for (int i = 0; i < 64; ++i)
    if (name(i) == lower) return i;
  return -1;
}
}  // namespace

int socketFamilyFromName(std::string_view name) {
  return numberOrName(name, "af_", socketFamilyName);
}

int netlinkProtocolFromName(std::string_view name) {
  return numberOrName(name, "netlink_", netlinkProtocolName);
}

std::string socketFamilyName(int family) {
  // Linux AF_* numbers (include/linux/socket.h), lower case without "AF_".
  static constexpr const char* kNames[] = {
      "unspec", "unix",   "inet",  "ax25",     "ipx",   "appletalk", "netrom", "bridge",
      "atmpvc", "x25",    "inet6", "rose",     "decnet", "netbeui",  "security", "key",
      "netlink", "packet", "ash",  "econet",   "atmsvc", "rds",      "sna",    "irda",
      "pppox",  "wanpipe", "llc",  "ib",       "mpls",  "can",       "tipc",   "bluetooth",
      "iucv",   "rxrpc",  "isdn",  "phonet",   "ieee802154", "caif", "alg",    "nfc",
      "vsock",  "kcm",    "qipcrtr", "smc",    "xdp",   "mctp"};
  if (family >= 0 && static_cast<size_t>(family) < std::size(kNames)) return kNames[family];
  return "family-" + std::to_string(family);
}

std::string netlinkProtocolName(int protocol) {
  static constexpr const char* kNames[] = {
      "route", "unused", "usersock", "firewall", "sock_diag", "nflog", "xfrm", "selinux",
      "iscsi", "audit", "fib_lookup", "connector", "netfilter", "ip6_fw", "dnrtmsg",
      "kobject_uevent", "generic", "dm", "scsitransport", "ecryptfs", "rdma", "crypto", "smc"};
  if (protocol >= 0 && static_cast<size_t>(protocol) < std::size(kNames)) return kNames[protocol];
  return std::to_string(protocol);
}

void ResolvedHosts::add(std::string_view host, const Ip6& ip) {
  std::string h(host);
  for (char& c : h) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& e : entries_)
    if (e.first == h && e.second == ip) return;
  entries_.emplace_back(std::move(h), ip);
}

bool ResolvedHosts::contains(std::string_view host, const Ip6& ip) const {
  for (const auto& e : entries_) {
    if (e.second == ip && iequals(e.first, host)) return true;
  }
  return false;
}

Engine::Engine(std::shared_ptr<const Policy> policy) : policy_(std::move(policy)) {
  auto add = [this](const auto& rules) {
    for (const auto& r : rules) texts_.push_back({r.id, {r.name, r.reason}});
  };
  auto addScope = [&](const FilesystemRules& fs, const ExecRules& ex, const NetworkRules& net) {
    for (auto* v : {&fs.deny_read, &fs.deny_write, &fs.readable_roots, &fs.writable_roots,
                    &ex.deny, &ex.allow})
      add(*v);
    add(ex.switches);
    add(net.allow);
  };
  const Policy& p = *policy_;
  addScope(p.filesystem, p.exec, p.network);
  for (const auto& [_, prof] : p.profiles) addScope(prof.filesystem, prof.exec, prof.network);
  add(p.system_read);
  add(p.system_write);
  add(p.self_protect.deny_write);
  add(p.self_protect.deny_read);
  for (const auto& [id, text] : std::initializer_list<std::pair<std::string_view, RuleText>>{
           {kDefaultDenyRead, {kNameDefaultRead, kReasonDefaultRead}},
           {kDefaultDenyWrite, {kNameDefaultWrite, kReasonDefaultWrite}},
           {kDefaultDenyExec, {kNameDefaultExec, kReasonDefaultExec}},
           {kDefaultDenyConnect, {kNameDefaultConnect, kReasonDefaultConnect}},
           {kDefaultDenyUnixSocket, {kNameDefaultUnix, kReasonDefaultUnix}},
           {kDenyNetworkNone, {kNameNone, kReasonNone}},
           {kAllowAll, {kNameAll, kReasonAll}},
           {kAllowLoopback, {kNameLoopback, kReasonLoopback}}})
    texts_.push_back({id, text});
  // Ids are unique per rule (validation); an id listed twice (the same entry
  // from a preset and a file) keeps its first text.
  std::stable_sort(texts_.begin(), texts_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
}

RuleText Engine::ruleText(std::string_view rule_id) const {
  auto it = std::lower_bound(texts_.begin(), texts_.end(), rule_id,
                             [](const auto& e, std::string_view id) { return e.first < id; });
  return it != texts_.end() && it->first == rule_id ? it->second : RuleText{};
}

Decision Engine::decide(const Request& request) const {
  Tracer none;
  return evaluate(*policy_, findProfileNoAlloc(*policy_, request.profile), request, none);
}

Explanation Engine::explain(const Request& request) const {
  Explanation e;
  Tracer t{&e.chain};
  const Profile* prof = findProfile(*policy_, request.profile);
  if (!request.profile.empty() && !prof) {
    t.add("", "unknown profile " + quote(request.profile) + ": using the base policy", false);
  }
  e.decision = evaluate(*policy_, prof, request, t);
  e.suggestion = suggestionFor(*policy_, request, e.decision, prof ? request.profile : "");
  return e;
}

std::string_view Engine::profileAfterExec(std::string_view current, std::string_view path) const {
  if (const Profile* prof = findProfileNoAlloc(*policy_, current)) {
    for (const auto& s : prof->exec.switches)
      if (s.glob.matches(path)) return s.profile;
  }
  for (const auto& s : policy_->exec.switches)
    if (s.glob.matches(path)) return s.profile;
  return current;
}

}  // namespace sv::policy
