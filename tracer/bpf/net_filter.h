// NetFilter: the in-kernel network policy of one session (cgroup socket hooks).
//
// Uses bpf/progs/net.bpf.c, loaded once per boot and shared by the host's
// sessions (net_filter.cpp, bpf_shared.h): claims a session slot, fills the
// allowlist LPM trie from a compiled policy::NetworkPlan, links connect4/6,
// sendmsg4/6 and sock_create to the session's cgroup, and hands every
// decision the programs report to the caller as a NetEvent. The kernel
// enforces on its own; the events are for the audit trail. Destroying the
// NetFilter detaches its links (owned here, never pinned) and removes the
// session's entries.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "policy/cidr.h"
#include "policy/compile.h"

namespace sv::tracer {

// One decision of the network programs (see bpf/shared/net_abi.h).
struct NetEvent {
  uint8_t decision = 0;  // kNetDeny / kNetAllow
  uint32_t rule_index = 0;
  uint32_t pid = 0, tgid = 0;  // init pid namespace; 0 when the kernel lacks the helper
  uint8_t family = 0, protocol = 0, op = 0;
  uint16_t port = 0;   // host byte order
  policy::Ip6 addr{};  // IPv4-mapped IPv6 form
  uint8_t sock_type = 0;
  uint8_t reason = 0;  // kNetReason*
  uint8_t flags = 0;   // kNetFlagUnspec
  uint8_t plan = 0;    // the plan that decided: 0 base, else a profile's (NetFilter::planProfile)
  uint64_t ktime_ns = 0;
  std::string unix_path;  // kNetOpUnix*: the socket path as the tree passed it
};

// Mirrors of the ABI constants, so callers need not include the C header.
inline constexpr uint8_t kNetDeny = 0, kNetAllow = 1;
inline constexpr uint8_t kNetOpConnect = 1, kNetOpSendmsg = 2, kNetOpSockCreate = 3,
                         kNetOpUnixConnect = 4, kNetOpUnixSendmsg = 5;
inline constexpr uint8_t kNetReasonRule = 0, kNetReasonNoMatch = 1, kNetReasonModeAll = 2,
                         kNetReasonModeNone = 3, kNetReasonRawSocket = 4,
                         kNetReasonDnsProxy = 5, kNetReasonUnixPath = 6,
                         kNetReasonUnixUnreadable = 7;
inline constexpr uint8_t kNetFlagUnspec = 0x1;  // 0.0.0.0 / :: judged as loopback
inline constexpr uint8_t kNetFlagAudit = 0x2;   // deny reported, not enforced (audit_only)
inline constexpr uint32_t kNetRuleNone = 0xffffffffu;
inline constexpr uint32_t kNetPlanBase = 0;  // NetFilter::planIndex("")

struct NetFilterOptions {
  bool deny_events_only = false;   // report only denials...
  bool report_connects = false;    // ...and every connect all the same (audit.level deny)
  bool allow_raw_sockets = false;  // SOCK_RAW and ICMP ping sockets
  bool audit_only = false;         // report would-deny decisions, enforce nothing
  // Domain entries: attach recvmsg4/6 and getpeername4/6 too and let
  // redirectDns() send the tree's UDP to resolvers through a proxy.
  bool dns_proxy = false;
  // Judge connect/sendmsg to pathname unix sockets against plan.unix_roots
  // where the kernel has the cgroup unix hooks (6.7+); see unixPathsEnforced().
  bool unix_paths = true;
};

class NetFilter {
 public:
  // Loads, fills the allowlist and attaches to cgroup_fd (a cgroup2 directory).
  // On failure nothing stays attached; the error carries libbpf's log tail.
  static Result<NetFilter> load(const policy::NetworkPlan& plan, int cgroup_fd,
                                bool deny_events_only);
  static Result<NetFilter> load(const policy::NetworkPlan& plan, int cgroup_fd,
                                const NetFilterOptions& options);
  // The base plan and per-profile plans (the profiles with network rules).
  // A process is judged by its profile's plan once its cgroup is bound to
  // that profile (bindCgroup); any other process by the base plan. Needs
  // bpf_get_current_cgroup_id in cgroup socket programs (probed; ENOTSUP).
  static Result<NetFilter> load(const policy::NetworkPlan& plan,
                                const std::map<std::string, policy::NetworkPlan>& profiles,
                                int cgroup_fd, const NetFilterOptions& options);

  NetFilter(NetFilter&&) noexcept;
  NetFilter& operator=(NetFilter&&) noexcept;
  ~NetFilter();

