// NetFilter implementation: the shared load and a session's slot in it
// (bpf_shared.h), the allowlist image, the ring buffer.
//
// The programs are loaded once per boot and pinned under
// <bpffs>/supervise/net-v<ABI>-<object hash>/ with their maps; a session
// claims a slot, writes its plans at global indexes (slot * SV_NET_MAX_PLANS
// + plan) and registers its cgroups, then links the shared programs to its
// cgroup. A session nested in another one (its cgroup already runs the shared
// programs) loads a private copy instead, so each session's policy applies.
//
// Ordering matters for safety: everything a session's programs read is
// written before its links exist, so a supervised process never meets a
// half-filled map; at the end the links go before the entries.
#include "tracer/bpf/net_filter.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "shared/net_abi.h"
#include "sv_net.object_id.h"
#include "sv_net.skel.h"
#include "tracer/bpf/bpf_keepers.h"
#include "tracer/bpf/bpf_probes.h"
#include "tracer/bpf/bpf_shared.h"
#include "tracer/bpf/libbpf_log.h"

namespace sv::tracer {
namespace {

static_assert(sizeof(sv_net_event) == 56, "event ABI");
static_assert(sizeof(sv_net_unix_event) == 168, "unix event ABI");
static_assert(kNetOpUnixConnect == SV_NET_OP_UNIX_CONNECT &&
                  kNetOpUnixSendmsg == SV_NET_OP_UNIX_SENDMSG &&
                  kNetReasonUnixPath == SV_NET_REASON_UNIX_PATH &&
                  kNetReasonUnixUnreadable == SV_NET_REASON_UNIX_UNREADABLE,
              "C++ mirrors of the unix ABI constants");

// enum bpf_attach_type values of kernel 6.7 (the build host's uapi headers
// may predate them; the values are ABI and never change).
constexpr bpf_attach_type kAttachUnixConnect = static_cast<bpf_attach_type>(49);
constexpr bpf_attach_type kAttachUnixSendmsg = static_cast<bpf_attach_type>(50);
static_assert(sizeof(sv_net_lpm_key) == 24, "key ABI");
static_assert(sizeof(sv_net_allow_value) == 8 + 8 * SV_NET_MAX_PORT_RANGES, "value ABI");
static_assert(static_cast<int>(policy::NetworkMode::None) == SV_NET_MODE_NONE &&
                  static_cast<int>(policy::NetworkMode::Localhost) == SV_NET_MODE_LOCALHOST &&
                  static_cast<int>(policy::NetworkMode::Allowlist) == SV_NET_MODE_ALLOWLIST &&
                  static_cast<int>(policy::NetworkMode::All) == SV_NET_MODE_ALL,
              "NetworkMode values are the BPF mode values");
static_assert(kNetRuleNone == SV_NET_RULE_NONE && kNetAllow == SV_NET_ALLOW &&
                  kNetDeny == SV_NET_DENY && kNetOpSockCreate == SV_NET_OP_SOCK_CREATE &&
                  kNetReasonRawSocket == SV_NET_REASON_RAW_SOCKET &&
                  kNetReasonDnsProxy == SV_NET_REASON_DNS_PROXY &&
                  kNetFlagUnspec == SV_NET_EVENT_F_UNSPEC && kNetFlagAudit == SV_NET_EVENT_F_AUDIT,
              "C++ mirrors of the ABI constants");

struct SkelDeleter {
  void operator()(sv_net* s) const { sv_net__destroy(s); }
};
using Skeleton = std::unique_ptr<sv_net, SkelDeleter>;
using Link = std::unique_ptr<bpf_link, BpfLinkDeleter>;
using Ring = std::unique_ptr<ring_buffer, RingBufferDeleter>;

// The last lines of the libbpf log, for an Error context.
std::string logTail(const std::string& log) {
  constexpr size_t kMax = 2000;
  if (log.empty()) return "";
  std::string tail = log.size() > kMax ? "..." + log.substr(log.size() - kMax) : log;
  while (!tail.empty() && tail.back() == '\n') tail.pop_back();
  return "\nlibbpf: " + tail;
}

// libbpf 1.x returns NULL with errno set; older ones an ERR_PTR.
template <typename T>
int ptrError(T* p) {
  long err = libbpf_get_error(p);
  return err ? static_cast<int>(-err) : (errno ? errno : EINVAL);
}

bool prefixContains(const policy::Ip6& net, int prefix_len, const policy::Ip6& ip) {
  int full = prefix_len / 8, rest = prefix_len % 8;
  if (std::memcmp(net.data(), ip.data(), full) != 0) return false;
  if (rest == 0) return true;
  uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (net[full] & mask) == (ip[full] & mask);
}

policy::Ip6 maskTo(policy::Ip6 ip, int prefix_len) {
  for (int i = 0; i < 16; ++i) {
    int bits = std::clamp(prefix_len - i * 8, 0, 8);
    ip[i] &= static_cast<uint8_t>(bits == 8 ? 0xff : (0xff << (8 - bits)) & 0xff);
  }
  return ip;
}

bool isV4Mapped(const policy::Ip6& ip) {
  static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(ip.data(), kPrefix, 12) == 0;
}

struct Range {
  uint16_t lo, hi;
  uint32_t rule_index;
  auto operator<=>(const Range&) const = default;
};

using EntryKey = std::pair<policy::Ip6, int>;  // (masked address, prefix_len)

// The value the trie holds for `key`: its own ranges plus those of every
// less specific entry that contains it, because LPM returns one match only.
Result<sv_net_allow_value> foldedValue(const std::map<EntryKey, std::vector<Range>>& entries,
                                       const EntryKey& key) {
  std::vector<Range> all;
  for (const auto& [k, ranges] : entries) {
    if (k.second <= key.second && prefixContains(k.first, k.second, key.first))
      all.insert(all.end(), ranges.begin(), ranges.end());
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  if (all.size() > SV_NET_MAX_PORT_RANGES) {
    return Error{E2BIG, "network allowlist: more than " + std::to_string(SV_NET_MAX_PORT_RANGES) +
                            " port ranges apply to one address block"};
  }
  sv_net_allow_value v{};
  v.count = static_cast<uint32_t>(all.size());
  for (size_t i = 0; i < all.size(); ++i) v.ranges[i] = {all[i].lo, all[i].hi, all[i].rule_index};
  return v;
}

// Plan entries → rule id table and per-block port ranges (unfolded). The
// table is shared by every plan of a load (index_of: its reverse), so a rule
// index names one rule id whichever plan decided.
Status collectEntries(const policy::NetworkPlan& plan, std::vector<std::string>& rule_ids,
                      std::map<std::string, uint32_t>& index_of,
                      std::map<EntryKey, std::vector<Range>>& entries) {
  for (const auto& e : plan.entries) {
    if (e.cidr.prefix_len < 0 || e.cidr.prefix_len > 128 || e.port_lo > e.port_hi)
      return Error{EINVAL, "network allowlist: bad entry " + e.rule_id};
    auto [it, fresh] = index_of.emplace(e.rule_id, static_cast<uint32_t>(rule_ids.size()));
    if (fresh) rule_ids.push_back(e.rule_id);
    EntryKey key{maskTo(e.cidr.addr, e.cidr.prefix_len), e.cidr.prefix_len};
    auto& ranges = entries[key];
    Range r{e.port_lo, e.port_hi, it->second};
    if (std::find(ranges.begin(), ranges.end(), r) == ranges.end()) ranges.push_back(r);
  }
  for (const auto& [key, ranges] : entries) {
    auto value = foldedValue(entries, key);
    if (!value.ok()) return value.error();
  }
  return {};
}

// ---- the shared load ------------------------------------------------------------

// The maps, in pin order.
enum MapIndex : size_t {
  kSessions, kCgroupPlans, kPlanModes, kDnsPlans, kDnsServers,
  kDnsProxies, kUnixRoots, kAllow, kRings, kStats, kMapCount
};
// The programs, in pin order; the unix ones exist where the kernel has the
// hooks (6.7+), so their pins are optional.
enum ProgIndex : size_t {
  kSockCreate, kConnect4, kConnect6, kSendmsg4, kSendmsg6, kRecvmsg4, kRecvmsg6,
  kGetpeername4, kGetpeername6, kConnectUnix, kSendmsgUnix, kProgCount
};
constexpr size_t kFirstUnixProg = kConnectUnix;
constexpr const char* kPins[] = {
    "sessions", "cgroup_plans", "plan_modes", "dns_plans",    "dns_servers", "dns_proxies",
    "unix_roots", "allow",      "rings",      "stats",        "sock_create", "connect4",
    "connect6", "sendmsg4",     "sendmsg6",   "recvmsg4",     "recvmsg6",    "getpeername4",
    "getpeername6", "connect_unix", "sendmsg_unix"};
constexpr size_t kMaps = kMapCount;  // where the programs start in kPins
static_assert(std::size(kPins) == kMaps + kProgCount);
constexpr size_t kRequiredPins = kMaps + kFirstUnixProg;
constexpr bpf_attach_type kAttachTypes[kProgCount] = {
    BPF_CGROUP_INET_SOCK_CREATE, BPF_CGROUP_INET4_CONNECT,  BPF_CGROUP_INET6_CONNECT,
    BPF_CGROUP_UDP4_SENDMSG,     BPF_CGROUP_UDP6_SENDMSG,   BPF_CGROUP_UDP4_RECVMSG,
    BPF_CGROUP_UDP6_RECVMSG,     BPF_CGROUP_INET4_GETPEERNAME, BPF_CGROUP_INET6_GETPEERNAME,
    kAttachUnixConnect,          kAttachUnixSendmsg};

// A load's maps and programs as open fds (from the pins or from the load).
struct SharedNet {
  std::vector<UniqueFd> fds;  // kPins order; the unix programs' may be empty

  int map(MapIndex i) const { return fds[i].get(); }
  int prog(ProgIndex i) const { return fds[kMaps + i].get(); }
  bool has(ProgIndex i) const { return fds[kMaps + i].get() >= 0; }
};

std::optional<SharedNet> openShared(const SharedPins& pins) {
  auto required = pins.open(std::span(kPins, kRequiredPins));
  if (!required) return std::nullopt;
  SharedNet net{std::move(*required)};
  for (size_t i = kRequiredPins; i < std::size(kPins); ++i) {
    auto unix_prog = pins.open(std::span(kPins + i, 1));
    net.fds.push_back(unix_prog ? std::move(unix_prog->front()) : UniqueFd());
  }
  return net;
}

// Whether the shared programs already run for processes of `cgroup_fd`:
// supervise runs inside another session.
bool runsShared(int cgroup_fd, int connect4_prog) {
  bpf_prog_info info{};
  __u32 len = sizeof info;
  if (bpf_obj_get_info_by_fd(connect4_prog, &info, &len) != 0) return false;
  __u32 ids[64];
  __u32 count = std::size(ids);
  if (bpf_prog_query(cgroup_fd, BPF_CGROUP_INET4_CONNECT, BPF_F_QUERY_EFFECTIVE, nullptr, ids,
                     &count) != 0)
    return false;
  return std::find(ids, ids + count, info.id) != ids + count;
}

// Loads the programs (libbpf log in `log`); with a pin directory, pins them
// and their maps there for the boot.
Result<std::pair<Skeleton, SharedNet>> loadShared(const SharedPins& pins, std::string& log,
                                                  std::string& unix_detail) {
  ScopedLibbpfLog log_scope(&log);
  Skeleton skel(sv_net__open());
  if (!skel) return Error{ptrError<sv_net>(nullptr), "open BPF object sv_net" + logTail(log)};
  // Every program finds its session by cgroup.
  for (auto type : {BPF_PROG_TYPE_CGROUP_SOCK_ADDR, BPF_PROG_TYPE_CGROUP_SOCK}) {
    if (libbpf_probe_bpf_helper(type, BPF_FUNC_get_current_cgroup_id, nullptr) <= 0)
      return Error{ENOTSUP, "network: this kernel has no bpf_get_current_cgroup_id in cgroup "
                            "socket programs"};
  }
  auto* ro = skel->rodata;
  ro->sv_net_ancestor_walk =
      libbpf_probe_bpf_helper(BPF_PROG_TYPE_CGROUP_SOCK_ADDR,
                              BPF_FUNC_get_current_ancestor_cgroup_id, nullptr) > 0 &&
      libbpf_probe_bpf_helper(BPF_PROG_TYPE_CGROUP_SOCK, BPF_FUNC_get_current_ancestor_cgroup_id,
                              nullptr) > 0;
  // The helper's availability differs by program type and kernel; the
  // programs skip the call when told it is missing (pid reported as 0).
  ro->sv_net_pid_in_sock_addr = libbpf_probe_bpf_helper(BPF_PROG_TYPE_CGROUP_SOCK_ADDR,
                                                        BPF_FUNC_get_current_pid_tgid, nullptr) > 0;
  ro->sv_net_pid_in_sock = libbpf_probe_bpf_helper(BPF_PROG_TYPE_CGROUP_SOCK,
                                                   BPF_FUNC_get_current_pid_tgid, nullptr) > 0;
  const bool unix_hooks = probeCgroupUnixHooks(&unix_detail);
  bpf_program__set_autoload(skel->progs.connect_unix, unix_hooks);
  bpf_program__set_autoload(skel->progs.sendmsg_unix, unix_hooks);
  bpf_program__set_expected_attach_type(skel->progs.connect_unix, kAttachUnixConnect);
  bpf_program__set_expected_attach_type(skel->progs.sendmsg_unix, kAttachUnixSendmsg);
  if (int err = sv_net__load(skel.get()); err != 0)
    return Error{-err, "load BPF programs sv_net" + logTail(log)};

  bpf_map* maps[kMapCount] = {skel->maps.sv_net_sessions,    skel->maps.sv_net_cgroup_plans,
                              skel->maps.sv_net_plan_modes,  skel->maps.sv_net_dns_plans,
                              skel->maps.sv_net_dns_servers, skel->maps.sv_net_dns_proxies,
                              skel->maps.sv_net_unix_roots,  skel->maps.sv_net_allow,
                              skel->maps.sv_net_rings,       skel->maps.sv_net_stats};
  bpf_program* progs[kProgCount] = {
      skel->progs.sock_create,  skel->progs.connect4,     skel->progs.connect6,
      skel->progs.sendmsg4,     skel->progs.sendmsg6,     skel->progs.recvmsg4,
      skel->progs.recvmsg6,     skel->progs.getpeername4, skel->progs.getpeername6,
      skel->progs.connect_unix, skel->progs.sendmsg_unix};
  SharedNet net;
  std::vector<int> pin_fds;
  for (bpf_map* m : maps) pin_fds.push_back(bpf_map__fd(m));
  for (size_t i = 0; i < kProgCount; ++i)
    pin_fds.push_back(i >= kFirstUnixProg && !unix_hooks ? -1 : bpf_program__fd(progs[i]));
  for (int fd : pin_fds) net.fds.emplace_back(fd < 0 ? -1 : ::fcntl(fd, F_DUPFD_CLOEXEC, 3));
  if (pins.pinned())
    SV_TRY(pins.pin(std::span(pin_fds.data(), unix_hooks ? pin_fds.size() : kRequiredPins),
                    kPins));
  return std::make_pair(std::move(skel), std::move(net));
}

}  // namespace

struct NetFilter::State {
  std::optional<SharedPins> pins;  // the shared load's, or none (a private load)
  Skeleton skel;                   // when this process loaded the programs
  SharedNet net;
  uint32_t slot = 0;
  uint64_t cgroup_id = 0;  // the session cgroup's
  bool claimed = false;
  UniqueFd ring_fd;  // this slot's ring buffer
  Ring ring;
  std::vector<UniqueFd> links;  // this session's links to its cgroup
  // What this session wrote beyond its plans, removed at release.
  std::vector<uint64_t> cgroup_keys;
  std::vector<sv_net_dns_key> dns_server_keys, dns_proxy_keys;
  std::vector<sv_net_unix_key> unix_keys;
  std::vector<std::string> rule_ids;
  std::map<std::string, uint32_t> rule_index_of;  // rule_ids' reverse
  // Per plan (index 0 base, then the profiles by name): the entries as
  // given, before folding, its mode and its profile.
  std::vector<std::map<EntryKey, std::vector<Range>>> entries;
  std::vector<policy::NetworkMode> modes;
  std::vector<std::string> plan_profiles;
  std::vector<bool> dns_plans;  // the plan has domain entries: its DNS goes through the proxy
  std::string log;
  bool unix_paths = false;
  bool dns_proxy = false;  // the recvmsg/getpeername programs are attached
  std::string unix_detail;
  const std::function<void(const NetEvent&)>* on_event = nullptr;
  std::exception_ptr pending;

