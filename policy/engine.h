// Engine: the single source of truth for every decision.
//
// Every backend (seccomp user-notify, Landlock, cgroup BPF, BPF LSM) either
// asks the engine or enforces a kernel image compiled from the same policy,
// and tests hold the two to the same verdicts. decide() is on the hot path of
// user-notify: it does not allocate and returns references into the policy.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "policy/cidr.h"
#include "policy/model.h"

namespace sv::policy {

// Socket: socket(2)/socketpair(2) of an address family (seccomp user-notify
// sends only the families the filter does not allow itself; `explain`).
enum class Operation { Read, Write, Exec, Connect, Socket };

// Addresses learnt for the host names of network.allow entries (from the DNS
// answers the supervised tree received, or resolved at session start). The
// supervisor owns one and passes it in each connect Request; lookups do not
// allocate.
class ResolvedHosts {
 public:
  void add(std::string_view host, const Ip6& ip);
  bool contains(std::string_view host, const Ip6& ip) const;
  void clear() { entries_.clear(); }

 private:
  std::vector<std::pair<std::string, Ip6>> entries_;  // host lower-cased
};
enum class Verdict { Allow, Deny };

struct Request {
  Operation op = Operation::Read;
  std::string_view path;     // absolute, lexically normal (Read/Write/Exec)
  std::string_view profile;  // "" = base policy
  // Connect: the destination. `host` is set when the caller knows the name
  // (explain, or an address learnt from a DNS answer for that name).
  Ip6 ip{};
  uint16_t port = 0;
  std::string_view host;
  const ResolvedHosts* resolved_hosts = nullptr;  // optional, see ResolvedHosts
  // Socket: socket(family, type, protocol) as the caller passed them.
  int family = 0;
  int sock_type = 0;
  int protocol = 0;
};

// Whether a rule id is one of the default rules below ("default-deny-read", ...):
// nothing explicit in the policy matched.
inline bool isDefaultRule(std::string_view rule_id) { return rule_id.starts_with("default-"); }

struct Decision {
  Verdict verdict = Verdict::Deny;
  std::string_view rule_id;  // never empty: default rules have ids too
  std::string_view reason;
  std::string_view name;  // audit rule.name: "filesystem.denyWrite .env", "network.mode none"
  // In audit mode the verdict is still the policy's; callers allow and
  // record "would-deny" — unless `binding`: a self-protection denial holds in
  // every mode (docs/policy.md, "Self-protection").
  bool binding = false;

  // Denied by a rule the policy names (a deny glob, self-protection), not by
  // the default for paths no rule covers.
  bool deniedByRule() const { return verdict == Verdict::Deny && !isDefaultRule(rule_id); }
};

// What audit events show of a rule besides its id (see RuleText lookups below).
struct RuleText {
  std::string_view name;
  std::string_view reason;
};

// One step of the reasoning behind a decision, for `explain`.
struct Step {
  std::string rule_id;
  std::string description;  // "denyWrite glob /ws/**/.env matches"
  bool matched = false;
};

struct Explanation {
  Decision decision;
  std::vector<Step> chain;
  std::string suggestion;  // smallest policy edit that would flip a deny
};

class Engine {
 public:
  explicit Engine(std::shared_ptr<const Policy> policy);

  Decision decide(const Request& request) const;
  Explanation explain(const Request& request) const;

  // exec.switch: the profile a process enters when it executes `path` while
  // in `current` ("" = base). Returns `current` when no switch rule matches.
  std::string_view profileAfterExec(std::string_view current, std::string_view path) const;

  // The name and reason of the rule with this id (base, profiles, built-in
  // system paths and the default rules), for backends that learn only the id
  // of the rule that decided (the cgroup and LSM programs). Empty views for an
  // id the policy does not have. Does not allocate.
  RuleText ruleText(std::string_view rule_id) const;

  const Policy& policy() const { return *policy_; }

 private:
  std::shared_ptr<const Policy> policy_;
  // Rule id → text, sorted by id, views into *policy_ (built once).
  std::vector<std::pair<std::string_view, RuleText>> texts_;
};

// Well-known ids of the default rules (when nothing explicit matches).
inline constexpr std::string_view kDefaultDenyRead = "default-deny-read";
inline constexpr std::string_view kDefaultDenyWrite = "default-deny-write";
inline constexpr std::string_view kDefaultDenyExec = "default-deny-exec";
inline constexpr std::string_view kDefaultDenyConnect = "default-deny-connect";
inline constexpr std::string_view kAllowAll = "network-all";
inline constexpr std::string_view kAllowLoopback = "network-loopback";
inline constexpr std::string_view kDenyNetworkNone = "network-none";
// A pathname unix socket outside every writable root (cgroup-bpf: its
// address; bpf-lsm: the peer socket's bound path).
inline constexpr std::string_view kDefaultDenyUnixSocket = "unix-socket-outside-writable-roots";
// Socket families (docs/network.md, "Address families").
inline constexpr std::string_view kAllowSocketFamily = "network-socket-family";
inline constexpr std::string_view kDefaultDenySocketFamily = "default-deny-socket-family";

// Whether a socket of this family and protocol is allowed outside mode all.
bool socketFamilyAllowed(int family, int protocol);
// "unix", "inet6", "vsock", "netlink", ... ("family-N" for one without a name).
std::string socketFamilyName(int family);
// "route", "audit", ... for AF_NETLINK protocols ("N" otherwise).
std::string netlinkProtocolName(int protocol);
// The other way, for `explain socket`: "vsock", "AF_VSOCK" or "40"; netlink
// protocols "audit", "NETLINK_AUDIT" or "9". -1 when unknown.
int socketFamilyFromName(std::string_view name);
int netlinkProtocolFromName(std::string_view name);

std::string_view toString(Verdict v);
std::string_view toString(Operation op);

}  // namespace sv::policy
