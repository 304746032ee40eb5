// ExecDaemon: `supervise serve` (docs/serve.md).
//
// One long-lived process that loaded and compiled the policy once and runs
// every command sent to its unix socket in a session of its own: a session
// runner per command (runner.h) — one set up ahead of the request where a
// ready one fits, else forked for it — with the request's argv, cwd,
// environment and stdio: its own cgroup, Landlock domain, seccomp listener
// and audit session, every event carrying the command_id and the client's
// pid and uid. The daemon itself only accepts,
// checks who connects, reads requests, forwards signals and reports each
// command's exit status; a crashed command, runner or client never takes it
// down.
//
// Set-up, in order: load the policy → the socket's directory (0700, ours) →
// the socket (0600; a stale one replaced, a live one refused) → the
// daemon's own audit trail (start, reloads, refused clients, end) → the
// libuv loop until SIGTERM/SIGINT drains it. SIGHUP reloads the policy for
// commands that start afterwards (a policy that fails to load is refused
// and the old one stays) and reopens the audit files.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "policy/model.h"
#include "supervisor/serve/client.h"  // defaultSocketPath()
#include "supervisor/session/session.h"

namespace sv::supervisor::serve {

struct DaemonOptions {
  std::string socket_path;
  std::vector<uid_t> allowed_uids;  // empty: the daemon's own uid only
  size_t max_commands = 32;         // at once, all clients together
  size_t max_per_client = 8;        // at once, per client uid
  // Sessions set up ahead of the requests (runner.h, docs/serve.md "Ready
  // sessions"); 0: each command sets its own up when it comes.
  size_t ready_sessions = 1;
  // Loads the effective policy: at start and on each SIGHUP. Diagnostics go
  // to stderr; an error keeps the policy in effect.
  std::function<Result<std::shared_ptr<const policy::Policy>>()> load_policy;
  // The template of each command's session: audit sinks, quiet, backend.
  SessionOptions session;
  std::vector<std::string> argv;  // the daemon's own command line, for its start event
};

// Serves until SIGTERM or SIGINT; the exit status for `supervise serve`.
int runDaemon(const DaemonOptions& options);


}  // namespace sv::supervisor::serve