  ~State() {
    links.clear();  // detach first: nothing runs on half-removed entries
    ring.reset();
    release();
  }

  // The index of a plan in the shared maps.
  uint32_t globalPlan(uint32_t plan) const { return slot * SV_NET_MAX_PLANS + plan; }

  // Takes the first free slot (or one whose supervisor is gone, after
  // removing what it left) with `flags`. Called with the lock held.
  Status claim(int cgroup_fd, uint32_t flags) {
    struct stat st;
    if (::fstat(cgroup_fd, &st) != 0) return errnoError("fstat the session cgroup");
    cgroup_id = st.st_ino;  // a cgroup2 directory's inode number is the cgroup id
    sv_net_session entry{};
    for (slot = 0; slot < SV_NET_MAX_SESSIONS; ++slot) {
      if (bpf_map_lookup_elem(net.map(kSessions), &slot, &entry) != 0)
        return errnoError("sv_net_sessions: read");
      if (entry.cgroup_id == 0 || !claimOwnerAlive(entry.owner_pid, entry.owner_start)) break;
    }
    if (slot == SV_NET_MAX_SESSIONS)
      return Error{EBUSY, "network: " + std::to_string(SV_NET_MAX_SESSIONS) +
                              " sessions already run on this host"};
    if (entry.cgroup_id != 0) purgeSlot();  // a supervisor killed with SIGKILL
    const sv_net_session cleared{};
    if (bpf_map_update_elem(net.map(kSessions), &slot, &cleared, BPF_ANY) != 0)
      return errnoError("sv_net_sessions: clear");
    claimed = true;  // from here on, release() undoes what follows
    SV_TRY(zeroPerCpu(net.map(kStats), slot * SV_NET_STAT_MAX, SV_NET_STAT_MAX));
    auto ring_made = slotRingBuffer(net.map(kRings), slot, SV_NET_RING_BYTES, "sv_net_ring");
    if (!ring_made) return ring_made.error();
    ring_fd = std::move(*ring_made);
    entry = {};
    entry.cgroup_id = cgroup_id;
    entry.flags = flags;
    entry.owner_pid = static_cast<uint32_t>(::getpid());
    entry.owner_start = processStartTime(::getpid());
    if (bpf_map_update_elem(net.map(kSessions), &slot, &entry, BPF_ANY) != 0)
      return errnoError("sv_net_sessions: claim");
    return {};
  }

