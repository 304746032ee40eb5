// TraceThread: the ptrace backend's tracing thread.
//
// The kernel ties a tracee to the thread that attached it, so one thread
// does every ptrace request: it seizes the set-up command before it may
// exec, then waits for the stops of every task of the tree (each new task
// is traced from its first instruction) and, for each seccomp stop, asks
// the same NotifyHandler the host backend uses and applies its verdict to
// the task's registers (ptrace_answer.h): fail or return a value without
// running the syscall, let it run, run an allowed open as openat2 of the
// decided path from the scratch region (tracer/ptrace/scratch.h; a task
// finding every slot of its address space taken stays stopped until one
// frees), or dup a held pipe. At each exec it judges the binary the kernel
// really loaded against the files the handler approved (killing the task
// before its first instruction when it is another one) and maps the scratch
// region into the new image. Signals reach the tree as they would untraced; a group stop is
// kept with PTRACE_LISTEN.
//
// The loop talks to it through exitFd(): the command's exit is reaped here
// (the tracer's wait does it, being a thread of the command's parent), so
// the thread reports it instead of the pidfd (Supervision::watchChild).
#pragma once

#include <pthread.h>
#include <signal.h>
#include <sys/types.h>

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "supervisor/audit/audit_log.h"
#include "supervisor/notify/notify_handler.h"
#include "supervisor/proc/process_info.h"
#include "supervisor/ptrace/ptrace_answer.h"

namespace sv::supervisor {

struct TraceOptions {
  bool audit_mode = false;  // an exec of another binary is reported, not killed
  bool quiet = false;       // no denial lines on stderr
  std::string process_root;  // the tree's root as we name it (ProcessCache::setProcessRoot)
};

class TraceThread {
 public:
  // Seizes `root` (set up, not yet exec'd) on a new thread and traces its
  // tree there with `handler`, whose answer must be `answer`. An error when
  // it can't be traced (EPERM: a debugger or strace -f has it already).
  static Result<std::unique_ptr<TraceThread>> start(NotifyHandler& handler, PtraceAnswer& answer,
                                                    AuditLog& audit, pid_t root,
                                                    TraceOptions options);

  // Kills what is left of the tree (the tracer's exit would too) and joins.
  ~TraceThread();
  TraceThread(const TraceThread&) = delete;
  TraceThread& operator=(const TraceThread&) = delete;

  // Readable once the command (the root process) exited; rootExit() then
  // has its waitid()-like status.
  int exitFd() const { return exit_fd_.get(); }
  std::optional<siginfo_t> rootExit() const;

 private:
  // A syscall's number and arguments as the task made it: what its
  // registers are given back at the exit of a replaced one.
  struct SyscallAsCalled {
    long nr = -1;
    uint64_t args[6] = {};
  };
  // One task (thread) of the tree.
  struct Task {
    uint64_t space = 0;      // its address space (Space); 0 until its creation event
    bool known = false;      // its creation event was seen (or it is the root)
    bool held = false;       // its first stop came first: it waits for that event
    bool to_exit = false;    // its syscall was replaced: resumed to its syscall-exit stop
    SyscallAsCalled call;    // the syscall of its last seccomp stop, as the task made it
    int slot = -1;           // the scratch slot its running open reads its path from
    std::optional<PtraceVerdict> waiting_open;  // an allowed open waiting for a free slot
    bool exec_judged = false;  // its execve was decided: the load is checked against:
    std::vector<tracer::ExecFileId> exec_files;
    std::string exec_args;  // the whole argv the decision read (the loader's program), or ""
  };
  // One address space: the tasks that share memory (threads, vfork).
  struct Space {
    bool scratch = false;  // the scratch region is mapped
    uint64_t used = 0;     // a bit per slot in use
    std::deque<pid_t> waiting;  // tasks stopped with an open until a slot frees, first first
    int tasks = 0;
    UniqueFd mem;          // its /proc/PID/mem, opened at first use
  };
  TraceThread(NotifyHandler& handler, PtraceAnswer& answer, AuditLog& audit, pid_t root,
              TraceOptions options);
  static void* main(void* self) noexcept;
  void run();
  void onStatus(pid_t tid, int status);
  void onExit(pid_t tid, int status);
  void onNewTask(pid_t parent, int event);
  void onExec(pid_t tid);
  void onSeccomp(pid_t tid);
  void onGuard(pid_t tid, const uint64_t (&args)[6], uint32_t nr);
  void apply(pid_t tid);
  // Runs the allowed open `open` of `tid` as openat2 from a free slot of
  // `space`; false when the task can't be written (it is then refused).
  bool runOpen(pid_t tid, Task& task, Space& space, const PtraceVerdict& open);
  // The exit of a syscall we replaced: the task's registers as it made the
  // call again, its scratch slot freed.
  void onSyscallExit(pid_t tid);
  // Runs `nr` with `args` instead of the task's syscall; false when the
  // registers can't be set.
  bool replaceSyscall(pid_t tid, Task& task, long nr, const uint64_t (&args)[6]);
  void resume(pid_t tid, int sig = 0);
  // The exec of `tid` loaded a binary the handler did not approve.
  void reportExecMismatch(pid_t tid, const std::string& binary, bool killed);
  uint64_t newSpace(bool scratch);
  void leaveSpace(uint64_t space);
  // Frees the task's slot and hands it to the first task waiting for one.
  void releaseSlot(Task& task);

  NotifyHandler& handler_;
  PtraceAnswer& answer_;
  AuditLog& audit_;
  const pid_t root_;
  const TraceOptions options_;
  ProcessCache processes_;
  std::unordered_map<pid_t, Task> tasks_;
  std::mutex tasks_mutex_;  // the thread holds it per stop; the destructor, to kill the tree
  std::unordered_map<uint64_t, Space> spaces_;
  uint64_t next_space_ = 2;  // 1: the supervisor's own, shared by the command until it execs
  uint64_t next_id_ = 0;
  UniqueFd exit_fd_;
  std::atomic<bool> root_exited_{false};
  siginfo_t root_exit_{};
  pthread_t thread_{};
  bool joinable_ = false;
};

}  // namespace sv::supervisor
