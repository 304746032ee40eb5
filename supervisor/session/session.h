// Session: one supervised run of a command tree, from probe to exit status.
//
// The steps, in order (session.cpp, one function each):
//   find the command → probe the host → session cgroup → backend choice
//   (bpf-lsm or host) → Landlock ruleset, seccomp program, capabilities →
//   launch (the child sets itself up and waits, launcher.h) → network filter
//   → DNS proxy → fail closed if the policy needs what is missing (exit 125)
//   → audit log → watchdog → process tracking → session start event → the
//   child's set-up → user-notify → event sources on the loop → let the
//   command go → the libuv loop until it exits → exit status.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "policy/model.h"
#include "supervisor/audit/audit_log.h"

namespace sv::supervisor {

struct SessionOptions {
  std::shared_ptr<const policy::Policy> policy;
  std::vector<std::string> command;      // argv of the command
  std::vector<std::string> audit_files;  // --audit-file
  std::vector<int> audit_fds;            // --audit-fd
  bool audit_stdout = false;
  bool quiet = false;                    // no denial lines on stderr
  std::string backend = "auto";          // --backend auto|host|bpf-lsm (lsm_backend.h)

  // Set by `supervise serve` for each command it runs (supervisor/serve/,
  // docs/serve.md): who asked, in every event, and how the daemon ends it.
  struct FromDaemon {
    std::string command_id;
    int client_pid = -1;
    int64_t client_uid = -1;
    // Readable — one byte, or EOF when the daemon is gone — means: end the
    // command now (the whole tree is killed; the trail still gets its end).
    // The byte says why: kAbortTimeout, kAbortDrain, else the client left.
    int abort_fd = -1;
    // The profile the command starts in ("" = the base policy); one the
    // policy has (the daemon checks).
    std::string profile;
  };
  std::optional<FromDaemon> daemon;
};

inline constexpr char kAbortTimeout = 'T';
inline constexpr char kAbortDrain = 'D';
inline constexpr char kAbortClientGone = 'C';

// Exit codes of supervise itself (the command's own status otherwise).
inline constexpr int kExitPolicyError = 2;
inline constexpr int kExitSupervisorError = 125;
inline constexpr int kExitCannotRun = 126;
inline constexpr int kExitNotFound = 127;

// Runs the command under the policy; returns the exit status to exit with.
int runSession(const SessionOptions& options);

// The audit log of a session under `policy` (the exec daemon's own trail
// too): every event's session fields (ids, host, policy digest, the client
// of a daemon's command, redaction), the policy's format and chain, the
// sinks of `options` and of the policy, opened.
Status openSessionAudit(std::optional<AuditLog>& audit, const SessionOptions& options,
                        const policy::Policy& policy, std::string session_id);

}  // namespace sv::supervisor