  // Every entry of the slot, whoever wrote it.
  void purgeSlot() {
    const uint32_t first = globalPlan(0), end = globalPlan(SV_NET_MAX_PLANS);
    purgeEntries<uint64_t, sv_net_cgroup_plan>(net.map(kCgroupPlans), [&](auto&, auto& v) {
      return v.slot == slot;
    });
    purgeEntries<sv_net_lpm_key, sv_net_allow_value>(net.map(kAllow), [&](auto& k, auto&) {
      return k.plan >= first && k.plan < end;
    });
    purgeEntries<sv_net_dns_key, sv_net_dns_target>(net.map(kDnsServers), [&](auto& k, auto&) {
      return k.slot == slot;
    });
    purgeEntries<sv_net_dns_key, sv_net_dns_key>(net.map(kDnsProxies), [&](auto&, auto& v) {
      return v.slot == slot;
    });
    purgeEntries<sv_net_unix_key, uint32_t>(net.map(kUnixRoots), [&](auto& k, auto&) {
      return k.slot == slot;
    });
  }

  // Removes what this session wrote and frees the slot.
  void release() noexcept {
    if (!claimed || !pins) return;
    claimed = false;
    SharedPins::Lock locked(*pins);
    if (!stillOurs(net.map(kSessions), slot, cgroup_id)) return;
    const sv_net_session cleared{};
    (void)bpf_map_update_elem(net.map(kSessions), &slot, &cleared, BPF_ANY);
    for (uint64_t id : cgroup_keys) (void)bpf_map_delete_elem(net.map(kCgroupPlans), &id);
    for (uint32_t plan = 0; plan < entries.size(); ++plan) {
      for (const auto& [key, ranges] : entries[plan]) {
        sv_net_lpm_key lpm = lpmKey(globalPlan(plan), key);
        (void)bpf_map_delete_elem(net.map(kAllow), &lpm);
      }
    }
    for (const auto& k : dns_server_keys) (void)bpf_map_delete_elem(net.map(kDnsServers), &k);
    for (const auto& k : dns_proxy_keys) (void)bpf_map_delete_elem(net.map(kDnsProxies), &k);
    for (const auto& k : unix_keys) (void)bpf_map_delete_elem(net.map(kUnixRoots), &k);
  }

