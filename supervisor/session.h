// Session: one supervised run of a command tree, from probe to exit status.
//
//   probe host → refuse (exit 125) if the policy needs what is missing
//   → session cgroup + watchdog → cgroup BPF network filter
//   → Landlock ruleset + seccomp program → launch (launcher.h)
//   → libuv loop: user-notify fd, network events, the command's pidfd,
//     forwarded signals, audit sinks → exit status.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "policy/model.h"

namespace sv::supervisor {

struct SessionOptions {
  std::shared_ptr<const policy::Policy> policy;
  std::vector<std::string> command;      // argv of the command
  std::vector<std::string> audit_files;  // --audit-file
  std::vector<int> audit_fds;            // --audit-fd
  bool audit_stdout = false;
  bool quiet = false;                    // no denial lines on stderr
  std::string backend = "auto";          // --backend auto|host|bpf-lsm (lsm_backend.h)
};

// Exit codes of supervise itself (the command's own status otherwise).
inline constexpr int kExitPolicyError = 2;
inline constexpr int kExitSupervisorError = 125;
inline constexpr int kExitCannotRun = 126;
inline constexpr int kExitNotFound = 127;

// Runs the command under the policy; returns the exit status to exit with.
int runSession(const SessionOptions& options);

}  // namespace sv::supervisor
