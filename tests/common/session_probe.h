// What the e2e tests of the real binary share: the probe for what a session
// needs (each test skips, saying why, without it) and the audit-file reader.
#pragma once

#include <linux/landlock.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/common/run_command.h"

namespace sv::test {

// "" when this host can run a session of `supervise` (root, Landlock, a
// cgroup2 mount, seccomp user-notify, the binary); else what is missing.
inline std::string sessionMissing(const char* supervise) {
  if (::geteuid() != 0) return "needs root: euid " + std::to_string(::geteuid());
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi <= 0)
    return std::string("needs Landlock: landlock_create_ruleset(VERSION): ") + std::strerror(errno);
  if (slurp("/proc/self/mountinfo").find(" - cgroup2 ") == std::string::npos)
    return "needs cgroup v2: no cgroup2 mount in /proc/self/mountinfo";
  if (slurp("/proc/sys/kernel/seccomp/actions_avail").find("user_notif") == std::string::npos)
    return "needs seccomp user-notify: not in /proc/sys/kernel/seccomp/actions_avail";
  if (::access(supervise, X_OK) != 0) return std::string("needs the supervise binary at ") + supervise;
  return "";
}

// The JSON lines of an audit file (a line that is not JSON fails the test).
inline std::vector<nlohmann::json> readAuditEvents(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::istringstream in(slurp(path));
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) {
      ADD_FAILURE() << "audit line is not JSON: " << line;
      continue;
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace sv::test
