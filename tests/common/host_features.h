// missingSessionFeature(): why this host cannot run a supervised session in a
// test, or "" when it can. Tests that run the real binary skip with this text
// (GTEST_SKIP) so a skip always names the missing piece.
#pragma once

#include <linux/landlock.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include "tests/common/run_command.h"

namespace sv::test {

inline std::string missingSessionFeature(const std::string& supervise, long min_landlock_abi = 1) {
  if (::geteuid() != 0) return "needs root: euid " + std::to_string(::geteuid());
  const long abi =
      ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < min_landlock_abi)
    return "needs Landlock ABI >= " + std::to_string(min_landlock_abi) + ": got " +
           std::to_string(abi);
  if (slurp("/proc/self/mountinfo").find(" - cgroup2 ") == std::string::npos)
    return "needs cgroup v2: no cgroup2 line in /proc/self/mountinfo";
  if (slurp("/proc/sys/kernel/seccomp/actions_avail").find("user_notif") == std::string::npos)
    return "needs seccomp user-notify: not in actions_avail";
  if (::access(supervise.c_str(), X_OK) != 0) return "needs " + supervise;
  return "";
}

}  // namespace sv::test
