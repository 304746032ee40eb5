// LsmFilter implementation: skeleton lifetime, table upload, ring buffer.
//
// Ordering matters for safety: every table is written after load and before
// any program is attached, and the session cgroup is registered last, so a
// supervised task never meets a half-written policy. Links are destroyed
// before the skeleton, so detaching comes first.
#include "tracer/lsm_filter.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <fstream>
#include <sstream>

#include "common/unique_fd.h"
#include "policy/engine.h"
#include "shared/lsm_abi.h"
#include "shared/net_abi.h"
#include "sv_lsm.skel.h"
#include "tracer/libbpf_log.h"
#include "tracer/net_filter.h"

namespace sv::tracer {
namespace {

static_assert(sizeof(sv_lsm_event) == 40, "event ABI");
static_assert(sizeof(sv_lsm_outcome) == 8, "outcome ABI");
static_assert(sizeof(sv_lsm_task) == 16, "task ABI");
static_assert(sizeof(sv_lsm_net_key) == 24 && sizeof(sv_lsm_net_dest) == 20, "net ABI");
static_assert(static_cast<int>(policy::LsmOp::Connect) == SV_LSM_OP_CONNECT &&
                  kLsmHookSocketConnect == SV_LSM_HOOK_SOCKET_CONNECT,
              "connect mirrors");
static_assert(policy::kLsmNumOps == SV_LSM_NUM_OPS &&
                  static_cast<int>(policy::LsmOp::Switch) == SV_LSM_OP_SWITCH &&
                  policy::kLsmAllow == SV_LSM_ALLOW && policy::kLsmDeny == SV_LSM_DENY &&
                  policy::kLsmSwitch == SV_LSM_SWITCH && policy::kLsmStay == SV_LSM_STAY &&
                  policy::kLsmStateFinal == SV_LSM_STATE_FINAL &&
                  policy::kLsmStateOutcomeMask == SV_LSM_STATE_OUTCOME_MASK,
              "policy/compile_lsm.h mirrors bpf/shared/lsm_abi.h");
static_assert(kLsmHookBprmCheck == SV_LSM_HOOK_BPRM_CHECK &&
                  kLsmHookSocketSendmsg == SV_LSM_HOOK_SOCKET_SENDMSG &&
                  kLsmHookPathChmod == SV_LSM_HOOK_PATH_CHMOD &&
                  kLsmHookPathChown == SV_LSM_HOOK_PATH_CHOWN &&
                  kLsmEventFlagAudit == SV_LSM_EVENT_F_AUDIT &&
                  kLsmEventFlagTruncated == SV_LSM_EVENT_F_TRUNCATED,
              "C++ mirrors of the ABI constants");

struct SkelDeleter {
  void operator()(sv_lsm* s) const { sv_lsm__destroy(s); }
};
Error withLog(int code, const std::string& what, const std::string& log) {
  std::string tail = log.size() > 1500 ? "..." + log.substr(log.size() - 1500) : log;
  while (!tail.empty() && tail.back() == '\n') tail.pop_back();
  return Error{code, tail.empty() ? what : what + "\nlibbpf: " + tail};
}

// Hooks, whether the filter is useless without them, and the kfunc the
// program needs besides the hook itself (nullptr: none).
struct Hook {
  const char* name;
  bool required;
  bpf_program* (*prog)(sv_lsm*);
  const char* kfunc = nullptr;
};
const Hook kHooks[] = {
    {"file_open", true, [](sv_lsm* s) { return s->progs.file_open; }},
    {"bprm_check_security", true, [](sv_lsm* s) { return s->progs.bprm_check_security; }},
    {"bprm_committed_creds", false, [](sv_lsm* s) { return s->progs.bprm_committed_creds; }},
    {"task_alloc", false, [](sv_lsm* s) { return s->progs.task_alloc; }},
    {"path_mknod", false, [](sv_lsm* s) { return s->progs.path_mknod; }, "bpf_path_d_path"},
    {"path_unlink", false, [](sv_lsm* s) { return s->progs.path_unlink; }},
    {"path_mkdir", false, [](sv_lsm* s) { return s->progs.path_mkdir; }},
    {"path_rmdir", false, [](sv_lsm* s) { return s->progs.path_rmdir; }},
    {"path_symlink", false, [](sv_lsm* s) { return s->progs.path_symlink; }},
    {"path_rename", false, [](sv_lsm* s) { return s->progs.path_rename; }},
    {"path_link", false, [](sv_lsm* s) { return s->progs.path_link; }},
    {"path_truncate", false, [](sv_lsm* s) { return s->progs.path_truncate; }},
    {"path_chmod", false, [](sv_lsm* s) { return s->progs.path_chmod; }},
    {"path_chown", false, [](sv_lsm* s) { return s->progs.path_chown; }},
    {"socket_connect", false, [](sv_lsm* s) { return s->progs.socket_connect; }},
    {"socket_sendmsg", false, [](sv_lsm* s) { return s->progs.socket_sendmsg; }},
};

// Uploads an array map in one syscall (a few hundred thousand entries for a
// policy with profiles; one update each would take most of a second).
Status fillArray(bpf_map* map, const void* values, size_t count, const char* what) {
  if (count == 0) return {};
  std::vector<uint32_t> keys(count);
  for (size_t i = 0; i < count; ++i) keys[i] = static_cast<uint32_t>(i);
  __u32 n = static_cast<__u32>(count);
  if (bpf_map_update_batch(bpf_map__fd(map), keys.data(), values, &n, nullptr) != 0 || n != count)
    return errnoError(std::string("bpf_map_update_batch ") + what);
  return {};
}

// The network allowlists of every profile as LPM entries keyed by (profile,
// address), with rule indices into `rule_ids` (extended as needed).
struct NetTables {
  std::vector<uint32_t> modes;
  std::vector<std::pair<sv_lsm_net_key, sv_net_allow_value>> entries;
};

uint32_t indexOf(std::vector<std::string>& rule_ids, const std::string& id) {
  for (size_t i = 0; i < rule_ids.size(); ++i)
    if (rule_ids[i] == id) return static_cast<uint32_t>(i);
  rule_ids.push_back(id);
  return static_cast<uint32_t>(rule_ids.size() - 1);
}

Result<NetTables> netTables(const policy::LsmPlan& plan, std::vector<std::string>& rule_ids) {
  NetTables t;
  for (size_t p = 0; p < plan.profiles.size(); ++p) {
    const policy::NetworkPlan& net =
        p < plan.network.size() ? plan.network[p] : policy::NetworkPlan{};
    t.modes.push_back(static_cast<uint32_t>(net.mode));
    auto image = buildNetAllowImage(net);
    if (!image.ok()) return image.error();
    for (const auto& e : image->entries) {
      sv_lsm_net_key key{};
      key.prefixlen = 32 + static_cast<uint32_t>(e.prefix_len);
      key.profile_be = htonl(static_cast<uint32_t>(p));
      std::memcpy(key.addr, e.addr.data(), 16);
      // The kernel takes the first matching range: order them by rule
      // priority (the image numbers rules in plan order, which is priority
      // order), not by port, so a specific rule is not shadowed by loopback.
      auto ranges = e.ranges;
      std::stable_sort(
          ranges.begin(), ranges.end(),
          [](const NetPortRange& a, const NetPortRange& b) { return a.rule_index < b.rule_index; });
      sv_net_allow_value v{};
      v.count = static_cast<uint32_t>(ranges.size());
      for (size_t i = 0; i < ranges.size() && i < SV_NET_MAX_PORT_RANGES; ++i) {
        v.ranges[i] = {ranges[i].lo, ranges[i].hi,
                       indexOf(rule_ids, image->rule_ids[ranges[i].rule_index])};
      }
      t.entries.emplace_back(key, v);
    }
  }
  return t;
}

uint64_t sumPercpu(bpf_map* map, uint32_t key) {
  int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return 0;
  std::vector<uint64_t> v(static_cast<size_t>(ncpu));
  if (bpf_map_lookup_elem(bpf_map__fd(map), &key, v.data()) != 0) return 0;
  uint64_t sum = 0;
  for (uint64_t x : v) sum += x;
  return sum;
}

}  // namespace

struct LsmFilter::State {
  std::unique_ptr<sv_lsm, SkelDeleter> skel;
  std::unique_ptr<ring_buffer, RingBufferDeleter> ring;
  std::vector<std::unique_ptr<bpf_link, BpfLinkDeleter>> links;  // last: destroyed first
  std::vector<std::string> rule_ids, profiles, hooks;
  std::string log;
  const std::function<void(const LsmEvent&)>* on_event = nullptr;
  std::exception_ptr pending;

