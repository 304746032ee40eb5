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

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/exit_codes.h"
#include "common/result.h"
#include "common/unique_fd.h"
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
    // Called with the exit status once the trail has its end event, before
    // the session's tear-down (the cgroup's removal, the BPF programs' and
    // threads' end): the runner answers its client then.
    std::function<void(int)> ended;
  };
  std::optional<FromDaemon> daemon;
};

inline constexpr char kAbortTimeout = 'T';
inline constexpr char kAbortDrain = 'D';
inline constexpr char kAbortClientGone = 'C';

// Exit codes of supervise itself (the command's own status otherwise).
using sv::kExitCannotRun;
using sv::kExitNotFound;
using sv::kExitPolicyError;
using sv::kExitSupervisorError;

// Runs the command under the policy; returns the exit status to exit with.
int runSession(const SessionOptions& options);

struct SessionState;  // session.cpp

// A session set up ahead of its command: the exec daemon's ready sessions
// (docs/serve.md, "Ready sessions"). prepare() does every step that does
// not depend on the command (probe, cgroup, backend, Landlock ruleset and
// seccomp program, kernel audit, network filter, DNS proxy, watchdog,
// process tracking); run() does the rest with `options` as they are then
// (command, FromDaemon) and the process's cwd, umask and environment of
// that moment, exactly as runSession() would have. What prepare() said on
// stderr is replayed on the stderr run() finds; a failure of prepare() is
// run()'s exit status. A prepared session that no longer fits the host —
// a Landlock rule's path now names another inode (or exists, or is gone) —
// is torn down and run() is runSession() from scratch; where the floor is a
// mount namespace (no Landlock; planned for the command's cwd) prepare()
// stops after the probe and run() is runSession() from scratch.
class PreparedSession {
 public:
  explicit PreparedSession(const SessionOptions& options);  // must outlive it
  ~PreparedSession();
  PreparedSession(const PreparedSession&) = delete;
  PreparedSession& operator=(const PreparedSession&) = delete;

  void prepare();
  int run();
  // Why run() would start from scratch; "" when the prepared set-up fits.
  std::string staleBecause() const;

 private:
  const SessionOptions& options_;
  std::unique_ptr<SessionState> state_;
  std::optional<int> failed_;
  std::string unpreparable_;  // why prepare() stopped after the probe
  UniqueFd said_;  // prepare()'s stderr
  std::vector<std::pair<std::string, std::optional<std::pair<dev_t, ino_t>>>> landlock_paths_;
};

// The audit log of a session under `policy` (the exec daemon's own trail
// too): every event's session fields (ids, host, policy digest, the client
// of a daemon's command, redaction), the policy's format and chain, the
// sinks of `options` and of the policy, opened. `policy_sha256`: policyDigest(policy).
Status openSessionAudit(std::optional<AuditLog>& audit, const SessionOptions& options,
                        const policy::Policy& policy, std::string session_id,
                        std::string policy_sha256);

}  // namespace sv::supervisor