  // The ring buffer's epoll fd: readable when events wait (for the libuv loop).
  int eventFd() const;
  // Drains every pending event without blocking; returns how many, or -errno.
  // An exception thrown by on_event is carried past libbpf's C callback and
  // rethrown here after the drain stops.
  int consume(const std::function<void(const NetEvent&)>& on_event);
  // The policy rule id behind an event's rule_index; "" for kNetRuleNone.
  const std::string& ruleIdAt(uint32_t rule_index) const;
  // Registers a rule id (e.g. a domain rule) for use with allow(); returns its
  // index, the existing one when already known.
  uint32_t addRuleId(const std::string& rule_id);
  // Allows ip:[port_lo, port_hi] at runtime (resolved DNS answers) in one
  // plan (planIndex(); kNetPlanBase for the base), attributed to rule_index.
  // The other plans are untouched: a name one profile lists opens nothing
  // for the base or another profile. Takes effect for the next connect;
  // updates are per entry, so the programs never see a half-written value.
  // EINVAL for an unknown plan or a plan in mode none; E2BIG when an address
  // block would need more than SV_NET_MAX_PORT_RANGES (16) port ranges.
  Status allow(uint32_t plan, const policy::Ip6& ip, uint16_t port_lo, uint16_t port_hi,
               uint32_t rule_index);
  // Withdraws what allow() added to `plan` (a DNS answer's TTL ran out).
  // Connections already made stay up; the next connect is judged without it.
  Status revoke(uint32_t plan, const policy::Ip6& ip, uint16_t port_lo, uint16_t port_hi,
                uint32_t rule_index);
  // UDP from the tree to resolver:port goes to proxy:proxy_port instead
  // (needs NetFilterOptions::dns_proxy), and replies from the proxy look to
  // the tree as if the resolver sent them. The event of each redirected
  // connect/sendmsg is an allow with reason kNetReasonDnsProxy and rule_index.
  // proxy must be ::ffff:127.0.0.1 for an IPv4 resolver, ::1 for IPv6.
  // Only the processes of plans with domain entries (NetworkPlan::hosts) are
  // redirected; the others reach the resolver as if there were no proxy, and
  // UDP straight to a proxy socket is refused for every plan (deny, reason
  // kNetReasonDnsProxy), so the proxy is no DNS path for a plan without hosts.
  Status redirectDns(const policy::Ip6& resolver, uint16_t port, const policy::Ip6& proxy,
                     uint16_t proxy_port, uint32_t rule_index);
  // Processes whose cgroup (v2 id, cgroupId()) is `cgroup_id` are judged by
  // `profile`'s plan from their next socket call on. EINVAL for a profile
  // the load got no plan for.
  Status bindCgroup(uint64_t cgroup_id, const std::string& profile);
  // Whether `profile` has a plan of its own (was given to load()).
  bool hasPlan(const std::string& profile) const;
  // The plan index of `profile` ("" = the base plan, kNetPlanBase), as
  // allow() takes it and NetEvent::plan reports it; EINVAL for a profile the
  // load got no plan for.
  Result<uint32_t> planIndex(const std::string& profile) const;
  // The profile of a plan index (NetEvent::plan); "" for the base plan.
  const std::string& planProfile(uint8_t plan) const;
  // Whether pathname unix sockets are judged (the kernel has the hooks and
  // the options asked for it); when false, `unixPathsDetail()` says why.
  bool unixPathsEnforced() const;
  const std::string& unixPathsDetail() const;
  // Decisions lost because the ring buffer was full.
  uint64_t droppedEvents() const;
  // libbpf warnings printed while loading (kept out of stderr).
  const std::string& libbpfLog() const;
  // This session's slot in the load the host's sessions share, and the
  // supervisor pid a slot's claim names (0: free; for tests).
  uint32_t slot() const;
  uint32_t slotOwner(uint32_t slot) const;

 private:
  struct State;
  explicit NetFilter(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

// The allowlist exactly as the LPM trie holds it, computed without the kernel
// (golden tests): blocks masked to their prefix, each with its own port ranges
// plus those of every less specific block containing it (LPM returns one
// match only), sorted and deduplicated. E2BIG past SV_NET_MAX_PORT_RANGES.
struct NetPortRange {
  uint16_t lo = 0, hi = 0;
  uint32_t rule_index = 0;
  bool operator==(const NetPortRange&) const = default;
};
struct NetAllowEntry {
  policy::Ip6 addr{};
  int prefix_len = 0;
  std::vector<NetPortRange> ranges;
};
struct NetAllowImage {
  std::vector<std::string> rule_ids;   // rule_index → policy rule id
  std::vector<NetAllowEntry> entries;  // sorted by (addr, prefix_len)
};
Result<NetAllowImage> buildNetAllowImage(const policy::NetworkPlan& plan);

}  // namespace sv::tracer
