// `supervise exec`: one command through the exec daemon
// (supervisor/serve/client.h, docs/serve.md).
#include <CLI/CLI.hpp>
#include <memory>

#include "supervisor/cli/commands.h"
#include "supervisor/serve/exec_args.h"

namespace sv::supervisor {

void registerExec(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<serve::ExecArgs>();
  CLI::App* sub = app.add_subcommand(
      "exec", "run a command through `supervise serve`: its own session, the daemon's policy; "
              "exits with the command's status");
  serve::addExecOptions(*sub, *args);
  sub->footer("Examples:\n  supervise exec -- bash -c 'echo hi > a.txt'\n"
              "  supervise exec --timeout 60 --env CI -- make test\n"
              "supervise-exec takes the same options and starts faster (docs/serve.md).");
  sub->callback([&ctx, args] {
    ctx.exit_code = runGuarded("exec", kExitSupervisorError, [&] { return serve::runExec(*args); });
  });
}

}  // namespace sv::supervisor
