// ProcTracker implementation: the host-wide load the sessions share, a
// session's slot in it, the per-boot layout cache (pinned next to the
// keepers of bpf_keepers.h), and the ring buffer; see proc_tracker.h.
//
// Loading, verifying and attaching the three programs, and allocating a
// 1 MiB ring buffer, cost several ms of every start-up. So the first session
// of the boot loads them once and pins the maps and links under
// <bpffs>/supervise/proc-v<ABI>-<object hash>/; later sessions open the pins
// and claim a slot (a session cgroup, its settings, its ring buffer, its
// counters) under an flock of the pin directory. Without bpffs each tracker
// loads a private copy and takes slot 0. A session holds the links' fds, so
// removing the pins never detaches a running session's programs.
//
// Ordering matters: a slot's settings are written after its cgroup (the
// programs need both) and cleared first at release; the active-slot count
// covers a slot before it is written.
#include "tracer/bpf/proc_tracker.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string_view>

#include "common/unique_fd.h"
#include "shared/proc_abi.h"
#include "sv_proc.object_id.h"
#include "sv_proc.skel.h"
#include "tracer/bpf/bpf_keepers.h"
#include "tracer/bpf/bpf_shared.h"
#include "tracer/bpf/libbpf_log.h"

namespace sv::tracer {
namespace {

static_assert(sizeof(sv_proc_event) == 56 + 16 + SV_PROC_COMM_LEN + SV_PROC_FILENAME_LEN +
                                           SV_PROC_ARGS_LEN,
              "event ABI");
static_assert(sizeof(sv_proc_approval) == 16 + 16 * SV_PROC_MAX_APPROVED, "approval ABI");
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

// ---- the host-wide load (bpf_shared.h) -------------------------------------------

// Pins of a load, maps then links (the links are opened and pinned last).
constexpr const char* kPins[] = {"cgroups", "sessions", "active", "approved",
                                 "rings",   "stats",    "exit",   "fork",   "exec"};
constexpr size_t kMapCount = 6;

// The maps a session uses, as open fds, from the pins or from a load. The
// links' fds are held too: while a session runs, its programs stay attached
// even if someone removes the pins.
struct SharedMaps {
  UniqueFd cgroups, sessions, active, approved, rings, stats;
  std::vector<UniqueFd> links;

