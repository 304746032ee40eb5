// /proc/self/mountinfo: read once per process, parsed, and a private mount
// namespace for probes that mount.
//
// The mounts supervise looks up at start-up (cgroup2, the v1 pids hierarchy,
// bpffs) do not move during a session, and each read makes the kernel format
// every mount of the host (a d_path apiece): four reads cost ~0.5 ms of a
// start-up on the test VM. Code that needs the mounts as they are now (after
// mounting something) reads afresh; a mount id seen in fdinfo is looked up
// here first, and afresh on a miss or once the table changed (mount ids are
// reused: exec_file_id.cpp).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace sv::tracer {

// The snapshot ("" when unreadable), taken at the first call.
const std::string& mountinfoOnce();
// The /proc/self/mountinfo fd that snapshot was read from, kept open (-1 if
// it could not be): poll it for POLLPRI to learn that mounts changed since,
// pread it from 0 for the table now.
int mountinfoOnceFd();

// /proc/self/mountinfo as it is now.
Result<std::string> mountinfoNow();

// One mountinfo line: "id parent major:minor root mount-point options
// [optional...] - fstype source super-options", paths unescaped.
struct MountEntry {
  std::string root;  // which directory of the filesystem is mounted there
  std::string mount_point;
  std::string fstype;
  std::string super_options;  // "rw,nsdelegate,memory_recursiveprot"
};

// The first entry of `mountinfo` of type `fstype` that `accept` (if given) takes.
std::optional<MountEntry> findMountEntry(
    std::string_view mountinfo, std::string_view fstype,
    const std::function<bool(const MountEntry&)>& accept = nullptr);

// Moves the calling thread into a mount namespace of its own whose mounts
// do not propagate back (MS_SLAVE, recursively): what it mounts there goes
// when the process exits, and the host's mount table never changes.
// Needs CAP_SYS_ADMIN. For `doctor`, which probes what a session would mount.
Status enterPrivateMountNamespace();

}  // namespace sv::tracer
