// ProcTracker implementation: the skeleton's lifetime, the per-boot layout
// cache (pinned next to the keepers of bpf_keepers.h), and the ring buffer;
// see proc_tracker.h.
//
// Ordering matters: the session cgroup is in sv_proc_cgroup before any
// program is attached (an empty cgroup array matches nothing, so the programs
// are inert until then), and the links are dropped before the skeleton.
#include "tracer/proc_tracker.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string_view>

#include "common/unique_fd.h"
#include "shared/proc_abi.h"
#include "sv_proc.skel.h"
#include "tracer/bpf_keepers.h"
#include "tracer/libbpf_log.h"

namespace sv::tracer {
namespace {

static_assert(sizeof(sv_proc_event) == 48 + 16 + SV_PROC_COMM_LEN + SV_PROC_FILENAME_LEN +
                                           SV_PROC_ARGS_LEN,
              "event ABI");
static_assert(sizeof(sv_proc_approval) == 8 + 16 * SV_PROC_MAX_APPROVED, "approval ABI");
static_assert(sizeof(sv_proc_layout) == 56, "layout ABI");
static_assert(kMaxExecFiles == SV_PROC_MAX_APPROVED, "approval size");

// ---- libbpf plumbing ------------------------------------------------------------

struct SkelDeleter {
  void operator()(sv_proc* s) const { sv_proc__destroy(s); }
};
Error loadError(int err, const std::string& what, const std::string& log) {
  std::string tail = log.size() > 1500 ? "..." + log.substr(log.size() - 1500) : log;
  while (!tail.empty() && tail.back() == '\n') tail.pop_back();
  return Error{err, what + (tail.empty() ? "" : "\nlibbpf: " + tail)};
}

std::vector<std::string> splitArgs(const char* data, size_t len) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= len; ++i) {
    if (i == len || data[i] == '\0') {
      if (i > start || i < len) out.emplace_back(data + start, i - start);
      start = i + 1;
    }
  }
  return out;
}

std::string fixedString(const char* data, size_t cap) { return std::string(data, ::strnlen(data, cap)); }

uint64_t sumPerCpu(int map_fd, uint32_t key) {
  const int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return 0;
  std::vector<uint64_t> per_cpu(static_cast<size_t>(ncpu));
  if (bpf_map_lookup_elem(map_fd, &key, per_cpu.data()) != 0) return 0;
  uint64_t total = 0;
  for (uint64_t v : per_cpu) total += v;
  return total;
}

// KernelLayout <-> the ABI struct, member by member (same order).
sv_proc_layout toAbi(const KernelLayout& k) {
  return {k.task_pid,  k.task_tgid,     k.task_real_parent, k.task_start_boottime,
          k.task_mm,   k.mm_arg_start,  k.mm_arg_end,       k.bprm_file,
          k.bprm_filename, k.file_inode, k.inode_ino,       k.inode_sb,
          k.sb_dev,    0};
}
KernelLayout fromAbi(const sv_proc_layout& a) {
  return {a.task_pid,  a.task_tgid,     a.task_real_parent, a.task_start_boottime,
          a.task_mm,   a.mm_arg_start,  a.mm_arg_end,       a.bprm_file,
          a.bprm_filename, a.file_inode, a.inode_ino,       a.inode_sb,
          a.sb_dev};
}

// The kernel layout, scanned once per boot: kept in a pinned one-entry
// array next to the keepers (bpffs is root-only here and empty after a
// reboot, the only way the kernel's struct layout changes). Saves the scan
// (~1.5 ms of CPU) at every later start-up.
Result<KernelLayout> cachedKernelLayout() {
  const std::string dir = keeperPinDir();
  const std::string pin =
      dir.empty() ? "" : dir + "/layout-v" + std::to_string(SV_PROC_ABI_VERSION);
  const uint32_t zero = 0;
  if (!pin.empty()) {
    if (UniqueFd map(bpf_obj_get(pin.c_str())); map) {
      sv_proc_layout raw{};
      if (bpf_map_lookup_elem(map.get(), &zero, &raw) == 0 && raw.task_tgid != 0)
        return fromAbi(raw);
    }
  }
  auto layout = findKernelLayout();
  if (!layout || pin.empty()) return layout;
  const sv_proc_layout raw = toAbi(*layout);
  UniqueFd map(bpf_map_create(BPF_MAP_TYPE_ARRAY, "sv_proc_layout", sizeof zero, sizeof raw, 1,
                              nullptr));
  if (map && bpf_map_update_elem(map.get(), &zero, &raw, BPF_ANY) == 0)
    (void)bpf_obj_pin(map.get(), pin.c_str());  // EEXIST: a concurrent session was first
  return layout;
}

}  // namespace

struct ProcTracker::State {
  std::unique_ptr<sv_proc, SkelDeleter> skel;
  std::unique_ptr<ring_buffer, RingBufferDeleter> ring;
  std::vector<std::unique_ptr<bpf_link, BpfLinkDeleter>> links;  // last: detached first
  ProcTrackerOptions options;
  uint64_t ns_per_tick = 10'000'000;
  const std::function<void(const ProcEvent&)>* on_event = nullptr;
  std::exception_ptr pending;

