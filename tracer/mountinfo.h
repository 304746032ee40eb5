// /proc/self/mountinfo, read once per process.
//
// The mounts supervise looks up at start-up (cgroup2, the v1 pids hierarchy,
// bpffs) do not move during a session, and each read makes the kernel format
// every mount of the host (a d_path apiece): four reads cost ~0.5 ms of a
// start-up on the test VM. Code that needs the mounts as they are now (after
// mounting something) reads afresh; a mount id seen in fdinfo is looked up
// here first and afresh on a miss (exec_file_id.cpp).
#pragma once

#include <string>

namespace sv::tracer {

// The snapshot ("" when unreadable), taken at the first call.
const std::string& mountinfoOnce();

}  // namespace sv::tracer
