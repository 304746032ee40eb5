// `supervise exec`: one command through the exec daemon (docs/serve.md).
//
// Connects to the daemon's socket, sends the request with this process's
// stdin, stdout and stderr (SCM_RIGHTS: the command's output streams
// straight to them, nothing is copied), forwards SIGINT, SIGTERM, SIGHUP and
// SIGQUIT, and exits with the command's status — the same codes as
// `supervise --`; 124 when --timeout killed it; 125 when the daemon could
// not be reached or refused.
#pragma once

#include <string>

#include "supervisor/serve/protocol.h"

namespace sv::supervisor::serve {

// The exit status of --timeout, as timeout(1) has it.
inline constexpr int kExitTimedOut = 124;

int runExecClient(const std::string& socket_path, const ExecRequest& request);

}  // namespace sv::supervisor::serve