  static int onSample(void* ctx, void* data, size_t size) noexcept {
    auto* self = static_cast<State*>(ctx);
    if (size < sizeof(sv_proc_event) || self->on_event == nullptr) return 0;
    const auto* raw = static_cast<const sv_proc_event*>(data);
    if (raw->abi_version != SV_PROC_ABI_VERSION) return 0;  // cannot be from our object
    // An exception must not unwind through libbpf's C frames: park it and
    // stop the drain; consume() rethrows once libbpf has returned.
    try {
      ProcEvent ev;
      ev.type = static_cast<ProcEventType>(raw->type);
      ev.verdict = static_cast<ExecVerdict>(raw->verdict);
      ev.killed = raw->flags & SV_PROC_F_KILLED;
      ev.kill_failed = raw->flags & SV_PROC_F_KILL_FAILED;
      ev.audit_only = raw->flags & SV_PROC_F_AUDIT;
      ev.args_truncated = raw->flags & SV_PROC_F_ARGS_TRUNC;
      ev.kill_err = -raw->kill_err;
      ev.pid = static_cast<pid_t>(raw->pid);
      ev.tgid = static_cast<pid_t>(raw->tgid);
      ev.ppid = static_cast<pid_t>(raw->ppid);
      ev.old_pid = static_cast<pid_t>(raw->old_pid);
      ev.start_time_ticks = raw->start_boottime / self->ns_per_tick;
      ev.file = {raw->file.dev, raw->file.ino};
      ev.comm = fixedString(raw->comm, sizeof raw->comm);
      ev.filename = fixedString(raw->filename, sizeof raw->filename);
      ev.argv = splitArgs(raw->args, std::min<size_t>(raw->args_len, sizeof raw->args));
      ev.ktime_ns = raw->ktime_ns;
      (*self->on_event)(ev);
    } catch (...) {
      self->pending = std::current_exception();
      return -ECANCELED;
    }
    return 0;
  }
};

ProcTracker::ProcTracker(std::unique_ptr<State> state) : s_(std::move(state)) {}
ProcTracker::ProcTracker(ProcTracker&&) noexcept = default;
ProcTracker& ProcTracker::operator=(ProcTracker&&) noexcept = default;
ProcTracker::~ProcTracker() = default;

Result<ProcTracker> ProcTracker::load(int cgroup_fd, const ProcTrackerOptions& options) {
  auto layout = cachedKernelLayout();
  if (!layout) return layout.error();
  auto s = std::make_unique<State>();
  s->options = options;
  if (const long hz = ::sysconf(_SC_CLK_TCK); hz > 0) s->ns_per_tick = 1'000'000'000ull / hz;

  std::string log;
  ScopedLibbpfLog log_scope(&log);

  s->skel.reset(sv_proc__open());
  if (!s->skel) return loadError(errno ? errno : EINVAL, "open BPF object sv_proc", log);
  auto* ro = s->skel->rodata;
  ro->sv_proc_layout = toAbi(*layout);
  ro->sv_proc_recheck = options.recheck ? 1 : 0;
  ro->sv_proc_audit_only = options.audit_only ? 1 : 0;
  if (int err = sv_proc__load(s->skel.get()); err != 0)
    return loadError(-err, "load BPF programs sv_proc", log);

  const uint32_t zero = 0;
  const uint32_t cg = static_cast<uint32_t>(cgroup_fd);
  if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.sv_proc_cgroup), &zero, &cg, BPF_ANY) != 0)
    return errnoError("sv_proc_cgroup: set the session cgroup");

  ensureTracepointKeepers({"sched_process_exit", "sched_process_fork", "sched_process_exec"});
  for (bpf_program* prog : {s->skel->progs.sched_process_exit, s->skel->progs.sched_process_fork,
                            s->skel->progs.sched_process_exec}) {
    errno = 0;
    std::unique_ptr<bpf_link, BpfLinkDeleter> link(bpf_program__attach(prog));
    if (!link)
      return loadError(errno ? errno : EINVAL,
                       std::string("attach raw tracepoint ") + bpf_program__name(prog), log);
    s->links.push_back(std::move(link));
  }
  errno = 0;
  s->ring.reset(ring_buffer__new(bpf_map__fd(s->skel->maps.sv_proc_events), &State::onSample,
                                 s.get(), nullptr));
  if (!s->ring) return errnoError("ring_buffer__new sv_proc_events");
  return ProcTracker(std::move(s));
}

Status ProcTracker::approveExec(pid_t tid, std::span<const ExecFileId> files) {
  if (files.empty() || files.size() > SV_PROC_MAX_APPROVED)
    return Error{E2BIG, "exec approval: " + std::to_string(files.size()) + " files"};
  sv_proc_approval value{};
  value.count = static_cast<uint32_t>(files.size());
  for (size_t i = 0; i < files.size(); ++i) value.ids[i] = {files[i].ino, files[i].dev, 0};
  const uint32_t key = static_cast<uint32_t>(tid);
  if (bpf_map_update_elem(bpf_map__fd(s_->skel->maps.sv_proc_approved), &key, &value, BPF_ANY) != 0)
    return errnoError("sv_proc_approved: approve exec of tid " + std::to_string(tid));
  return {};
}

int ProcTracker::eventFd() const { return ring_buffer__epoll_fd(s_->ring.get()); }

int ProcTracker::consume(const std::function<void(const ProcEvent&)>& on_event) {
  s_->on_event = &on_event;
  const int n = ring_buffer__consume(s_->ring.get());
  s_->on_event = nullptr;
  if (s_->pending) std::rethrow_exception(std::exchange(s_->pending, nullptr));
  return n;
}

uint64_t ProcTracker::droppedEvents() const {
  return sumPerCpu(bpf_map__fd(s_->skel->maps.sv_proc_stats), SV_PROC_STAT_EVENTS_DROPPED);
}

uint64_t ProcTracker::kills() const {
  return sumPerCpu(bpf_map__fd(s_->skel->maps.sv_proc_stats), SV_PROC_STAT_KILLS);
}

bool ProcTracker::recheck() const { return s_->options.recheck; }

}  // namespace sv::tracer
