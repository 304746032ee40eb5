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

// Where supervise mounts the cgroup2 filesystem when its mount namespace has
// none: `ip netns exec` remounts /sys in a mount namespace of its own (the
// cgroup mounts under it vanish), containers may mount none, and some hosts
// mount only cgroup v1. Documented (README, docs/enforcement.md), so a later
// session of the same mount namespace finds it again in mountinfo.
inline constexpr char kCgroup2MountDir[] = "/run/supervise/cgroup2";

// The one lookup of the cgroup2 hierarchy, for everything that uses it (the
// session cgroup, the keepers, the BPF probes, the tests).
struct Cgroup2Mount {
  std::string mount_point;
  std::string root;  // which directory of the hierarchy is mounted there ("/" mostly)
  // Mounted at kCgroup2MountDir because none was: by this process, or by an
  // earlier session in this mount namespace.
  bool by_supervise = false;
};

// The cgroup2 mount from /proc/self/mountinfo (never hard-coded: hybrid hosts
// mount it at /sys/fs/cgroup/unified). Where none is listed, mounts one at
// kCgroup2MountDir (mkdir root-owned, 0700 /run/supervise, 0755 below) with
// the hierarchy's own flags (cgroup2RootFlags) and returns that. There is one
// cgroup2 hierarchy per host: the new mount shows the same tree, and
// /proc/self/cgroup's "0::" path names our cgroup in it. Found once per
// process. Fails with ENOSYS when disabled by SUPERVISE_TEST_DISABLE=cgroup;
// else with the errno of the step that failed and a message saying what
// happened and what to do (no cgroup2 in /proc/filesystems, no
// CAP_SYS_ADMIN, mount refused).
Result<Cgroup2Mount> cgroup2Mount();

// cgroup2Mount()->mount_point.
Result<std::string> findCgroup2Mount();

// True when /proc/self/mountinfo lists a cgroup2 mount now (nothing mounted,
// no test override): whether cgroup2Mount() would have to mount one.
bool cgroup2Listed();

// The hierarchy-wide flags (nsdelegate, memory_recursiveprot, ...) of the
// first cgroup2 mount in `mountinfo`, as mount data: "" when none. Mounting
// cgroup2 from the initial cgroup namespace sets the hierarchy's flags to the
// ones given, for every mount of the host (kernel/cgroup/cgroup.c,
// apply_cgroup_root_flags): a bare mount would turn off systemd's
// nsdelegate. cgroup2Mount() passes the flags of pid 1's mount.
std::string cgroup2RootFlags(std::string_view mountinfo);

// The supervisor's own cgroup directory (absolute path under the mount),
// from the "0::" line of /proc/self/cgroup. Fails with ENOENT when that
// cgroup was removed.
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