  static int onSample(void* ctx, void* data, size_t size) {
    auto* self = static_cast<State*>(ctx);
    if (size < sizeof(sv_lsm_event) || !self->on_event || self->pending) return 0;
    sv_lsm_event raw;
    std::memcpy(&raw, data, sizeof(raw));
    LsmEvent ev;
    ev.ktime_ns = raw.ktime_ns;
    ev.cgroup_id = raw.cgroup_id;
    ev.pid = raw.pid;
    ev.tgid = raw.tgid;
    ev.rule_index = raw.rule_index;
    ev.profile = raw.profile;
    ev.op = static_cast<policy::LsmOp>(raw.op);
    ev.verdict = raw.verdict;
    ev.hook = raw.hook;
    ev.flags = raw.flags;
    size_t len = std::min<size_t>(raw.path_len, size - sizeof(raw));
    const char* payload = static_cast<const char*>(data) + sizeof(raw);
    if (raw.op == SV_LSM_OP_CONNECT && len >= sizeof(sv_lsm_net_dest)) {
      sv_lsm_net_dest dest;
      std::memcpy(&dest, payload, sizeof(dest));
      std::memcpy(ev.addr.data(), dest.addr, 16);
      ev.port = dest.port;
      ev.family = dest.family;
    } else {
      ev.path.assign(payload, len);
    }
    try {  // no exception may cross libbpf's C frames
      (*self->on_event)(ev);
    } catch (...) {
      self->pending = std::current_exception();
      return -ECANCELED;
    }
    return 0;
  }
};

LsmFilter::LsmFilter(std::unique_ptr<State> state) : s_(std::move(state)) {}
LsmFilter::LsmFilter(LsmFilter&&) noexcept = default;
LsmFilter& LsmFilter::operator=(LsmFilter&&) noexcept = default;
LsmFilter::~LsmFilter() = default;

Result<LsmFilter> LsmFilter::load(const policy::LsmPlan& plan, uint64_t cgroup_id,
                                  const LsmFilterOptions& options) {
  if (plan.profiles.empty() || plan.profiles.size() > SV_LSM_MAX_PROFILES ||
      plan.starts.size() != plan.profiles.size() * SV_LSM_NUM_OPS || plan.num_classes == 0 ||
      plan.transitions.size() != plan.states.size() * plan.num_classes)
    return Error{EINVAL, "bpf-lsm: malformed or too large plan (" + policy::lsmSummary(plan) + ")"};
  auto s = std::make_unique<State>();
  ScopedLibbpfLog capture(&s->log);
  s->rule_ids = plan.rule_ids;
  s->profiles = plan.profiles;
  auto net = netTables(plan, s->rule_ids);
  if (!net.ok()) return net.error();

  s->skel.reset(sv_lsm__open());
  if (!s->skel) return withLog(errno ? errno : EINVAL, "bpf-lsm: open skeleton", s->log);
  auto* ro = s->skel->rodata;
  ro->sv_lsm_cfg_flags = (options.audit_only || plan.audit_mode ? SV_LSM_CFG_AUDIT_MODE : 0) |
                         (options.deny_events_only ? SV_LSM_CFG_DENY_EVENTS : 0);
  ro->sv_lsm_nclasses = plan.num_classes;
  ro->sv_lsm_nprofiles = static_cast<uint32_t>(plan.profiles.size());
  std::memcpy(const_cast<uint8_t*>(ro->sv_lsm_byte_class), plan.byte_class.data(), 256);
  ro->sv_lsm_rule_net_none = indexOf(s->rule_ids, std::string(policy::kDenyNetworkNone));
  ro->sv_lsm_rule_net_all = indexOf(s->rule_ids, std::string(policy::kAllowAll));
  ro->sv_lsm_rule_net_default = indexOf(s->rule_ids, std::string(policy::kDefaultDenyConnect));
  auto& maps = s->skel->maps;
  if (bpf_map__set_max_entries(maps.sv_lsm_trans, plan.transitions.size()) ||
      bpf_map__set_max_entries(maps.sv_lsm_states, plan.states.size()) ||
      bpf_map__set_max_entries(maps.sv_lsm_outcomes, std::max<size_t>(1, plan.outcomes.size())))
    return errnoError("bpf-lsm: size tables");

  // Probe, don't assume: a hook (or kfunc) missing from this kernel's BTF
  // stays unloaded. One parse of the kernel BTF serves every lookup.
  std::unique_ptr<btf, void (*)(btf*)> vmlinux(btf__load_vmlinux_btf(), btf__free);
  if (!vmlinux) return errnoError("bpf-lsm: load kernel BTF (/sys/kernel/btf/vmlinux)");
  auto hasFunc = [&](const std::string& name) {
    return btf__find_by_name_kind(vmlinux.get(), name.c_str(), BTF_KIND_FUNC) > 0;
  };
  for (const Hook& h : kHooks) {
    const bool wanted = options.network || !std::string_view(h.name).starts_with("socket_");
    bool present = wanted && hasFunc(std::string("bpf_lsm_") + h.name) &&
                   (!h.kfunc || hasFunc(h.kfunc));
    if (!present && h.required)
      return Error{ENOTSUP, std::string("bpf-lsm: kernel BTF has no LSM hook ") + h.name};
    bpf_program__set_autoload(h.prog(s->skel.get()), present);
    if (present) s->hooks.push_back(h.name);
  }
  if (int err = sv_lsm__load(s->skel.get()); err != 0)
    return withLog(-err, "bpf-lsm: load programs", s->log);

  std::vector<sv_lsm_outcome> outcomes(plan.outcomes.size());
  for (size_t i = 0; i < outcomes.size(); ++i)
    outcomes[i] = {plan.outcomes[i].verdict, {0, 0, 0}, plan.outcomes[i].value};
  SV_TRY(fillArray(maps.sv_lsm_trans, plan.transitions.data(), plan.transitions.size(), "trans"));
  SV_TRY(fillArray(maps.sv_lsm_states, plan.states.data(), plan.states.size(), "states"));
  SV_TRY(fillArray(maps.sv_lsm_outcomes, outcomes.data(), outcomes.size(), "outcomes"));
  SV_TRY(fillArray(maps.sv_lsm_starts, plan.starts.data(), plan.starts.size(), "starts"));
  SV_TRY(fillArray(maps.sv_lsm_net_mode, net->modes.data(), net->modes.size(), "net modes"));
  for (const auto& [key, value] : net->entries) {
    if (bpf_map_update_elem(bpf_map__fd(maps.sv_lsm_net_allow), &key, &value, BPF_ANY) != 0)
      return errnoError("bpf-lsm: network allowlist entry");
  }

  for (const Hook& h : kHooks) {
    bpf_program* prog = h.prog(s->skel.get());
    if (!bpf_program__autoload(prog)) continue;
    bpf_link* link = bpf_program__attach_lsm(prog);
    if (!link) return withLog(errno, std::string("bpf-lsm: attach ") + h.name, s->log);
    s->links.emplace_back(link);
  }
  s->ring.reset(
      ring_buffer__new(bpf_map__fd(maps.sv_lsm_events), &State::onSample, s.get(), nullptr));
  if (!s->ring) return errnoError("bpf-lsm: ring_buffer__new");
  LsmFilter filter(std::move(s));
  if (cgroup_id != 0) SV_TRY(filter.addSession(cgroup_id));
  return filter;
}

Status LsmFilter::addSession(uint64_t cgroup_id) {
  uint32_t one = 1;
  if (bpf_map_update_elem(bpf_map__fd(s_->skel->maps.sv_lsm_sessions), &cgroup_id, &one, BPF_ANY))
    return errnoError("bpf-lsm: register session cgroup");
  return {};
}

Status LsmFilter::setTaskProfile(int pidfd, uint32_t profile) {
  if (profile >= s_->profiles.size()) return Error{EINVAL, "bpf-lsm: no such profile index"};
  sv_lsm_task t{};
  t.profile = profile;
  if (bpf_map_update_elem(bpf_map__fd(s_->skel->maps.sv_lsm_task_store), &pidfd, &t, BPF_ANY))
    return errnoError("bpf-lsm: set task profile");
  return {};
}

Result<uint32_t> LsmFilter::taskProfile(pid_t tgid) const {
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, tgid, 0)));
  if (!pidfd) return errnoError("bpf-lsm: pidfd_open " + std::to_string(tgid));
  sv_lsm_task t{};
  const int fd = pidfd.get();
  if (bpf_map_lookup_elem(bpf_map__fd(s_->skel->maps.sv_lsm_task_store), &fd, &t) != 0)
    return errno == ENOENT ? Result<uint32_t>(0u) : errnoError("bpf-lsm: task profile");
  return t.profile;
}

