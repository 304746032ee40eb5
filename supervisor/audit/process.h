// ProcessInfo: who made a syscall, as the audit events report it. Part of
// the event model; filled from /proc by supervisor/proc/process_info.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sv::supervisor {

struct ProcessInfo {
  static constexpr uint32_t kUnknownId = UINT32_MAX;  // the kernel's "invalid uid" value

  int pid = -1;
  int tid = -1;
  int ppid = -1;            // -1: unknown (process gone)
  uint64_t start_time = 0;  // /proc/PID/stat field 22, clock ticks since boot; 0: unknown
  uint32_t uid = kUnknownId, euid = kUnknownId, gid = kUnknownId;
  std::string comm;     // the thread's comm (threads may rename themselves)
  std::string exe;      // readlink /proc/PID/exe, as seen from the supervisor's mount ns
  std::string cwd;      // readlink /proc/PID/task/TID/cwd
  std::string profile;  // policy profile, set by the supervisor's process table
  std::string parent_exe;  // readlink /proc/PPID/exe; empty when unknown
  std::vector<std::string> argv;
};

}  // namespace sv::supervisor
