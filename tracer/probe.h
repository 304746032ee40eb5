// Host feature probe: what this kernel really lets the supervisor do.
//
// Every probe is a real attempt (install a user-notify filter in a throwaway
// child, create a Landlock ruleset, create and kill a cgroup), never a kernel
// version check: distributions backport and lock down features independently.
// `supervise doctor` prints the result; the session uses it to choose backends
// and to fail closed when a mechanism the policy needs is missing.
//
// Test override: the environment variable SUPERVISE_TEST_DISABLE holds a comma
// separated list of features to pretend are missing: `landlock`,
// `seccomp-notify`, `cgroup`, `bpf`. A disabled feature is reported as
// "unavailable (disabled by SUPERVISE_TEST_DISABLE)" by probeHost() and by the
// individual entry points (landlockAbi() returns 0, findCgroup2Mount() fails),
// so fail-closed paths can be tested on a fully capable host.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace sv::tracer {

struct HostFeatures {
  bool seccomp_notify = false;      // filter with SECCOMP_FILTER_FLAG_NEW_LISTENER installs
  bool notify_addfd = false;        // SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SEND
  bool notify_sync_wakeup = false;  // SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP accepted
  bool seccomp_trace = false;       // SECCOMP_RET_TRACE and ptrace usable: the ptrace backend
  int landlock_abi = 0;             // 0 = unavailable
  std::string cgroup2_mount;        // empty = no cgroup2 hierarchy found
  bool cgroup2_by_supervise = false;  // none was mounted: supervise's own (kCgroup2MountDir)
  bool cgroup_kill = false;         // cgroup.kill works in a session cgroup
  bool cgroup_writable = false;     // we can create a session cgroup below our own
  std::vector<std::string> notes;   // one human-readable line per missing/odd feature
};

// Runs every probe. Forks a short-lived child (so: not async-signal-safe; call
// it from normal context, before starting threads if possible). Takes a few ms.
HostFeatures probeHost();

// The session's probe: the same questions without the throwaway child and
// cgroup (~1-3 ms of start-up), because the session's own set-up is the real
// attempt. User-notify is asked with SECCOMP_GET_ACTION_AVAIL and ADDFD|SEND
// must then be confirmed on the session's listener with
// notifyAddFdSendSupported(); cgroup_writable is a promise the session proves
// by creating its cgroup; cgroup_kill and notify_sync_wakeup stay false
// (unknown). Use probeHost() where an unproven answer is not good enough.
HostFeatures probeHostForSession();

// True when `feature` is listed in SUPERVISE_TEST_DISABLE. Not async-signal-safe
// (getenv); call in the parent.
bool testDisabled(std::string_view feature);

// The text probes report for a feature disabled by the test override.
inline constexpr const char* kDisabledByTest = "unavailable (disabled by SUPERVISE_TEST_DISABLE)";

// ---- the doctor's further questions (supervisor/host/host_report.cpp) ----

// "EPERM (Operation not permitted)": the errno name is what an operator greps for.
std::string errnoText(int err);

// A securityfs file (/sys/kernel/security/<name>), trailing newline removed.
// Where securityfs is not mounted, a child mounts it in a private mount
// namespace to read it, so the operator's mount table never changes.
Result<std::string> readSecurityFile(const std::string& name);

// The active LSMs in boot order: lsm_list_modules(2) where the kernel has it,
// else /sys/kernel/security/lsm. *how says which answered.
Result<std::vector<std::string>> activeLsms(std::string* how);

}  // namespace sv::tracer
