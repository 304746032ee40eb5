// runCaptured(): one command through the exec daemon with its output
// captured, for the MCP server's `run` tool.
//
// The command gets /dev/null as stdin and a pipe each for stdout and stderr
// (sent to the daemon with the request, serve/client.h). A reader thread
// drains both pipes while execThroughDaemon() waits, so a command that
// writes more than a pipe holds never blocks on a full pipe. Each stream is
// kept up to a cap; what comes past it is read, counted and dropped.
// The denial lines the session prints on the command's stderr ("supervise:
// denied … (rule ID: reason)", audit/denial_line.h) are picked out of the
// whole stream, past the cap too.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "supervisor/serve/client.h"
#include "supervisor/serve/protocol.h"

namespace sv::supervisor::agent {

// One "supervise: <action> <what> (rule <id>[: <reason>])" line.
struct Denial {
  std::string action;  // denied, would deny, killed, would kill, killed for
  std::string what;    // "write to .env", "connect to 10.0.0.1:443"
  std::string rule_id;
  std::string reason;
  std::string line;  // as printed, without the newline
  std::string event_id;  // SESSION:SEQ of its audit event ("" when the line has none)
};

// The denial a stderr line reports, if it is one.
std::optional<Denial> parseDenialLine(std::string_view line);

struct CapturedStream {
  std::string bytes;   // at most the cap
  size_t dropped = 0;  // bytes read past the cap
};

struct CapturedRun {
  serve::ExecOutcome outcome;  // status, timed_out, command_id
  CapturedStream out, err;
  std::vector<Denial> denials;  // at most kMaxDenials
  size_t denials_dropped = 0;
  // The pipes were still open a while after the command ended (a process
  // that escaped the session's cgroup kill would be one): reading stopped.
  bool output_unfinished = false;
};

inline constexpr size_t kMaxDenials = 200;

// Runs `request` through the daemon at `socket_path`. An Error when the
// daemon cannot be reached or refuses (Error::code: the status `supervise
// exec` would exit with), or pipes cannot be made. `cancel_fd` readable:
// the command is killed and the Error's code is ECANCELED (client.h).
Result<CapturedRun> runCaptured(const std::string& socket_path, const serve::ExecRequest& request,
                                size_t max_bytes_per_stream, int cancel_fd = -1);

}  // namespace sv::supervisor::agent
