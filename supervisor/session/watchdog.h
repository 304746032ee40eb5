// Watchdog: kills the session's cgroup if the supervisor dies.
//
// Seccomp alone does not take the tree down with the supervisor: a closed
// listener only makes pending and future notified syscalls fail (ENOSYS), and a
// process that makes none would run on unsupervised. So before launching, the
// supervisor forks a tiny watchdog in its own session that blocks on a pipe;
// when the supervisor exits for any reason (SIGKILL included) the pipe reaches
// EOF and the watchdog writes cgroup.kill, waits for the cgroup to empty and
// removes it.
#pragma once

#include <string>

#include "common/result.h"
#include "common/unique_fd.h"

namespace sv::supervisor {

class Watchdog {
 public:
  // Forks the watchdog for the cgroup at `cgroup_path` (absolute, in cgroupfs).
  // `also_remove`: a second (v1 pids) cgroup directory to remove once the
  // tree is dead; "" for none.
  static Result<Watchdog> start(const std::string& cgroup_path,
                                const std::string& also_remove = {});
  Watchdog(Watchdog&&) = default;
  Watchdog& operator=(Watchdog&&) = default;
  // Normal end: the session already killed and removed the cgroup; closing the
  // pipe lets the watchdog find nothing to do and exit.
  ~Watchdog() = default;

 private:
  explicit Watchdog(UniqueFd pipe) : pipe_(std::move(pipe)) {}
  UniqueFd pipe_;  // write end; never written, only closed
};

}  // namespace sv::supervisor
