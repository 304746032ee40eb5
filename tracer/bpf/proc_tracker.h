// ProcTracker: the session's process tracking and in-kernel exec re-check.
//
// Loads bpf/progs/proc.bpf.c (raw tracepoints sched_process_fork / exec /
// exit), scopes it to the session cgroup, and hands the tree's fork, exec and
// exit events to the caller as ProcEvents. With `recheck` on, the exec
// program SIGKILLs a process whose new binary is not one the supervisor
// approved (approveExec) for the thread that called execve, before that
// binary runs a single instruction: the user-notify exec check answers
// CONTINUE, and the kernel re-reads the path after it, so the decision must
// be pinned to the file, not to the path (docs/enforcement.md "exec").
//
// The programs read kernel structs at offsets found by findKernelLayout()
// (kernel_layout.h), cached in bpffs for the boot. They are loaded once per
// boot and shared by every session (pinned under <bpffs>/supervise/): a
// tracker claims a session slot, and destroying it releases the slot.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "tracer/bpf/exec_file_id.h"
#include "tracer/bpf/kernel_layout.h"

namespace sv::tracer {

// Files one exec approval can name: the binary and its #! interpreter chain
// (the kernel nests scripts at most 4 deep).
inline constexpr size_t kMaxExecFiles = 6;

enum class ProcEventType : uint8_t { Fork = 1, Exec = 2, Exit = 3 };
enum class ExecVerdict : uint8_t {
  None = 0,        // re-check off
  Approved = 1,    // the binary is one the supervisor approved
  Mismatch = 2,    // approved for another file: the path was swapped after the check
  Unapproved = 3,  // no approval for the thread at all
  ArgsMismatch = 4,  // the approved file, but the checked argv changed after the check
};

// The most argv bytes an exec decision may rest on (SV_PROC_ARGS_LEN: what
// the re-check reads of the new image).
inline constexpr size_t kMaxCheckedExecArgs = 512;

// The hash the exec re-check compares the new image's argv against (FNV-1a
// 64 of `bytes`: arguments NUL-terminated, as the kernel lays them out).
uint64_t execArgsHash(std::string_view bytes);

struct ProcEvent {
  ProcEventType type = ProcEventType::Fork;
  ExecVerdict verdict = ExecVerdict::None;
  bool killed = false;       // SIGKILL sent before the binary ran
  bool kill_failed = false;  // bpf_send_signal refused (kill_err)
  bool audit_only = false;   // would have been killed (audit mode)
  bool args_truncated = false;
  int kill_err = 0;
  pid_t pid = 0, tgid = 0, ppid = 0;
  pid_t old_pid = 0;              // exec: the thread that called execve
  uint64_t start_time_ticks = 0;  // as /proc/PID/stat field 22 (ProcessInfo::start_time)
  ExecFileId file;                // exec: the binary about to run
  std::string comm;
  std::string filename;  // exec: the path as passed to execve (bprm->filename)
  std::vector<std::string> argv;
  uint64_t ktime_ns = 0;
};

struct ProcTrackerOptions {
  bool recheck = false;     // kill execs the supervisor did not approve
  bool audit_only = false;  // report a failed re-check, never kill
};

class ProcTracker {
 public:
  // Loads and attaches, scoped to cgroup_fd (a cgroup2 directory and below).
  // On failure nothing stays attached; the error carries libbpf's log tail.
  static Result<ProcTracker> load(int cgroup_fd, const ProcTrackerOptions& options);

  ProcTracker(ProcTracker&&) noexcept;
  ProcTracker& operator=(ProcTracker&&) noexcept;
  ~ProcTracker();

  // Records that thread `tid` (init pid namespace) may exec one of `files`;
  // its next exec consumes the approval. Call before answering CONTINUE.
  // With `args` (at most SV_PROC_ARGS_LEN bytes), the decision read argv too:
  // the new image's argv must start with exactly these bytes. Thread-safe
  // (one map update).
  Status approveExec(pid_t tid, std::span<const ExecFileId> files, std::string_view args = {});

  // The ring buffer's epoll fd: readable when events wait (for the libuv loop).
  int eventFd() const;
  // Drains pending events without blocking; returns how many, or -errno.
  // An exception thrown by on_event is rethrown here after the drain stops.
  int consume(const std::function<void(const ProcEvent&)>& on_event);
  uint64_t droppedEvents() const;
  uint64_t kills() const;
  bool recheck() const;

  // The load is shared by the host's sessions (proc_tracker.cpp): this
  // session's slot in it, and the id of the exec program that serves it.
  uint32_t slot() const;
  uint32_t execProgramId() const;
  // The supervisor pid a slot's claim names (0: free); for tests.
  uint32_t slotOwner(uint32_t slot) const;

 private:
  struct State;
  explicit ProcTracker(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

}  // namespace sv::tracer
