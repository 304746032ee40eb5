// Write opens the kernel re-checks (docs/enforcement.md, "Write opens the
// kernel re-checks").
//
// CONTINUE lets the kernel read an open's path again, so a thread of the
// tree could swap it after the decision. Where every protected name that
// exists is bound read-only in the command's own mount namespace, and
// Landlock holds the roots, a swapped path reaches only what the kernel
// itself refuses or what the policy allows anyway; the handler may then let
// an allowed open for write of an existing file run in the kernel instead
// of emulating it (six supervisor syscalls instead of nine).
//
// In two parts, so that start-up pays for no walk of the workspace:
// - at the launch, planWriteRecheck() checks what is cheap to check, and
//   the command gets a mount namespace of its own (nothing bound yet: every
//   write open is emulated as before);
// - once the command runs, a WriteRecheck walks for the protected names on a
//   thread of its own, binds them read-only in that namespace from a helper
//   process, and only then tells the handler to let write opens through.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "policy/compile.h"
#include "policy/model.h"
#include "tracer/protected_names.h"

namespace sv::supervisor {

struct WriteRecheckInputs {
  const policy::Policy& policy;
  const policy::LandlockPlan& landlock;
  bool landlock_ruleset = false;  // Landlock holds the roots (not the mount floor, not unsafe)
  bool notify_decides_files = false;  // seccomp user-notify (not ptrace, not bpf-lsm)
  std::string cwd;                    // the command's working directory
  std::string session_cgroup;         // its name (inSessionCgroup): whose fds to check
};

// What the walk needs, and what the handler may then let through.
struct WriteRecheckPlan {
  std::vector<std::string> writable_dirs;  // the writable roots (directories, once checked)
  std::vector<policy::PathRule> protect;   // self-protection, then the deny-write rules
  size_t self_protect_rules = 0;           // how many of `protect` are self-protection
  std::string cwd;
  std::string session_cgroup;
  std::string process_root;  // the command's root as we name it, once known
  bool read_write = false;  // O_RDWR too: no rule denies reading
};

// At the launch, only what costs no system call to check: a plan, or (the
// error's message) why this session emulates every write open as before.
Result<WriteRecheckPlan> planWriteRecheck(const WriteRecheckInputs& in);

// Before the walk, once the command runs: supervise's own files below a
// writable root all exist (its audit files are open by then), and no fd the
// command inherited leads past the binds (a directory, a protected file).
Status checkBeforeTheWalk(WriteRecheckPlan& plan);

// That check, then the walk for the names to bind: every protected name that
// exists, or why not (a walk over its budget, a protected FIFO or device).
// `cancel` stops it.
Result<tracer::ProtectedNames> findNamesToBind(WriteRecheckPlan& plan,
                                               const std::atomic<bool>* cancel = nullptr);

// From a helper process that joins the mount namespace of the process
// `pidfd` names and enters the command's root (rootFd()): binds `names`
// read-only there.
Status bindReadOnlyIn(int pidfd, const std::vector<std::string>& names);

// After the binds: no task of the session holds, as an fd, cwd or root, a
// protected file or directory (or anything below one) reached before its
// bind existed. Such a handle leads past the bind: /proc/self/fd/N reopens
// the file on the mount it was opened on, and a walk from a directory below
// the bind's mount point never crosses it. `binds` are the names bound.
Status nothingHeldPastTheBinds(const WriteRecheckPlan& plan,
                               const std::vector<std::string>& binds);

// All three: the walk, the binds, the check; false when one could not be done.
bool bindProtectedNames(WriteRecheckPlan& plan, int pidfd,
                        const std::atomic<bool>* cancel = nullptr);

// The second part, on a thread: after `delay` (a command done by then never
// pays for the walk), walk, bind, then call `ready` (from that thread).
// Destroying it stops the walk and waits for the thread.
class WriteRecheck {
 public:
  // `pidfd`: the command's, whose mount namespace gets the binds.
  WriteRecheck(WriteRecheckPlan plan, UniqueFd pidfd, std::chrono::milliseconds delay,
               std::function<void()> ready);
  ~WriteRecheck();
  WriteRecheck(const WriteRecheck&) = delete;
  WriteRecheck& operator=(const WriteRecheck&) = delete;

 private:
  void run(std::chrono::milliseconds delay, const std::function<void()>& ready);

  WriteRecheckPlan plan_;
  UniqueFd pidfd_;
  std::atomic<bool> cancel_{false};
  std::mutex mu_;
  std::condition_variable wake_;
  std::thread thread_;
};

}  // namespace sv::supervisor
