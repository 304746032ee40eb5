// LsmFilter: the BPF-LSM backend of one session (file, path and exec hooks).
//
// Loads bpf/progs/lsm.bpf.c through its skeleton, writes the path DFAs that
// policy::compileLsm() built and the per-profile network allowlists (folded
// like NetFilter's, see buildNetAllowImage) into its maps, registers the session's cgroup
// (only tasks in a registered cgroup are judged) and attaches the LSM
// programs. From then on the kernel decides on its own, with no round trip
// to user space; every decision (or every denial) arrives as an LsmEvent
// for the audit trail. Destroying the LsmFilter detaches the programs (the
// links are owned here, never pinned).
//
// Only meaningful where `bpf` is among the active LSMs: programs attach
// anyway on a kernel booted without it and then enforce nothing, so callers
// check probeBpfLsm() first (it reads /sys/kernel/security/lsm).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "policy/compile_lsm.h"

namespace sv::tracer {

// One decision of the LSM programs (see bpf/shared/lsm_abi.h).
struct LsmEvent {
  uint64_t ktime_ns = 0;
  uint64_t cgroup_id = 0;
  uint32_t pid = 0, tgid = 0;  // init pid namespace
  uint32_t rule_index = 0;     // ruleIdAt()
  uint32_t profile = 0;        // profileAt()
  policy::LsmOp op = policy::LsmOp::Read;
  uint8_t verdict = 0;  // policy::kLsmAllow / kLsmDeny
  uint8_t hook = 0;     // kLsmHook*
  uint8_t flags = 0;    // kLsmEventFlag*
  int syscall_nr = -1;  // the system call the task was in (native ABI); -1: none
  std::string path;     // file and exec events; unix_* hooks: the peer socket's bound path
  // socket_connect / socket_sendmsg events (op == LsmOp::Connect): the destination.
  policy::Ip6 addr{};  // IPv4-mapped IPv6 form
  uint16_t port = 0;
  uint8_t family = 0;  // AF_INET / AF_INET6
};

// Mirrors of the ABI constants, so callers need not include the C header.
inline constexpr uint8_t kLsmHookFileOpen = 1, kLsmHookPathMknod = 2, kLsmHookPathUnlink = 3,
                         kLsmHookPathMkdir = 4, kLsmHookPathRmdir = 5, kLsmHookPathRename = 6,
                         kLsmHookPathLink = 7, kLsmHookPathSymlink = 8, kLsmHookPathTruncate = 9,
                         kLsmHookBprmCheck = 10, kLsmHookSocketConnect = 12,
                         kLsmHookSocketSendmsg = 13, kLsmHookPathChmod = 14, kLsmHookPathChown = 15,
                         kLsmHookUnixStreamConnect = 16, kLsmHookUnixMaySend = 17,
                         kLsmHookMmapFile = 18;
inline constexpr uint8_t kLsmEventFlagAudit = 0x1;      // would-deny, not enforced
inline constexpr uint8_t kLsmEventFlagTruncated = 0x2;  // path too long: denied unjudged
inline constexpr uint8_t kLsmEventFlagMoving = 0x8;  // a create below a directory being moved

struct LsmFilterOptions {
  bool deny_events_only = false;  // report only denials
  bool audit_only = false;        // report would-deny, enforce nothing (plan.audit_mode too)
  // Judge connect/sendto here. Off leaves the network to the cgroup
  // programs, e.g. when domain entries need their run-time address updates.
  bool network = true;
  // Load no hook, only the decide_for_test program (decideInKernel): for
  // differential tests of the kernel's walk. Judges no task, and loads where
  // LSM programs cannot.
  bool test_only = false;
};

class LsmFilter {
  struct State;

 public:
  // Loads, fills the tables, registers cgroup_id (0: none yet, see
  // addSession) and attaches. Hooks the kernel's BTF lacks stay unloaded
  // (hooks() lists what is attached); file_open, bprm_check_security,
  // bprm_committed_creds and mmap_file are required. On failure nothing
  // stays attached; the error carries libbpf's log tail.
  static Result<LsmFilter> load(const policy::LsmPlan& plan, uint64_t cgroup_id,
                                const LsmFilterOptions& options = {});

  LsmFilter(LsmFilter&&) noexcept;
  LsmFilter& operator=(LsmFilter&&) noexcept;
  ~LsmFilter();

  // Makes `plan` the policy of every later decision: built in fresh maps,
  // then switched to with one map update, so no decision sees half of it.
  // Profiles keep their indices (tasks keep theirs); a profile `plan` drops
  // acts as the base. On failure the previous policy stays. Thread-safe.
  Status replacePolicy(const policy::LsmPlan& plan);
  // 1 after load, one more per replacePolicy().
  uint32_t policyVersion() const;

  // What the kernel's walk of the current tables gives a request (test_only
  // filters): the version that decided, the verdict (policy::kLsm*) and the
  // rule index (ruleIdAt) or, for LsmOp::Switch, the profile.
  struct KernelOutcome {
    uint32_t version = 0;
    uint8_t verdict = 0;
    uint32_t value = 0;
  };
  Result<KernelOutcome> decideInKernel(uint32_t profile, policy::LsmOp op,
                                       std::string_view path) const;
  // The same decision made `repeat` times in a row by the kernel: its mean
  // ns per decision (table lookup and walk, as in a hook). For benchmarks.
  Result<uint32_t> timeDecisionInKernel(uint32_t profile, policy::LsmOp op, std::string_view path,
                                        int repeat) const;

