// compile(): a Policy to the plain-value images each kernel backend loads.
//
// Deterministic (sorted, deduplicated) so golden tests can pin the output.
// The images are what the kernel can enforce by itself; the Engine remains
// the authority for everything they cannot express.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "policy/cidr.h"
#include "policy/model.h"

namespace sv::policy {

// Landlock: per-root access. The floor under user-notify: even a raced
// decision cannot reach outside these.
struct LandlockRule {
  std::string path;  // absolute directory or file
  bool read = false;
  bool write = false;
  bool exec = false;
  bool operator==(const LandlockRule&) const = default;
};

struct LandlockPlan {
  std::vector<LandlockRule> rules;  // sorted by path
  // false: another backend (the BPF LSM) decides file access, and Landlock
  // keeps its scopes only; `rules` are then ignored.
  bool paths = true;
  bool scope_abstract_unix = true;  // LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (ABI 6)
  bool scope_signal = true;         // LANDLOCK_SCOPE_SIGNAL (ABI 6)
};

// What seccomp must send to user space; everything else is decided in the filter.
struct SeccompPlan {
  bool notify_write_opens = true;  // O_WRONLY/O_RDWR/O_CREAT/O_TRUNC opens and path-mutating syscalls
  bool notify_read_opens = false;  // only when some deny-read glob exists
  bool notify_exec = true;         // exec rules, switches or audit of execs
  // rename/renameat/renameat2, link/linkat, utime(s)/utimensat and the xattr
  // calls alone, for a backend that decides the other path-changing syscalls
  // itself (BPF LSM): a directory move must be judged for every protected
  // path below it, which no LSM hook can walk. Implied by notify_write_opens.
  bool notify_links_renames_and_attrs = false;
  bool allow_user_namespaces = false;
  // socket()/socketpair() of a family outside policy::kAllowedSocketFamilies
  // (netlink: outside kAllowedNetlinkProtocols) goes to user-notify, which
  // refuses it with an audit event; the allowed ones stay in the kernel. Set
  // when some plan's network.mode is not all.
  bool notify_socket_families = false;
};

// The address families network.mode none, localhost and allowlist let a
// process create sockets of (mode all: every family). The seccomp filter
// lets exactly these through in the kernel (tracer/seccomp/seccomp_filter.cpp)
// and sends every other to user-notify, where decide() refuses it; inet
// sockets are judged further by the cgroup programs (mode none refuses
// them at creation). AF_NETLINK only with the protocols below.
inline constexpr int kAllowedSocketFamilies[] = {1 /* AF_UNIX */, 2 /* AF_INET */,
                                                 10 /* AF_INET6 */, 16 /* AF_NETLINK */};
inline constexpr int kAllowedNetlinkProtocols[] = {0 /* NETLINK_ROUTE */};
inline constexpr int kFamilyNetlink = 16;

// cgroup socket programs: the allowlist as CIDR + port ranges, per profile.
struct NetEntry {
  Cidr cidr;
  uint16_t port_lo = 0, port_hi = 65535;
  std::string rule_id;
  bool operator==(const NetEntry& o) const {
    return cidr.addr == o.cidr.addr && cidr.prefix_len == o.cidr.prefix_len &&
           port_lo == o.port_lo && port_hi == o.port_hi && rule_id == o.rule_id;
  }
};

// A domain entry ("github.com:22"): enforced through the addresses the name
// resolves to (supervisor/net/dns_allow.h), never by name in the kernel.
struct NetHost {
  std::string name;  // lower case, as validated by the loader
  uint16_t port_lo = 0, port_hi = 65535;
  std::string rule_id;
  auto operator<=>(const NetHost&) const = default;
  // "name:port" or "name:lo-hi", as written in toText().
  std::string toString() const;
};

// A directory under which pathname unix sockets may be connected to (a
// writable root: connecting needs write permission on the socket file).
struct NetUnixRoot {
  std::string path;  // absolute, no trailing '/' (except "/")
  std::string rule_id;
  auto operator<=>(const NetUnixRoot&) const = default;
};

struct NetworkPlan {
  NetworkMode mode = NetworkMode::Localhost;
  std::vector<NetEntry> entries;  // literal CIDR entries (loopback added for Localhost)
  std::vector<NetHost> hosts;     // domain entries, sorted; resolved and observed at run time
  // Base plan only: the writable roots of the base policy and every profile
  // (the same union as the Landlock floor), sorted by path.
  std::vector<NetUnixRoot> unix_roots;
};

struct CompiledPolicy {
  LandlockPlan landlock;
  SeccompPlan seccomp;
  NetworkPlan network;  // base profile
  // Per profile: the profile's own entries first, then the base ones, with the
  // profile's mode (or the base mode when the profile sets none).
  std::map<std::string, NetworkPlan> profile_network;
};

// Landlock cannot express globs or deny-inside-allow, and a Landlock domain
// can only be narrowed, never widened, on exec. So the Landlock plan is the
// union over the base policy and every profile (the floor no process of the
// tree can leave); deny globs and per-profile narrowing are left to the
// seccomp user-notify path and the Engine. See docs/policy.md.
CompiledPolicy compile(const Policy& policy);

// The loosest network plan of the base policy and every profile: each
// destination any of them allows, under the widest mode. For a second line
// of enforcement behind a judge that knows each process's profile (the BPF
// LSM), where a per-profile plan cannot be applied.
NetworkPlan networkFloor(const CompiledPolicy& compiled);

// A stable, line-oriented rendering for golden tests and `explain --compiled`.
std::string toText(const CompiledPolicy& compiled);

}  // namespace sv::policy
