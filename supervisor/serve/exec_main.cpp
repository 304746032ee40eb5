// supervise-exec: `supervise exec` in a binary of its own, for the agent's
// every command (docs/serve.md, "The lean client"). It links the client and
// the protocol only: nothing of the supervisor's BPF, seccomp, policy or
// audit code is loaded, faulted in or initialised at its start, which is
// what a client's start costs.
#include <CLI/CLI.hpp>
#include <exception>
#include <cstdio>

#include "supervisor/serve/client.h"
#include "supervisor/serve/exec_args.h"

int main(int argc, char** argv) {
  using namespace sv::supervisor::serve;
  CLI::App app{"run a command through `supervise serve`: its own session, the daemon's policy; "
               "exits with the command's status (the same as `supervise exec`)",
               "supervise-exec"};
  ExecArgs args;
  addExecOptions(app, args);
  app.footer("Examples:\n  supervise-exec -- bash -c 'echo hi > a.txt'\n"
             "  supervise-exec --timeout 60 --env CI -- make test");
  try {
    app.parse(argc, argv);
    return runExec(args);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : sv::kExitUsage;  // a usage error is the client's, not the command's
  } catch (const std::exception& e) {
    std::fprintf(stderr, "supervise exec: %s\n", e.what());
    return sv::kExitSupervisorError;
  }
}