  // The folded value of `key`.
  Result<sv_net_allow_value> folded(uint32_t plan, const EntryKey& key) const {
    return foldedValue(entries[plan], key);
  }

  // Writes `key` and every more specific entry under it (their folded value
  // may include key's ranges now).
  Status writeAffected(uint32_t plan, const EntryKey& key) {
    for (const auto& [k, ranges] : entries[plan]) {
      if (k.second < key.second || !prefixContains(key.first, key.second, k.first)) continue;
      auto value = folded(plan, k);
      if (!value.ok()) return value.error();
      sv_net_lpm_key lpm = lpmKey(globalPlan(plan), k);
      if (bpf_map_update_elem(net.map(kAllow), &lpm, &*value, BPF_ANY) != 0)
        return errnoError("bpf_map_update_elem sv_net_allow");
    }
    return {};
  }

  static sv_net_lpm_key lpmKey(uint32_t global_plan, const EntryKey& k) {
    sv_net_lpm_key lpm{};
    lpm.prefixlen = static_cast<uint32_t>(SV_NET_PLAN_BITS + k.second);
    lpm.plan = global_plan;
    std::memcpy(lpm.addr, k.first.data(), 16);
    return lpm;
  }

  // Adds one plan: its entries (checked: a bad plan fails before the kernel
  // is touched).
  Status addPlan(const std::string& profile, const policy::NetworkPlan& plan) {
    if (modes.size() >= SV_NET_MAX_PLANS)
      return Error{E2BIG, "network: more than " + std::to_string(SV_NET_MAX_PLANS - 1) +
                              " profiles with network rules"};
    auto& mine = entries.emplace_back();
    modes.push_back(plan.mode);
    plan_profiles.push_back(profile);
    dns_plans.push_back(!plan.hosts.empty());
    return collectEntries(plan, rule_ids, rule_index_of, mine);
  }

