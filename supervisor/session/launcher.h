// Launcher: starts the command inside its sandbox.
//
// The parent prepares everything that may allocate or fail loudly (the exe
// path, the Landlock ruleset, the seccomp program); the child, between clone3
// and execve, only makes raw syscalls in a fixed order:
//   no_new_privs → mount floor (where Landlock is missing) → Landlock → drop capabilities → seccomp (NEW_LISTENER)
//   → send the listener to the parent → wait for the go → execve.
// The supervisor finishes its own set-up (network, audit, watchdog) while
// the child does this, and says go when everything is in place.
// clone3(CLONE_INTO_CGROUP) puts the child in the session cgroup atomically,
// so no process of the tree ever runs outside it; CLONE_PIDFD gives the loop a
// race-free handle on it.
//
// The child shares supervise's memory until it execs (CLONE_VM|CLONE_VFORK,
// like posix_spawn; clone_shared_vm.h says why). The thread that clones it is
// suspended until that exec, which waits for the notify thread's answer, so
// a thread of its own does the clone: the command's parent, which then waits
// for the session to end (the kernel's parent-death signal follows that
// thread, not the process).
#pragma once

#include <linux/filter.h>
#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "tracer/mount_floor.h"

namespace sv::supervisor {

struct LaunchSpec {
  std::string exe;                // absolute path, resolved by the parent
  std::vector<std::string> argv;  // argv[0] as the user wrote it
  std::vector<std::string> env;
  int cgroup_fd = -1;             // -1: stay in the supervisor's cgroup (unsafe fallback only)
  int pids_cgroup_tasks_fd = -1;  // a v1 pids cgroup's `tasks` the child joins; -1: none
  int landlock_ruleset_fd = -1;   // -1: no Landlock (unsafe fallback only)
  unsigned landlock_flags = 0;    // landlock_restrict_self() flags (the audit log flag)
  // The roots as a private mount namespace (mount_floor.h); null: none.
  const tracer::MountFloorPlan* mount_floor = nullptr;
  // A mount namespace of the command's own, slaved to the host's, where the
  // protected names get bound later (write_recheck.h).
  bool own_mount_namespace = false;
  const std::vector<sock_filter>* seccomp_filter = nullptr;  // null: no seccomp (unsafe fallback)
  // Installed with SECCOMP_FILTER_FLAG_LOG on top of seccomp_filter, so the
  // kernel records each refusal (kernel_denials.h); null: none.
  const std::vector<sock_filter>* seccomp_log_filter = nullptr;
  bool drop_capabilities = true;
  uint64_t keep_capabilities = 0;
  sigset_t child_sigmask{};       // the mask the command starts with
};

class CommandParent;  // launcher.cpp

struct Launched {
  pid_t pid = -1;
  UniqueFd pidfd;
  UniqueFd listener;  // seccomp user-notify fd; invalid without seccomp
  // Destroying it ends the command's parent thread and, through the parent-death
  // signal, the command if it still runs.
  std::unique_ptr<CommandParent> parent;

  Launched();
  Launched(Launched&&) noexcept;
  Launched& operator=(Launched&&) noexcept;
  ~Launched();
};

// Starts the child, which sets itself up meanwhile: pid, pidfd and listener
// are known after awaitSetUp(). The command runs only after startCommand();
// a Launched destroyed before it makes the child leave (exit 125) unrun.
Result<Launched> launch(const LaunchSpec& spec);

// Waits for the child's set-up. A failure in the child before that is
// printed by the child itself ("supervise: <step>: <error>", exit 125) and
// returned here with its exit status.
Status awaitSetUp(Launched& launched);

// Lets the set-up child execve the command; a failing execve exits 126 (127
// for ENOENT).
Status startCommand(Launched& launched);

// The command has exited (reaped): its parent thread may end now, while the
// session tears down, rather than be woken and waited for at the very end.
void commandExited(Launched& launched);

// Ends the command's parent thread (joined), once the command has exited.
void endCommandParent(Launched& launched);

// execvp-like lookup done by the parent, so "not found" is exit 127 with a
// clear message before anything starts.
Result<std::string> findExecutable(const std::string& name, const std::string& path_env);

}  // namespace sv::supervisor