  static SharedMaps from(std::vector<UniqueFd> fds) {
    SharedMaps m;
    UniqueFd* maps[] = {&m.cgroups, &m.sessions, &m.active, &m.approved, &m.rings, &m.stats};
    for (size_t i = 0; i < fds.size(); ++i) {
      if (i < kMapCount)
        *maps[i] = std::move(fds[i]);
      else
        m.links.push_back(std::move(fds[i]));
    }
    return m;
  }
};

std::string pinName() {
  return sharedPinName("proc", SV_PROC_ABI_VERSION, SV_PROC_OBJECT_ID);
}

// Loads and attaches the programs; with a pin directory, pins the maps and
// the links there, which keeps the programs attached after this process.
struct Loaded {
  std::unique_ptr<sv_proc, SkelDeleter> skel;
  std::vector<std::unique_ptr<bpf_link, BpfLinkDeleter>> links;
  std::vector<UniqueFd> fds;  // dups, in kPins order
};
Result<Loaded> loadPrograms(const KernelLayout& layout, const SharedPins& pins) {
  std::string log;
  ScopedLibbpfLog log_scope(&log);
  Loaded out;
  out.skel.reset(sv_proc__open());
  if (!out.skel) return loadError(errno ? errno : EINVAL, "open BPF object sv_proc", log);
  out.skel->rodata->sv_proc_layout = toAbi(layout);
  if (int err = sv_proc__load(out.skel.get()); err != 0)
    return loadError(-err, "load BPF programs sv_proc", log);
  std::vector<int> fds;
  for (bpf_map* map : {out.skel->maps.sv_proc_cgroups, out.skel->maps.sv_proc_sessions,
                       out.skel->maps.sv_proc_active, out.skel->maps.sv_proc_approved,
                       out.skel->maps.sv_proc_rings, out.skel->maps.sv_proc_stats})
    fds.push_back(bpf_map__fd(map));
  for (bpf_program* prog : {out.skel->progs.sched_process_exit, out.skel->progs.sched_process_fork,
                            out.skel->progs.sched_process_exec}) {
    errno = 0;
    std::unique_ptr<bpf_link, BpfLinkDeleter> link(bpf_program__attach(prog));
    if (!link)
      return loadError(errno ? errno : EINVAL,
                       std::string("attach raw tracepoint ") + bpf_program__name(prog), log);
    fds.push_back(bpf_link__fd(link.get()));
    out.links.push_back(std::move(link));
  }
  for (int fd : fds) out.fds.emplace_back(::fcntl(fd, F_DUPFD_CLOEXEC, 3));
  if (pins.pinned()) SV_TRY(pins.pin(fds, kPins));
  return out;
}

// sv_proc_active: the highest claimed slot + 1. A claim raises it to cover
// its slot; a release lowers it past the free slots at the top (each slot
// read costs a syscall, so the common single session reads none).
Status raiseActive(const SharedMaps& m, uint32_t slot) {
  const uint32_t zero = 0;
  uint32_t active = 0;
  (void)bpf_map_lookup_elem(m.active.get(), &zero, &active);
  if (active > slot) return {};
  active = slot + 1;
  if (bpf_map_update_elem(m.active.get(), &zero, &active, BPF_ANY) != 0)
    return errnoError("sv_proc_active");
  return {};
}

void lowerActive(const SharedMaps& m, uint32_t released) {
  const uint32_t zero = 0;
  uint32_t active = 0;
  if (bpf_map_lookup_elem(m.active.get(), &zero, &active) != 0 || active != released + 1) return;
  while (active > 0) {
    const uint32_t top = active - 1;
    sv_proc_session s{};
    if (top != released && bpf_map_lookup_elem(m.sessions.get(), &top, &s) == 0 &&
        s.cgroup_id != 0)
      break;
    --active;
  }
  (void)bpf_map_update_elem(m.active.get(), &zero, &active, BPF_ANY);
}

}  // namespace

struct ProcTracker::State {
  Loaded own;  // when this tracker loaded the programs
  SharedMaps maps;
  std::optional<SharedPins> pins;
  UniqueFd ring_fd;  // this slot's ring buffer
  std::unique_ptr<ring_buffer, RingBufferDeleter> ring;
  uint32_t slot = 0;
  uint64_t cgroup_id = 0;
  bool claimed = false;
  ProcTrackerOptions options;
  uint64_t ns_per_tick = 10'000'000;
  const std::function<void(const ProcEvent&)>* on_event = nullptr;
  std::exception_ptr pending;

  Status claim(int cgroup_fd);
  void release() noexcept;
  ~State() { release(); }