  // Every plan's mode, DNS redirection and allowlist, before attach.
  Status writePlans() {
    for (uint32_t plan = 0; plan < modes.size(); ++plan) {
      const uint32_t global = globalPlan(plan);
      uint32_t mode = static_cast<uint32_t>(modes[plan]);
      if (bpf_map_update_elem(net.map(kPlanModes), &global, &mode, BPF_ANY) != 0)
        return errnoError("bpf_map_update_elem sv_net_plan_modes");
      uint32_t dns = dns_plans[plan] ? 1 : 0;
      if (bpf_map_update_elem(net.map(kDnsPlans), &global, &dns, BPF_ANY) != 0)
        return errnoError("bpf_map_update_elem sv_net_dns_plans");
      for (const auto& [key, ranges] : entries[plan]) SV_TRY(writeAffected(plan, key));
    }
    return {};
  }

  // Processes of `cgroup` are judged by `plan` of this session.
  Status bind(uint64_t cgroup, uint32_t plan) {
    const sv_net_cgroup_plan value{slot, plan};
    if (bpf_map_update_elem(net.map(kCgroupPlans), &cgroup, &value, BPF_ANY) != 0)
      return errnoError("bpf_map_update_elem sv_net_cgroup_plans");
    if (std::find(cgroup_keys.begin(), cgroup_keys.end(), cgroup) == cgroup_keys.end())
      cgroup_keys.push_back(cgroup);
    return {};
  }