int LsmFilter::eventFd() const { return ring_buffer__epoll_fd(s_->ring.get()); }

int LsmFilter::consume(const std::function<void(const LsmEvent&)>& on_event) {
  s_->on_event = &on_event;
  int n = ring_buffer__consume(s_->ring.get());
  s_->on_event = nullptr;
  if (s_->pending) std::rethrow_exception(std::exchange(s_->pending, nullptr));
  return n;
}

const std::string& LsmFilter::ruleIdAt(uint32_t rule_index) const {
  static const std::string kNone;
  return rule_index < s_->rule_ids.size() ? s_->rule_ids[rule_index] : kNone;
}

const std::string& LsmFilter::profileAt(uint32_t profile) const {
  static const std::string kBase;
  return profile < s_->profiles.size() ? s_->profiles[profile] : kBase;
}

const std::vector<std::string>& LsmFilter::hooks() const { return s_->hooks; }

uint64_t LsmFilter::droppedEvents() const {
  return sumPercpu(s_->skel->maps.sv_lsm_stats, 0 /* SV_LSM_STAT_DROPPED */);
}

uint64_t LsmFilter::tooLongPaths() const {
  return sumPercpu(s_->skel->maps.sv_lsm_stats, 1 /* SV_LSM_STAT_TOO_LONG */);
}