  static int onSample(void* ctx, void* data, size_t size) noexcept {
    auto* self = static_cast<State*>(ctx);
    if (size < sizeof(sv_proc_event) || self->on_event == nullptr) return 0;
    const auto* raw = static_cast<const sv_proc_event*>(data);
    if (raw->abi_version != SV_PROC_ABI_VERSION) return 0;  // cannot be from our object
    if (raw->session != self->cgroup_id) return 0;  // the slot's previous session
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

// Takes the first free slot (or one whose supervisor is gone) for the
// session cgroup. Called with the lock held.
Status ProcTracker::State::claim(int cgroup_fd) {
  struct stat st;
  if (::fstat(cgroup_fd, &st) != 0) return errnoError("fstat the session cgroup");
  cgroup_id = st.st_ino;  // a cgroup2 directory's inode number is the cgroup id
  sv_proc_session entry{};
  for (slot = 0; slot < SV_PROC_MAX_SESSIONS; ++slot) {
    if (bpf_map_lookup_elem(maps.sessions.get(), &slot, &entry) != 0)
      return errnoError("sv_proc_sessions: read");
    if (entry.cgroup_id == 0 || !claimOwnerAlive(entry.owner_pid, entry.owner_start)) break;
  }
  if (slot == SV_PROC_MAX_SESSIONS)
    return Error{EBUSY, "process tracking: " + std::to_string(SV_PROC_MAX_SESSIONS) +
                            " sessions already run on this host"};
  const sv_proc_session cleared{};
  if (bpf_map_update_elem(maps.sessions.get(), &slot, &cleared, BPF_ANY) != 0)
    return errnoError("sv_proc_sessions: clear");
  claimed = true;  // from here on, release() undoes what follows
  SV_TRY(zeroPerCpu(maps.stats.get(), slot * SV_PROC_STAT_MAX, SV_PROC_STAT_MAX));
  // Approvals a previous session of the slot left (its threads' exits were
  // not seen once it had released the slot).
  purgeEntries<sv_proc_approval_key, sv_proc_approval>(
      maps.approved.get(), [this](const auto& k, const auto&) { return k.slot == slot; });
  auto ring = slotRingBuffer(maps.rings.get(), slot, SV_PROC_RING_BYTES, "sv_proc_ring");
  if (!ring) return ring.error();
  ring_fd = std::move(*ring);
  const uint32_t cg = static_cast<uint32_t>(cgroup_fd);
  if (bpf_map_update_elem(maps.cgroups.get(), &slot, &cg, BPF_ANY) != 0)
    return errnoError("sv_proc_cgroups: set the session cgroup");
  entry = {};
  entry.cgroup_id = cgroup_id;
  entry.flags = (options.recheck ? SV_PROC_SESSION_RECHECK : 0) |
                (options.audit_only ? SV_PROC_SESSION_AUDIT : 0);
  entry.owner_pid = static_cast<uint32_t>(::getpid());
  entry.owner_start = processStartTime(::getpid());
  if (bpf_map_update_elem(maps.sessions.get(), &slot, &entry, BPF_ANY) != 0)
    return errnoError("sv_proc_sessions: claim");
  return raiseActive(maps, slot);
}

void ProcTracker::State::release() noexcept {
  if (!claimed) return;
  claimed = false;
  SharedPins::Lock locked(*pins);
  if (!stillOurs(maps.sessions.get(), slot, cgroup_id)) return;
  const sv_proc_session cleared{};
  (void)bpf_map_update_elem(maps.sessions.get(), &slot, &cleared, BPF_ANY);
  (void)bpf_map_delete_elem(maps.cgroups.get(), &slot);
  lowerActive(maps, slot);
}

ProcTracker::ProcTracker(std::unique_ptr<State> state) : s_(std::move(state)) {}
ProcTracker::ProcTracker(ProcTracker&&) noexcept = default;
ProcTracker& ProcTracker::operator=(ProcTracker&&) noexcept = default;
ProcTracker::~ProcTracker() = default;

namespace {

// Why the tracker can't serve this supervisor, or "": the programs see the
// kernel's global tids, and the approvals the notify handler writes (and the
// pids of its events) are ours, which are the same only in the initial pid
// namespace. Outside it every exec would be killed as never approved.
std::string outsideInitialPidNamespace() {
  constexpr unsigned long kInitialPidNamespace = 0xEFFFFFFCul;  // PROC_PID_INIT_INO
  char link[64] = {};
  if (::readlink("/proc/self/ns/pid", link, sizeof link - 1) <= 0) return "";  // unknown: try
  if (std::string_view(link) == "pid:[" + std::to_string(kInitialPidNamespace) + "]") return "";
  return std::string("supervise runs in a pid namespace of its own (") + link +
         "), and the programs know only the kernel's global pids: run supervise in the "
         "initial pid namespace";
}

}  // namespace

Result<ProcTracker> ProcTracker::load(int cgroup_fd, const ProcTrackerOptions& options) {
  if (std::string why = outsideInitialPidNamespace(); !why.empty()) return Error{ENOTSUP, why};
  auto s = std::make_unique<State>();
  s->options = options;
  if (const long hz = ::sysconf(_SC_CLK_TCK); hz > 0) s->ns_per_tick = 1'000'000'000ull / hz;

  s->pins.emplace(pinName());
  {
    SharedPins::Lock locked(*s->pins);
    if (auto fds = s->pins->open(kPins)) {
      s->maps = SharedMaps::from(std::move(*fds));
    } else {
      s->pins->remove(kPins);  // what a load that failed half way left
      auto layout = cachedKernelLayout();
      if (!layout) return layout.error();
      auto loaded = loadPrograms(*layout, *s->pins);
      if (!loaded) {
        s->pins->remove(kPins);
        return loaded.error();
      }
      s->maps = SharedMaps::from(std::move(loaded->fds));
      s->own = std::move(*loaded);  // pinned, the links outlive it: attached for the boot
      s->pins->removeUnusedSiblings("proc");  // a new build's first session: older loads go
    }
    SV_TRY(s->claim(cgroup_fd));
  }
  errno = 0;
  s->ring.reset(ring_buffer__new(s->ring_fd.get(), &State::onSample, s.get(), nullptr));
  if (!s->ring) return errnoError("ring_buffer__new sv_proc_events");
  return ProcTracker(std::move(s));
}

static_assert(kMaxCheckedExecArgs == SV_PROC_ARGS_LEN, "the re-check reads this much argv");

uint64_t execArgsHash(std::string_view bytes) {
  uint64_t hash = SV_PROC_FNV_OFFSET;
  for (char c : bytes) hash = SV_PROC_FNV_STEP(hash, c);
  return hash;
}

Status ProcTracker::approveExec(pid_t tid, std::span<const ExecFileId> files,
                                std::string_view args) {
  if (files.empty() || files.size() > SV_PROC_MAX_APPROVED)
    return Error{E2BIG, "exec approval: " + std::to_string(files.size()) + " files"};
  if (args.size() > SV_PROC_ARGS_LEN)
    return Error{E2BIG, "exec approval: " + std::to_string(args.size()) + " bytes of argv"};
  sv_proc_approval value{};
  value.count = static_cast<uint32_t>(files.size());
  value.args_len = static_cast<uint32_t>(args.size());
  value.args_hash = execArgsHash(args);
  for (size_t i = 0; i < files.size(); ++i) value.ids[i] = {files[i].ino, files[i].dev, 0};
  const sv_proc_approval_key key{static_cast<uint32_t>(tid), s_->slot};
  if (bpf_map_update_elem(s_->maps.approved.get(), &key, &value, BPF_ANY) != 0)
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
  return sumPerCpu(s_->maps.stats.get(), s_->slot * SV_PROC_STAT_MAX + SV_PROC_STAT_EVENTS_DROPPED);
}

uint64_t ProcTracker::kills() const {
  return sumPerCpu(s_->maps.stats.get(), s_->slot * SV_PROC_STAT_MAX + SV_PROC_STAT_KILLS);
}

bool ProcTracker::recheck() const { return s_->options.recheck; }

uint32_t ProcTracker::slot() const { return s_->slot; }

uint32_t ProcTracker::slotOwner(uint32_t slot) const {
  sv_proc_session entry{};
  if (bpf_map_lookup_elem(s_->maps.sessions.get(), &slot, &entry) != 0) return 0;
  return entry.cgroup_id ? entry.owner_pid : 0;
}

uint32_t ProcTracker::execProgramId() const {
  const int link = s_->maps.links.back().get();
  bpf_link_info info{};
  __u32 len = sizeof info;
  return bpf_obj_get_info_by_fd(link, &info, &len) == 0 ? info.prog_id : 0;
}

}  // namespace sv::tracer
