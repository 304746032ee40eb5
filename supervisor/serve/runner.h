// Session runners: the forked process that supervises one command of the
// exec daemon, as `supervise --` would (runSession, or a PreparedSession).
//
// A runner and the daemon share one socketpair, the control channel:
//   daemon → runner: a ready runner's hand-off (the request, who sent it,
//     and its stdin, stdout and stderr as SCM_RIGHTS); then at most one
//     abort byte (session.h, kAbort*), or EOF when the daemon is gone;
//   runner → daemon: one byte, the exit status, once the session's trail
//     has its end event. The runner's stdio is /dev/null from then on, so
//     the client has its status and its output's EOF while the runner
//     tears the session down (cgroup, BPF programs, threads).
// A runner that dies before that byte is reported from its exit status.
//
// A ready runner prepares a session before any request (PreparedSession:
// docs/serve.md, "Ready sessions") and waits for its hand-off; EOF instead
// retires it (torn down, exit 0).
#pragma once

#include <sys/types.h>

#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "supervisor/serve/protocol.h"
#include "supervisor/session/session.h"

namespace sv::supervisor::serve {

struct RunnerProcess {
  pid_t pid = -1;
  UniqueFd pidfd;
  UniqueFd control;  // the daemon's end, non-blocking
};

// A runner for `request` from now: `session` with its FromDaemon filled in,
// `stdio` the client's stdin, stdout and stderr.
Result<RunnerProcess> forkRunner(const SessionOptions& session, const ExecRequest& request,
                                 const std::vector<UniqueFd>& stdio);

// A runner that prepares a session under `session` (FromDaemon unset) and
// waits for handOff().
Result<RunnerProcess> forkReadyRunner(const SessionOptions& session);

// Gives a ready runner its command. Fails when the runner is gone, or has
// not taken the hand-off within a second (it may still be preparing: the
// socket buffer holds small requests, a large one must be read): the
// runner is then of no use, and the caller kills it.
Status handOff(const RunnerProcess& runner, const HandOff& handoff,
               const std::vector<UniqueFd>& stdio);

}  // namespace sv::supervisor::serve