const std::string& LsmFilter::libbpfLog() const { return s_->log; }

Result<bool> bpfLsmActive(std::string* detail) {
  std::ifstream in("/sys/kernel/security/lsm");
  std::string active;
  if (!in || !std::getline(in, active)) {
    if (detail) *detail = "/sys/kernel/security/lsm is not readable (securityfs not mounted?)";
    return false;
  }
  std::stringstream ss(active);
  bool bpf = false;
  for (std::string name; std::getline(ss, name, ',');) bpf = bpf || name == "bpf";
  if (!bpf) {
    if (detail) *detail = "bpf is not an active LSM (" + active + "); boot with lsm=...,bpf";
    return false;
  }
  if (detail) *detail = "active (" + active + ")";
  return true;
}

Result<bool> probeBpfLsm(std::string* detail) {
  std::string active;
  auto listed = bpfLsmActive(&active);
  if (!listed || !*listed) {
    if (detail) *detail = active;
    return listed;
  }
  // A tiny plan: everything allowed. No session is registered, so while the
  // programs are attached they judge nothing.
  policy::LsmPlan plan;
  plan.profiles = {""};
  plan.rule_ids = {"probe"};
  plan.outcomes = {{policy::kLsmAllow, 0}};
  plan.num_classes = 1;
  plan.states = {policy::kLsmStateFinal};
  plan.transitions = {0};
  plan.starts.assign(policy::kLsmNumOps, 0);
  auto filter = LsmFilter::load(plan, 0);
  if (!filter.ok()) {
    if (detail) *detail = "LSM programs do not load: " + filter.error().message();
    return false;
  }
  if (detail) *detail = active;
  return true;
}

Result<uint64_t> cgroupIdOf(const std::string& cgroup_dir) {
  // On cgroup2 the kernfs node id, which bpf_get_current_cgroup_id() returns,
  // is the directory's inode number.
  struct stat st {};
  if (::stat(cgroup_dir.c_str(), &st) != 0) return errnoError("stat " + cgroup_dir);
  return static_cast<uint64_t>(st.st_ino);
}

}  // namespace sv::tracer
