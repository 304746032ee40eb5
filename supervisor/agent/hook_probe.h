// The probe of the Claude Code hook (docs/agents.md, "The probe").
//
// A hook command that fails to start (a moved binary, a typo, a missing
// shell) is a non-blocking error in Claude Code: the Bash call then runs as
// the model wrote it, unsupervised, and nothing says so. So before the agent
// runs, the probe runs each installed hook command the way Claude Code does
// (`/bin/sh -c COMMAND`, the payload on stdin) with a sample Bash call and
// checks that the command comes back rewritten (claude_hook.h,
// checkProbeReply()). Then it runs the rewritten sample itself, which shows
// whether the exec daemon answers.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace sv::supervisor::agent {

struct ShellRun {
  int status = -1;  // exit status, or 128 + signal
  bool timed_out = false;
  std::string out, err;  // each cut at 1 MiB
};

// Runs `/bin/sh -c command_line` in `cwd` with `input` on its stdin; kills its
// process group after `timeout`.
Result<ShellRun> runShell(const std::string& command_line, std::string_view input,
                          const std::string& cwd, std::chrono::milliseconds timeout);

struct ProbeResult {
  bool rewritten = false;             // every hook command rewrote the sample
  std::vector<std::string> problems;  // why not, one line per hook command
  // The sample run through the daemon: whether it printed what bash would.
  bool daemon_ran = false;
  std::string daemon_problem;  // why not (daemon down, denied, ...)
};

// Probes `hook_commands` (from installedHookCommands()) from `project_dir`.
// `run_through_daemon`: also run one rewritten sample.
ProbeResult probeHooks(const std::vector<std::string>& hook_commands,
                       const std::string& project_dir, bool run_through_daemon);

}  // namespace sv::supervisor::agent
