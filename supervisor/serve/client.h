// `supervise exec`: one command through the exec daemon (docs/serve.md).
//
// Connects to the daemon's socket, sends the request with the command's
// stdin, stdout and stderr (SCM_RIGHTS: the command's output streams
// straight to them, nothing is copied), forwards SIGINT, SIGTERM, SIGHUP and
// SIGQUIT, and ends with the command's status — the same codes as
// `supervise --`; 124 when --timeout killed it; 125 when the daemon could
// not be reached or refused.
#pragma once

#include <string>

#include "common/exit_codes.h"
#include "common/result.h"
#include "supervisor/serve/protocol.h"

namespace sv::supervisor::serve {

// The exit status of --timeout, as timeout(1) has it.
inline constexpr int kExitTimedOut = 124;

struct ExecOutcome {
  int status = 0;          // the command's, as `supervise --` exits with it
  bool timed_out = false;  // --timeout killed it (status is then its signal's)
  std::string command_id;
  std::string policy_name, policy_sha256;  // what the daemon ran it under
};

// Runs `request` through the daemon with `stdio` (stdin, stdout, stderr fds
// the command gets) and waits for its end. With `forward_signals`, SIGINT,
// SIGTERM, SIGHUP and SIGQUIT sent to this process are relayed to the
// command meanwhile (they are blocked here until it ends). An Error when the
// daemon cannot be reached, refuses (code = the status to exit with, text =
// its reason) or goes away. `cancel_fd` (-1: none) readable ends the wait:
// the connection closes, which the daemon takes as the client gone (it kills
// the command), and the Error's code is ECANCELED.
Result<ExecOutcome> execThroughDaemon(const std::string& socket_path, const ExecRequest& request,
                                      const int (&stdio)[3], bool forward_signals,
                                      int cancel_fd = -1);

// `supervise exec`: execThroughDaemon() with this process's stdio; prints
// what went wrong and returns the status to exit with.
int runExecClient(const std::string& socket_path, const ExecRequest& request);

// Where `supervise serve` listens and `supervise exec` connects without
// --socket: $SUPERVISE_SOCKET, else $XDG_RUNTIME_DIR/supervise/exec.sock,
// else /run/supervise/serve-<uid>/exec.sock for root and
// /tmp/supervise-<uid>/exec.sock for anyone else.
std::string defaultSocketPath();

}  // namespace sv::supervisor::serve
