// LsmFilter implementation: skeleton lifetime, table upload, ring buffer.
//
// Ordering matters for safety: the first policy version is installed after
// load and before any program is attached (later ones through
// LsmPolicyTables, which never exposes half a policy), and the session cgroup
// is registered last. Links are destroyed before the skeleton, so detaching
// comes first.
#include "tracer/bpf/lsm_filter.h"

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
#include <mutex>
#include <sstream>
#include <utility>

#include "common/unique_fd.h"
#include "policy/engine.h"
#include "shared/lsm_abi.h"
#include "shared/net_abi.h"
#include "sv_lsm.skel.h"
#include "tracer/bpf/bpf_probes.h"
#include "tracer/bpf/exec_file_id.h"
#include "tracer/bpf/libbpf_log.h"
#include "tracer/probe.h"
#include "tracer/bpf/lsm_policy_tables.h"

namespace sv::tracer {
namespace {

static_assert(sizeof(sv_lsm_event) == 40, "event ABI");
static_assert(sizeof(sv_lsm_outcome) == 8, "outcome ABI");
static_assert(sizeof(sv_lsm_task) == 16 && sizeof(sv_lsm_inode_key) == 16, "task ABI");
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
                  kLsmHookUnixStreamConnect == SV_LSM_HOOK_UNIX_STREAM_CONNECT &&
                  kLsmHookUnixMaySend == SV_LSM_HOOK_UNIX_MAY_SEND &&
                  kLsmHookMmapFile == SV_LSM_HOOK_MMAP_FILE &&
                  kLsmEventFlagAudit == SV_LSM_EVENT_F_AUDIT &&
                  kLsmEventFlagTruncated == SV_LSM_EVENT_F_TRUNCATED &&
                  kLsmEventFlagMoving == SV_LSM_EVENT_F_MOVING,
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
// program needs besides the hook itself (nullptr: none). d_path: the
// program calls bpf_d_path, which the kernel allows only in its own list of
// hooks (6.1 refuses it in every path_* hook; 6.12 allows those).
struct Hook {
  const char* name;
  bool required;
  bpf_program* (*prog)(sv_lsm*);
  const char* kfunc = nullptr;
  bool d_path = false;
};
const Hook kHooks[] = {
    {"file_open", true, [](sv_lsm* s) { return s->progs.file_open; }, nullptr, true},
    {"bprm_check_security", true, [](sv_lsm* s) { return s->progs.bprm_check_security; }, nullptr, true},
    // Commits exec.switch profiles, and arms mmap_file for a loader's program.
    {"bprm_committed_creds", true, [](sv_lsm* s) { return s->progs.bprm_committed_creds; }},
    // The program of a dynamic loader run as one (`ld-linux.so.2 ./tool`),
    // which no exec shows: without it an exec.deny'd tool runs that way.
    {"mmap_file", true, [](sv_lsm* s) { return s->progs.mmap_file; }, nullptr, true},
    {"task_alloc", false, [](sv_lsm* s) { return s->progs.task_alloc; }},
    {"path_mknod", false, [](sv_lsm* s) { return s->progs.path_mknod; }, "bpf_path_d_path"},
    {"path_unlink", false, [](sv_lsm* s) { return s->progs.path_unlink; }, nullptr, true},
    {"path_mkdir", false, [](sv_lsm* s) { return s->progs.path_mkdir; }, nullptr, true},
    {"path_rmdir", false, [](sv_lsm* s) { return s->progs.path_rmdir; }, nullptr, true},
    {"path_symlink", false, [](sv_lsm* s) { return s->progs.path_symlink; }, nullptr, true},
    {"path_rename", false, [](sv_lsm* s) { return s->progs.path_rename; }, nullptr, true},
    {"path_link", false, [](sv_lsm* s) { return s->progs.path_link; }, nullptr, true},
    {"path_truncate", false, [](sv_lsm* s) { return s->progs.path_truncate; }, nullptr, true},
    {"path_chmod", false, [](sv_lsm* s) { return s->progs.path_chmod; }, nullptr, true},
    {"path_chown", false, [](sv_lsm* s) { return s->progs.path_chown; }, nullptr, true},
    {"socket_connect", false, [](sv_lsm* s) { return s->progs.socket_connect; }},
    {"socket_sendmsg", false, [](sv_lsm* s) { return s->progs.socket_sendmsg; }},
    // Pathname unix peers: file rules (the write rule of the socket's path),
    // so loaded whether or not this filter judges the network.
    {"unix_stream_connect", false, [](sv_lsm* s) { return s->progs.unix_stream_connect; }},
    {"unix_may_send", false, [](sv_lsm* s) { return s->progs.unix_may_send; }},
};

// Whether hook `h` can load on the kernel of `vmlinux` (its BTF); *why says
// why not, without the hook's name. load() and probeLsmHooks() both ask
// this, so doctor's answer is the session's.
bool hookLoads(const Hook& h, const btf* vmlinux, std::string* why) {
  auto funcId = [vmlinux](const std::string& name) {
    return btf__find_by_name_kind(vmlinux, name.c_str(), BTF_KIND_FUNC);
  };
  const int hook_id = funcId(std::string("bpf_lsm_") + h.name);
  if (hook_id <= 0) {
    *why = "no such LSM hook in the kernel BTF";
    return false;
  }
  if (h.kfunc && funcId(h.kfunc) <= 0) {
    *why = std::string("no ") + h.kfunc + " kfunc";
    return false;
  }
  return !h.d_path || lsmHookAllowsDPath(hook_id, why);
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
  std::unique_ptr<LsmPolicyTables> tables;
  std::vector<std::unique_ptr<bpf_link, BpfLinkDeleter>> links;  // last: destroyed first
  std::vector<std::string> hooks;
  std::mutex moving_mutex;  // sv_lsm_moving's counts and sv_lsm_moves
  std::string log;
  bool audit_only = false;
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
    ev.syscall_nr = raw.syscall_nr == SV_LSM_NO_SYSCALL ? -1 : raw.syscall_nr;
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
  auto s = std::make_unique<State>();
  s->audit_only = options.audit_only;
  ScopedLibbpfLog capture(&s->log);
  s->skel.reset(sv_lsm__open());
  if (!s->skel) return withLog(errno ? errno : EINVAL, "bpf-lsm: open skeleton", s->log);
  s->skel->rodata->sv_lsm_cfg_flags = options.deny_events_only ? SV_LSM_CFG_DENY_EVENTS : 0;

  // Probe, don't assume: a hook (or kfunc) missing from this kernel's BTF
  // stays unloaded. One parse of the kernel BTF serves every lookup.
  std::unique_ptr<btf, void (*)(btf*)> vmlinux(btf__load_vmlinux_btf(), btf__free);
  if (!vmlinux) return errnoError("bpf-lsm: load kernel BTF (/sys/kernel/btf/vmlinux)");
  for (const Hook& h : kHooks) {
    const bool disabled = testDisabled(std::string("lsm-hook:") + h.name);
    const bool wanted = !options.test_only && !disabled &&
                        (options.network || !std::string_view(h.name).starts_with("socket_"));
    std::string why = disabled ? kDisabledByTest : "";
    const bool present = wanted && hookLoads(h, vmlinux.get(), &why);
    if (!present && h.required && !options.test_only)
      return Error{ENOTSUP, "bpf-lsm: " + std::string(h.name) + ": " + why};
    bpf_program__set_autoload(h.prog(s->skel.get()), present);
    if (present) s->hooks.push_back(h.name);
  }
  bpf_program__set_autoload(s->skel->progs.decide_for_test, options.test_only);
  if (int err = sv_lsm__load(s->skel.get()); err != 0)
    return withLog(-err, "bpf-lsm: load programs", s->log);

  // The policy is in place before any program is attached.
  auto& maps = s->skel->maps;
  s->tables = std::make_unique<LsmPolicyTables>(LsmPolicyMaps{
      bpf_map__fd(maps.sv_lsm_current), bpf_map__fd(maps.sv_lsm_pol_header),
      bpf_map__fd(maps.sv_lsm_pol_trans), bpf_map__fd(maps.sv_lsm_pol_states),
      bpf_map__fd(maps.sv_lsm_pol_outcomes), bpf_map__fd(maps.sv_lsm_pol_net_allow)});
  SV_TRY(s->tables->install(plan, options.audit_only));

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

Status LsmFilter::replacePolicy(const policy::LsmPlan& plan) {
  return s_->tables->install(plan, s_->audit_only);
}

uint32_t LsmFilter::policyVersion() const { return s_->tables->version(); }

namespace {

// Runs decide_for_test on one request, deciding `repeat` times in the kernel
// (a raw_tp test run takes no repeat of its own); *mean_ns: the mean per
// decision. The request goes in and comes back through sv_lsm_test_req.
Status runDecideForTest(bpf_program* prog, int request_map, sv_lsm_test_request& req,
                        uint32_t profile, policy::LsmOp op, std::string_view path, int repeat,
                        uint32_t* mean_ns) {
  if (path.size() > SV_LSM_PATH_MAX) return Error{ENAMETOOLONG, "bpf-lsm: path too long"};
  req.profile = profile;
  req.op = static_cast<uint32_t>(op);
  req.len = static_cast<uint32_t>(path.size());
  std::memcpy(req.path, path.data(), path.size());
  req.repeat = static_cast<uint32_t>(std::max(repeat, 1));
  const uint32_t zero = 0;
  if (bpf_map_update_elem(request_map, &zero, &req, BPF_ANY) != 0)
    return errnoError("bpf-lsm: write the decide_for_test request");
  LIBBPF_OPTS(bpf_test_run_opts, run);
  if (bpf_prog_test_run_opts(bpf_program__fd(prog), &run) != 0)
    return errnoError("bpf-lsm: run decide_for_test (loaded with test_only?)");
  if (bpf_map_lookup_elem(request_map, &zero, &req) != 0)
    return errnoError("bpf-lsm: read the decide_for_test answer");
  if (mean_ns) *mean_ns = static_cast<uint32_t>(req.elapsed_ns / req.repeat);
  return {};
}

}  // namespace

Result<LsmFilter::KernelOutcome> LsmFilter::decideInKernel(uint32_t profile, policy::LsmOp op,
                                                           std::string_view path) const {
  auto req = std::make_unique<sv_lsm_test_request>();
  SV_TRY(runDecideForTest(s_->skel->progs.decide_for_test,
                                bpf_map__fd(s_->skel->maps.sv_lsm_test_req), *req, profile, op, path, 1, nullptr));
  if (!req->found) return Error{ENOENT, "bpf-lsm: the kernel's tables gave no outcome"};
  return KernelOutcome{req->version, static_cast<uint8_t>(req->verdict), req->value};
}

Result<uint32_t> LsmFilter::timeDecisionInKernel(uint32_t profile, policy::LsmOp op,
                                                 std::string_view path, int repeat) const {
  auto req = std::make_unique<sv_lsm_test_request>();
  uint32_t ns = 0;
  SV_TRY(runDecideForTest(s_->skel->progs.decide_for_test,
                                bpf_map__fd(s_->skel->maps.sv_lsm_test_req), *req, profile, op, path, repeat, &ns));
  if (!req->found) return Error{ENOENT, "bpf-lsm: the kernel's tables gave no outcome"};
  return ns;
}

Status LsmFilter::addSession(uint64_t cgroup_id) {
  uint32_t one = 1;
  if (bpf_map_update_elem(bpf_map__fd(s_->skel->maps.sv_lsm_sessions), &cgroup_id, &one, BPF_ANY))
    return errnoError("bpf-lsm: register session cgroup");
  return {};
}

Status LsmFilter::setTaskProfile(int pidfd, uint32_t profile) {
  if (profile >= s_->tables->profileCount()) return Error{EINVAL, "bpf-lsm: no such profile index"};
  sv_lsm_task t{};
  t.profile = profile;
  if (bpf_map_update_elem(bpf_map__fd(s_->skel->maps.sv_lsm_task_store), &pidfd, &t, BPF_ANY))
    return errnoError("bpf-lsm: set task profile");
  return {};
}

Result<LsmFilter::MovingDirectory> LsmFilter::markMoving(int dir_fd) {
  auto id = execFileIdOf(dir_fd);
  if (!id) return id.error();
  const sv_lsm_inode_key key{.ino = id->ino, .dev = id->dev, .pad = 0};
  std::lock_guard lock(s_->moving_mutex);
  uint32_t holders = 0;
  bpf_map_lookup_elem(bpf_map__fd(s_->skel->maps.sv_lsm_moving), &key, &holders);
  ++holders;
  if (bpf_map_update_elem(bpf_map__fd(s_->skel->maps.sv_lsm_moving), &key, &holders, BPF_ANY))
    return errnoError("bpf-lsm: mark a moving directory");
  if (holders == 1) __atomic_add_fetch(&s_->skel->bss->sv_lsm_moves, 1, __ATOMIC_SEQ_CST);
  MovingDirectory mark;
  mark.filter_ = s_.get();
  mark.ino_ = id->ino;
  mark.dev_ = id->dev;
  return mark;
}

LsmFilter::MovingDirectory::MovingDirectory(MovingDirectory&& o) noexcept
    : filter_(std::exchange(o.filter_, nullptr)), ino_(o.ino_), dev_(o.dev_) {}

LsmFilter::MovingDirectory& LsmFilter::MovingDirectory::operator=(MovingDirectory&& o) noexcept {
  if (this != &o) {
    MovingDirectory dropped(std::move(*this));
    filter_ = std::exchange(o.filter_, nullptr);
    ino_ = o.ino_;
    dev_ = o.dev_;
  }
  return *this;
}

LsmFilter::MovingDirectory::~MovingDirectory() {
  if (!filter_) return;
  const sv_lsm_inode_key key{.ino = ino_, .dev = dev_, .pad = 0};
  const int map = bpf_map__fd(filter_->skel->maps.sv_lsm_moving);
  std::lock_guard lock(filter_->moving_mutex);
  uint32_t holders = 0;
  if (bpf_map_lookup_elem(map, &key, &holders) != 0) return;
  if (--holders > 0) {
    bpf_map_update_elem(map, &key, &holders, BPF_ANY);
    return;
  }
  bpf_map_delete_elem(map, &key);
  __atomic_sub_fetch(&filter_->skel->bss->sv_lsm_moves, 1, __ATOMIC_SEQ_CST);
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
  return s_->tables->ruleIdAt(rule_index);
}

std::optional<uint32_t> LsmFilter::profileIndex(std::string_view name) const {
  return s_->tables->profileIndex(name);
}

const std::string& LsmFilter::profileAt(uint32_t profile) const {
  return s_->tables->profileAt(profile);
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

Result<std::vector<std::string>> probeLsmHooks(std::vector<LsmHookMissing>* missing) {
  std::unique_ptr<btf, void (*)(btf*)> vmlinux(btf__load_vmlinux_btf(), btf__free);
  if (!vmlinux) return errnoError("bpf-lsm: load kernel BTF (/sys/kernel/btf/vmlinux)");
  std::vector<std::string> hooks;
  for (const Hook& h : kHooks) {
    std::string why;
    if (hookLoads(h, vmlinux.get(), &why))
      hooks.push_back(h.name);
    else if (missing)
      missing->push_back({h.name, why});
  }
  return hooks;
}

bool hasEveryLsmPathHook(const std::vector<std::string>& hooks) {
  for (const char* h : kLsmPathHooks)
    if (std::find(hooks.begin(), hooks.end(), h) == hooks.end()) return false;
  return true;
}

std::string describeMissingPathHooks(const std::vector<LsmHookMissing>& missing) {
  // One clause per reason, in hook order: 6.1 refuses bpf_d_path in eight
  // hooks for the same reason.
  std::vector<std::pair<std::string, std::string>> by_why;  // why, hooks
  for (const auto& m : missing) {
    if (!m.hook.starts_with("path_")) continue;
    auto it = std::find_if(by_why.begin(), by_why.end(),
                           [&](const auto& w) { return w.first == m.why; });
    if (it == by_why.end())
      by_why.emplace_back(m.why, m.hook);
    else
      it->second += ", " + m.hook;
  }
  std::string out;
  for (const auto& [why, hooks] : by_why) out += (out.empty() ? "" : "; ") + hooks + ": " + why;
  return out;
}

Result<uint64_t> cgroupIdOf(const std::string& cgroup_dir) {
  // On cgroup2 the kernfs node id, which bpf_get_current_cgroup_id() returns,
  // is the directory's inode number.
  struct stat st {};
  if (::stat(cgroup_dir.c_str(), &st) != 0) return errnoError("stat " + cgroup_dir);
  return static_cast<uint64_t>(st.st_ino);
}

}  // namespace sv::tracer
