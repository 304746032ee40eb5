// `supervise exec`: one command through the exec daemon
// (supervisor/serve/client.h, docs/serve.md).
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "supervisor/cli/commands.h"
#include "supervisor/serve/client.h"
#include "supervisor/serve/daemon.h"

namespace sv::supervisor {

void registerExec(CLI::App& app, CommandContext& ctx) {
  struct ExecArgs {
    std::string socket, profile, cwd;
    double timeout_s = 0;
    std::vector<std::string> env;
    std::vector<std::string> command;
  };
  auto args = std::make_shared<ExecArgs>();
  CLI::App* sub = app.add_subcommand(
      "exec", "run a command through `supervise serve`: its own session, the daemon's policy; "
              "exits with the command's status");
  sub->add_option("--socket", args->socket, "the daemon's socket (default as supervise serve)");
  sub->add_option("--profile", args->profile, "the policy profile the command starts in");
  sub->add_option("--cwd", args->cwd, "the command's working directory (default: this one)");
  sub->add_option("--timeout", args->timeout_s,
                  "kill the command after S seconds (exit 124, as timeout(1))")
      ->check(CLI::Range(0.0, 7.0 * 24 * 3600));
  sub->add_option("--env", args->env,
                  "forward a variable: NAME (its value here) or NAME=VALUE (repeatable); the "
                  "command gets the daemon's environment with these on top")
      ->allow_extra_args(false);
  sub->add_option("command", args->command, "the command to run, after --")->required();
  sub->footer("Examples:\n  supervise exec -- bash -c 'echo hi > a.txt'\n"
              "  supervise exec --timeout 60 --env CI -- make test");
  sub->callback([&ctx, args] {
    ctx.exit_code = runGuarded("exec", kExitSupervisorError, [&] {
      serve::ExecRequest r;
      r.argv = args->command;
      std::error_code ec;
      const std::filesystem::path here = std::filesystem::current_path(ec);
      r.cwd = args->cwd.empty() ? here.string() : std::filesystem::absolute(args->cwd, ec).string();
      r.profile = args->profile;
      r.timeout_ms = static_cast<uint64_t>(std::llround(args->timeout_s * 1000));
      const mode_t mask = ::umask(022);
      ::umask(mask);
      r.umask = mask;
      for (const std::string& e : args->env) {
        const size_t eq = e.find('=');
        if (eq != std::string::npos) {
          r.env.emplace_back(e.substr(0, eq), e.substr(eq + 1));
        } else if (const char* v = std::getenv(e.c_str())) {
          r.env.emplace_back(e, v);
        } else {
          std::fprintf(stderr, "supervise exec: --env %s: not set here\n", e.c_str());
          return kUsageExitCode;
        }
      }
      return serve::runExecClient(
          args->socket.empty() ? serve::defaultSocketPath() : args->socket, r);
    });
  });
}

}  // namespace sv::supervisor
