// Session cgroups: one cgroup v2 directory per supervised command tree.
//
// The cgroup is what makes "the tree" a kernel object: the cgroup socket BPF
// programs attach to it, cgroup.kill ends every process in it at once (no
// fork-race with a pid walk), and cgroup.events says when the last one is gone.
// It is created below the supervisor's own cgroup (the "0::" line of
// /proc/self/cgroup), so it works under systemd delegation and in containers.
// None of these functions is async-signal-safe except where noted.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"

namespace sv::tracer {

// The cgroup2 mount point from /proc/self/mountinfo (never hard-coded: hybrid
// hosts mount it at /sys/fs/cgroup/unified). Fails with ENOENT when there is
// no cgroup2 mount, ENOSYS when disabled by SUPERVISE_TEST_DISABLE=cgroup.
Result<std::string> findCgroup2Mount();

// The supervisor's own cgroup directory (absolute path under the mount).
Result<std::string> ownCgroupPath();

class SessionCgroup {
 public:
  // mkdir <own cgroup>/<name>. The error says why when the hierarchy is not
  // writable (not root, no delegation, read-only /sys/fs/cgroup).
  static Result<SessionCgroup> create(std::string_view name);

  SessionCgroup(SessionCgroup&& other) noexcept;
  SessionCgroup& operator=(SessionCgroup&& other) noexcept;
  SessionCgroup(const SessionCgroup&) = delete;
  SessionCgroup& operator=(const SessionCgroup&) = delete;
  // Kills what is left, waits up to ~1 s for the cgroup to empty, rmdirs.
  ~SessionCgroup();

  const std::string& path() const { return path_; }
  // O_RDONLY|O_DIRECTORY fd: for clone3(CLONE_INTO_CGROUP) and BPF cgroup attach.
  int dirFd() const { return dir_.get(); }

  // Moves `pid` in via cgroup.procs (when clone3 CLONE_INTO_CGROUP is not used).
  Status addProcess(pid_t pid);

  // mkdir <session>/<name>: a child cgroup, which the programs attached to
  // the session's run for too (per-profile network plans). Removed with the
  // session. Returns its path.
  Result<std::string> addChild(std::string_view name);
  // Moves the thread group of `pid` into the child `name` ("" = the session
  // cgroup itself). Writes cgroup.procs, which waits for an RCU grace period
  // (8-18 ms here): for profile switches, never on the start-up path.
  Status moveProcess(std::string_view name, pid_t pid);

  // SIGKILLs every process: cgroup.kill (5.14), else SIGKILL of each pid in
  // cgroup.procs until it stays empty (a forking tree may add pids meanwhile).
  Status kill();
  // The fallback alone (public so it can be tested on hosts with cgroup.kill).
  // Returns once cgroup.procs reads empty; processes may still be exiting.
  Status killEachProcess();
  // cgroup.events "populated": any live process in this cgroup or below.
  Result<bool> populated();
  // pids.max; fails with ENOTSUP and a reason when the pids controller is not
  // enabled for this cgroup (e.g. bound to a v1 hierarchy on hybrid hosts).
  Status setPidsMax(int max);

 private:
  SessionCgroup(std::string path, UniqueFd dir) : path_(std::move(path)), dir_(std::move(dir)) {}
  void destroy();

  std::string path_;
  UniqueFd dir_;
  std::vector<std::string> children_;  // addChild's names
};

// A pids limit where the session cgroup has none: on hybrid hosts the pids
// controller is bound to a cgroup v1 hierarchy, which clone3's
// CLONE_INTO_CGROUP can't target. This is a v1 "pids" cgroup for the session
// that the command joins itself before exec, so its whole tree is counted.
// It joins through `tasks`, not `cgroup.procs`: "0" there moves only the
// calling thread (the command is single-threaded then), which the kernel does
// without the threadgroup rwsem's write side, i.e. without waiting for an
// RCU grace period (measured here: 0.03 ms instead of 8-18 ms per start).
// Removed on destruction, once the tree is gone.
class PidsCgroupV1 {
 public:
  // mkdir <own v1 pids cgroup>/<name>, pids.max = max.
  static Result<PidsCgroupV1> create(std::string_view name, int max);

  PidsCgroupV1(PidsCgroupV1&& other) noexcept;
  PidsCgroupV1& operator=(PidsCgroupV1&&) = delete;
  ~PidsCgroupV1();

  const std::string& path() const { return path_; }
  // O_WRONLY `tasks`, for the child to write "0" to.
  int tasksFd() const { return tasks_.get(); }

 private:
  PidsCgroupV1(std::string path, UniqueFd tasks) : path_(std::move(path)), tasks_(std::move(tasks)) {}
  std::string path_;
  UniqueFd tasks_;
};

// The id the kernel gives the cgroup2 directory `path`
// (bpf_get_current_cgroup_id of its processes).
Result<uint64_t> cgroupId(const std::string& path);

// The cgroup2 directory of the calling process, found through
// /proc/self/mountinfo and /proc/self/cgroup (never a hard-coded mount point).
Result<std::string> currentCgroup2Dir();

// A cgroup created under a parent and removed on destruction (after its
// processes have exited). Used by the probe and the tests; the session's own
// cgroup is managed elsewhere.
class ScratchCgroup {
 public:
  static Result<ScratchCgroup> create(const std::string& parent_dir, const std::string& prefix);
  ScratchCgroup(ScratchCgroup&& o) noexcept
      : path_(std::exchange(o.path_, {})), fd_(std::move(o.fd_)) {}
  ScratchCgroup& operator=(ScratchCgroup&&) = delete;
  ~ScratchCgroup();

  const std::string& path() const { return path_; }
  int fd() const { return fd_.get(); }
  // Moves a process in (writes cgroup.procs); pid 0 is the caller.
  Status addProcess(pid_t pid) const;

 private:
  ScratchCgroup(std::string path, UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}
  std::string path_;
  UniqueFd fd_;
};

}  // namespace sv::tracer