  // allow() in one plan: a /128 entry gains the range.
  Status allowIn(uint32_t plan, const policy::Ip6& ip, const Range& r) {
    EntryKey key{ip, 128};
    auto& mine = entries[plan];
    auto& ranges = mine[key];
    if (std::find(ranges.begin(), ranges.end(), r) != ranges.end()) return {};
    ranges.push_back(r);
    auto value = folded(plan, key);
    if (!value.ok()) {
      ranges.pop_back();
      if (ranges.empty()) mine.erase(key);
      return value.error();
    }
    return writeAffected(plan, key);
  }

  // revoke() in one plan: the range leaves the /128 entry, the entry goes
  // when empty (the longest match then falls back to a less specific block).
  Status revokeIn(uint32_t plan, const policy::Ip6& ip, const Range& r) {
    EntryKey key{ip, 128};
    auto& mine = entries[plan];
    auto it = mine.find(key);
    if (it == mine.end()) return {};
    auto& ranges = it->second;
    ranges.erase(std::remove(ranges.begin(), ranges.end(), r), ranges.end());
    if (!ranges.empty()) return writeAffected(plan, key);
    mine.erase(it);
    sv_net_lpm_key lpm = lpmKey(globalPlan(plan), key);
    if (bpf_map_delete_elem(net.map(kAllow), &lpm) != 0 && errno != ENOENT)
      return errnoError("bpf_map_delete_elem sv_net_allow");
    return {};
  }

  // The index of a rule id, registered when new.
  uint32_t ruleIndex(const std::string& rule_id) {
    auto [it, fresh] = rule_index_of.emplace(rule_id, static_cast<uint32_t>(rule_ids.size()));
    if (fresh) rule_ids.push_back(rule_id);
    return it->second;
  }

  // The writable roots, each as "path/" in the unix-path trie.
  Status writeUnixRoots(const std::vector<policy::NetUnixRoot>& roots) {
    for (const auto& root : roots) {
      std::string prefix = root.path;
      if (prefix.empty() || prefix[0] != '/') continue;
      if (prefix.back() != '/') prefix += '/';
      if (prefix.size() > SV_NET_UNIX_PATH_MAX) continue;  // no socket path can be under it
      sv_net_unix_key key{};
      key.prefixlen = static_cast<uint32_t>(32 + prefix.size() * 8);
      key.slot = slot;
      std::memcpy(key.path, prefix.data(), prefix.size());
      uint32_t index = ruleIndex(root.rule_id);
      if (bpf_map_update_elem(net.map(kUnixRoots), &key, &index, BPF_ANY) != 0)
        return errnoError("bpf_map_update_elem sv_net_unix_roots " + root.path);
      unix_keys.push_back(key);
    }
    return {};
  }

  // Links program `i` to the session cgroup.
  Status attach(ProgIndex i, int cgroup_fd) {
    UniqueFd link(bpf_link_create(net.prog(i), cgroup_fd, kAttachTypes[i], nullptr));
    if (!link) return errnoError(std::string("attach ") + kPins[kMaps + i] + " to cgroup");
    links.push_back(std::move(link));
    return {};
  }

