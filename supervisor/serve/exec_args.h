// The command line of `supervise exec` and of `supervise-exec`, the same
// client in a binary of its own (docs/serve.md, "The lean client"): one
// definition of the options, the request they make, and the run.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace sv::supervisor::serve {

struct ExecArgs {
  std::string socket, profile, cwd;
  double timeout_s = 0;
  std::vector<std::string> env;
  std::vector<std::string> command;
};

// --socket, --profile, --cwd, --timeout, --env and the command after --.
void addExecOptions(CLI::App& app, ExecArgs& args);

// The request `args` make, run through the daemon; the exit status (what
// went wrong said on stderr, as "supervise exec: ...").
int runExec(const ExecArgs& args);

}  // namespace sv::supervisor::serve