  // Judges the tasks of one more cgroup (e.g. a session's child cgroup).
  Status addSession(uint64_t cgroup_id);
  // Puts a task (by pidfd) into a profile, e.g. the session's first process.
  Status setTaskProfile(int pidfd, uint32_t profile);
  // A directory listed in the kernel as being moved (by its open fd, O_PATH
  // will do): until the mark is dropped, creates below it are refused
  // (bpf/progs/lsm.bpf.c, sv_lsm_create_op), so the notify handler's walk of
  // the tree and its rename see the same entries. Thread-safe.
  class MovingDirectory {
   public:
    MovingDirectory() = default;
    MovingDirectory(MovingDirectory&& o) noexcept;
    MovingDirectory& operator=(MovingDirectory&& o) noexcept;
    ~MovingDirectory();

   private:
    friend class LsmFilter;
    State* filter_ = nullptr;
    uint64_t ino_ = 0;
    uint32_t dev_ = 0;
  };
  Result<MovingDirectory> markMoving(int dir_fd);

  // The index of profile `name` in the loaded tables; nullopt for none.
  std::optional<uint32_t> profileIndex(std::string_view name) const;
  // The profile the kernel holds for process `tgid` (its leader's task
  // storage: switched at exec, inherited at fork); 0 (base) when it has none.
  // What user space must use under this backend: it never sees the execs.
  // Thread-safe.
  Result<uint32_t> taskProfile(pid_t tgid) const;

  // The ring buffer's epoll fd: readable when a denial waits (for the libuv
  // loop). Allow events are batched without a wake-up until 64 KiB wait, so
  // also call consume() on a timer (e.g. every 100 ms) and at session end.
  int eventFd() const;
  // Drains every pending event without blocking; returns how many, or -errno.
  // An exception thrown by on_event is carried past libbpf's C callback and
  // rethrown here after the drain stops.
  int consume(const std::function<void(const LsmEvent&)>& on_event);
  // The policy rule id behind an event's rule_index ("" when unknown): one
  // numbering for every policy version. Thread-safe.
  const std::string& ruleIdAt(uint32_t rule_index) const;
  // The profile name behind an event's or a task's profile ("" = base).
  const std::string& profileAt(uint32_t profile) const;
  // The hooks attached on this kernel, e.g. "file_open".
  const std::vector<std::string>& hooks() const;
  // Decisions lost because the ring buffer was full; paths too long to judge.
  uint64_t droppedEvents() const;
  uint64_t tooLongPaths() const;
  // libbpf warnings printed while loading (kept out of stderr).
  const std::string& libbpfLog() const;

 private:
  explicit LsmFilter(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

// Is `bpf` in /sys/kernel/security/lsm? (Cheap; says nothing about whether
// LSM programs may load.) *detail: "active (...)" or why not.
Result<bool> bpfLsmActive(std::string* detail = nullptr);

// Is the BPF LSM usable here? Reads /sys/kernel/security/lsm (a kernel booted
// without `bpf` in lsm= attaches LSM programs that silently enforce nothing),
// then really loads and attaches the programs with no session registered
// (they judge nothing). false with *detail when either says no; an Error
// only when the probe itself cannot run.
Result<bool> probeBpfLsm(std::string* detail = nullptr);

// A hook LsmFilter leaves unloaded on this kernel, and why.
struct LsmHookMissing {
  std::string hook;  // "path_mknod"
  std::string why;   // "no bpf_path_d_path kfunc"
};

// Which of LsmFilter's hooks load on this kernel, asked as load() asks
// (the hook and kfunc in the kernel's BTF, the verifier's bpf_d_path
// permission) without loading the filter: a few instructions per hook, for
// `supervise doctor`. Every hook, the socket ones included; *missing gets
// the others. Meaningless where LSM programs do not load at all (the
// bpf_d_path check then reads as allowed).
Result<std::vector<std::string>> probeLsmHooks(std::vector<LsmHookMissing>* missing = nullptr);

// The path_* hooks that decide write opens and path changes in the kernel.
// Without any one of them (6.1 refuses bpf_d_path in them all; before 6.12
// there is no bpf_path_d_path kfunc for path_mknod) a bpf-lsm session keeps
// every write open and path change on user-notify (lsmSeccompPlan).
// path_link is not among them: links stay notified whatever loads.
inline constexpr const char* kLsmPathHooks[] = {
    "path_mknod",  "path_unlink",   "path_mkdir", "path_rmdir", "path_symlink",
    "path_rename", "path_truncate", "path_chmod", "path_chown"};
bool hasEveryLsmPathHook(const std::vector<std::string>& hooks);
// The path_* hooks of `missing`, grouped by reason: "path_mknod: no
// bpf_path_d_path kfunc; path_unlink, path_mkdir, ...: bpf_d_path: ...".
std::string describeMissingPathHooks(const std::vector<LsmHookMissing>& missing);

// The id bpf_get_current_cgroup_id() reports for a cgroup2 directory.
Result<uint64_t> cgroupIdOf(const std::string& cgroup_dir);

}  // namespace sv::tracer