  static int onSample(void* ctx, void* data, size_t size) noexcept {
    auto* self = static_cast<State*>(ctx);
    if (size < sizeof(sv_net_event) || self->on_event == nullptr) return 0;
    sv_net_event raw;
    std::memcpy(&raw, data, sizeof(raw));
    if (raw.abi_version != SV_NET_ABI_VERSION) return 0;  // cannot be from our object
    if (raw.session != self->cgroup_id) return 0;           // the slot's previous session
    NetEvent ev;
    ev.decision = raw.decision;
    ev.rule_index = raw.rule_index;
    ev.pid = raw.pid;
    ev.tgid = raw.tgid;
    ev.family = raw.family;
    ev.protocol = raw.protocol;
    ev.op = raw.op;
    ev.port = raw.port;
    std::memcpy(ev.addr.data(), raw.addr, 16);
    ev.sock_type = raw.sock_type;
    ev.reason = raw.reason;
    ev.flags = raw.flags;
    ev.plan = raw.plan;
    ev.ktime_ns = raw.ktime_ns;
    if ((raw.op == SV_NET_OP_UNIX_CONNECT || raw.op == SV_NET_OP_UNIX_SENDMSG) &&
        size >= sizeof(sv_net_unix_event)) {
      const auto* path = static_cast<const char*>(data) + offsetof(sv_net_unix_event, path);
      ev.unix_path.assign(path, strnlen(path, SV_NET_UNIX_PATH_MAX));
    }
    // An exception must not unwind through libbpf's C frames: park it and
    // stop the drain; consume() rethrows once libbpf has returned.
    try {
      (*self->on_event)(ev);
    } catch (...) {
      self->pending = std::current_exception();
      return -ECANCELED;
    }
    return 0;
  }
};

NetFilter::NetFilter(std::unique_ptr<State> state) : s_(std::move(state)) {}
NetFilter::NetFilter(NetFilter&&) noexcept = default;
NetFilter& NetFilter::operator=(NetFilter&&) noexcept = default;
NetFilter::~NetFilter() = default;

Result<NetFilter> NetFilter::load(const policy::NetworkPlan& plan, int cgroup_fd,
                                  bool deny_events_only) {
  NetFilterOptions options;
  options.deny_events_only = deny_events_only;
  return load(plan, cgroup_fd, options);
}

Result<NetFilter> NetFilter::load(const policy::NetworkPlan& plan, int cgroup_fd,
                                  const NetFilterOptions& options) {
  return load(plan, {}, cgroup_fd, options);
}

Result<NetFilter> NetFilter::load(const policy::NetworkPlan& plan,
                                  const std::map<std::string, policy::NetworkPlan>& profiles,
                                  int cgroup_fd, const NetFilterOptions& options) {
  auto s = std::make_unique<State>();

  // Allowlist images first: a bad plan fails before touching the kernel.
  SV_TRY(s->addPlan("", plan));
  for (const auto& [name, profile_plan] : profiles) SV_TRY(s->addPlan(name, profile_plan));

  s->pins.emplace(sharedPinName("net", SV_NET_ABI_VERSION, SV_NET_OBJECT_ID));
  const uint32_t flags = (options.deny_events_only ? SV_NET_SESSION_DENY_EVENTS_ONLY : 0) |
                         (options.report_connects ? SV_NET_SESSION_REPORT_CONNECTS : 0) |
                         (options.audit_only ? SV_NET_SESSION_AUDIT_ONLY : 0) |
                         (options.allow_raw_sockets ? SV_NET_SESSION_ALLOW_RAW : 0) |
                         (options.dns_proxy ? SV_NET_SESSION_DNS_PROXY : 0);
  {
    SharedPins::Lock locked(*s->pins);
    const SharedPins none;  // a private load's: nothing pinned
    const SharedPins* load_pins = &*s->pins;
    std::optional<SharedNet> shared = openShared(*s->pins);
    if (shared && runsShared(cgroup_fd, shared->prog(kConnect4))) {
      // Nested in another session: the outer one's programs judge us by its
      // plan; ours must judge by ours, so they are a private copy.
      shared.reset();
      load_pins = &none;
    }
    if (shared) {
      s->net = std::move(*shared);
      s->unix_detail = s->net.has(kConnectUnix)
                           ? "ok"
                           : "the kernel refused cgroup/connect_unix when the programs were "
                             "loaded (needs kernel 6.7+)";
    } else {
      load_pins->remove(kPins);  // what a load that failed half way left
      auto loaded = loadShared(*load_pins, s->log, s->unix_detail);
      if (!loaded) {
        load_pins->remove(kPins);
        return loaded.error();
      }
      s->skel = std::move(loaded->first);
      s->net = std::move(loaded->second);
      load_pins->removeUnusedSiblings("net");  // a new build's first session: older loads go
    }
    s->unix_paths = options.unix_paths && s->net.has(kConnectUnix);
    if (!options.unix_paths) s->unix_detail = "not requested";

    SV_TRY(s->claim(cgroup_fd, flags));
    SV_TRY(s->writePlans());
    if (s->unix_paths) SV_TRY(s->writeUnixRoots(plan.unix_roots));
    SV_TRY(s->bind(s->cgroup_id, SV_NET_PLAN_BASE));
  }

  s->dns_proxy = options.dns_proxy;
  std::vector<ProgIndex> progs = {kSockCreate, kConnect4, kConnect6, kSendmsg4, kSendmsg6};
  if (options.dns_proxy) progs.insert(progs.end(), {kRecvmsg4, kRecvmsg6, kGetpeername4, kGetpeername6});
  if (s->unix_paths) progs.insert(progs.end(), {kConnectUnix, kSendmsgUnix});
  std::vector<bpf_attach_type> types;
  for (ProgIndex i : progs) types.push_back(kAttachTypes[i]);
  ensureCgroupKeepers(types);  // so our attach and detach flip no static key
  for (ProgIndex i : progs) SV_TRY(s->attach(i, cgroup_fd));

  errno = 0;
  s->ring.reset(ring_buffer__new(s->ring_fd.get(), &State::onSample, s.get(), nullptr));
  if (!s->ring) return Error{ptrError<ring_buffer>(nullptr), "ring_buffer__new sv_net_events"};
  return NetFilter(std::move(s));
}

int NetFilter::eventFd() const { return ring_buffer__epoll_fd(s_->ring.get()); }

int NetFilter::consume(const std::function<void(const NetEvent&)>& on_event) {
  s_->on_event = &on_event;
  int n = ring_buffer__consume(s_->ring.get());
  s_->on_event = nullptr;
  if (s_->pending) std::rethrow_exception(std::exchange(s_->pending, nullptr));
  return n;
}

const std::string& NetFilter::ruleIdAt(uint32_t rule_index) const {
  static const std::string kNone;
  return rule_index < s_->rule_ids.size() ? s_->rule_ids[rule_index] : kNone;
}

uint32_t NetFilter::addRuleId(const std::string& rule_id) { return s_->ruleIndex(rule_id); }

Status NetFilter::allow(uint32_t plan, const policy::Ip6& ip, uint16_t port_lo,
                        uint16_t port_hi, uint32_t rule_index) {
  if (port_lo > port_hi) return Error{EINVAL, "allow: port_lo > port_hi"};
  if (rule_index >= s_->rule_ids.size()) return Error{EINVAL, "allow: unknown rule index"};
  if (plan >= s_->modes.size()) return Error{EINVAL, "allow: unknown plan"};
  if (s_->modes[plan] == policy::NetworkMode::None)
    return Error{EINVAL, "allow: network mode none admits no destination"};
  return s_->allowIn(plan, ip, Range{port_lo, port_hi, rule_index});
}

Status NetFilter::revoke(uint32_t plan, const policy::Ip6& ip, uint16_t port_lo,
                         uint16_t port_hi, uint32_t rule_index) {
  if (plan >= s_->modes.size()) return Error{EINVAL, "revoke: unknown plan"};
  return s_->revokeIn(plan, ip, Range{port_lo, port_hi, rule_index});
}

Result<uint32_t> NetFilter::planIndex(const std::string& profile) const {
  auto it = std::find(s_->plan_profiles.begin(), s_->plan_profiles.end(), profile);
  if (it == s_->plan_profiles.end())
    return Error{EINVAL, "network: no plan for profile '" + profile + "'"};
  return static_cast<uint32_t>(it - s_->plan_profiles.begin());
}

Status NetFilter::bindCgroup(uint64_t cgroup_id, const std::string& profile) {
  if (profile.empty()) return Error{EINVAL, "network: no plan for profile ''"};
  auto found = planIndex(profile);
  if (!found) return found.error();
  return s_->bind(cgroup_id, *found);
}

bool NetFilter::hasPlan(const std::string& profile) const {
  return !profile.empty() && std::find(s_->plan_profiles.begin(), s_->plan_profiles.end(),
                                       profile) != s_->plan_profiles.end();
}

const std::string& NetFilter::planProfile(uint8_t plan) const {
  return plan < s_->plan_profiles.size() ? s_->plan_profiles[plan] : s_->plan_profiles[0];
}

Status NetFilter::redirectDns(const policy::Ip6& resolver, uint16_t port, const policy::Ip6& proxy,
                              uint16_t proxy_port, uint32_t rule_index) {
  if (!s_->dns_proxy)
    return Error{EINVAL, "redirectDns: loaded without NetFilterOptions::dns_proxy"};
  const bool v4 = isV4Mapped(resolver);
  if (v4 != isV4Mapped(proxy))
    return Error{EINVAL, "redirectDns: resolver and proxy must be of one address family"};
  sv_net_dns_key up{}, px{};
  std::memcpy(up.addr, resolver.data(), 16);
  up.port = port;
  up.slot = static_cast<uint16_t>(s_->slot);
  std::memcpy(px.addr, proxy.data(), 16);
  px.port = proxy_port;
  sv_net_dns_target target{};
  std::memcpy(target.addr, proxy.data(), 16);
  target.port = proxy_port;
  target.rule_index = rule_index;
  // Reverse mapping first: a reply must never reach the tree unrewritten.
  if (bpf_map_update_elem(s_->net.map(kDnsProxies), &px, &up, BPF_ANY) != 0)
    return errnoError("bpf_map_update_elem sv_net_dns_proxies");
  s_->dns_proxy_keys.push_back(px);
  if (bpf_map_update_elem(s_->net.map(kDnsServers), &up, &target, BPF_ANY) != 0)
    return errnoError("bpf_map_update_elem sv_net_dns_servers");
  s_->dns_server_keys.push_back(up);
  return {};
}

uint64_t NetFilter::droppedEvents() const {
  return sumPerCpu(s_->net.map(kStats), s_->slot * SV_NET_STAT_MAX + SV_NET_STAT_EVENTS_DROPPED);
}

const std::string& NetFilter::libbpfLog() const { return s_->log; }
uint32_t NetFilter::slot() const { return s_->slot; }
uint32_t NetFilter::slotOwner(uint32_t slot) const {
  sv_net_session entry{};
  if (bpf_map_lookup_elem(s_->net.map(kSessions), &slot, &entry) != 0) return 0;
  return entry.cgroup_id ? entry.owner_pid : 0;
}

bool NetFilter::unixPathsEnforced() const { return s_->unix_paths; }
const std::string& NetFilter::unixPathsDetail() const { return s_->unix_detail; }

Result<NetAllowImage> buildNetAllowImage(const policy::NetworkPlan& plan) {
  NetAllowImage image;
  std::map<std::string, uint32_t> index_of;
  std::map<EntryKey, std::vector<Range>> entries;
  SV_TRY(collectEntries(plan, image.rule_ids, index_of, entries));
  for (const auto& [key, ranges] : entries) {
    auto value = foldedValue(entries, key);
    if (!value.ok()) return value.error();
    NetAllowEntry out;
    out.addr = key.first;
    out.prefix_len = key.second;
    for (uint32_t i = 0; i < value->count; ++i)
      out.ranges.push_back({value->ranges[i].lo, value->ranges[i].hi, value->ranges[i].rule_index});
    image.entries.push_back(std::move(out));
  }
  return image;
}

}  // namespace sv::tracer
