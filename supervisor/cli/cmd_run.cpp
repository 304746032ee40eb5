// The default command: `supervise [options] -- command [args...]`.
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <climits>
#include <cstring>
#include <nlohmann/json.hpp>

#include "supervisor/cli/commands.h"
#include "supervisor/cli/policy_discovery.h"
#include "supervisor/cli/policy_args.h"
#include "supervisor/cli/session_args.h"
#include "supervisor/session/session.h"

namespace sv::supervisor {

void registerRun(CLI::App& app, CommandContext& ctx) {
  struct RunArgs {
    PolicyArgs policy;
    SessionOptions session;
  };
  auto args = std::make_shared<RunArgs>();
  args->policy.addTo(app);
  addSessionFlags(app, args->policy, args->session);
  app.add_option("command", args->session.command, "the command to run, after --");
  app.callback([&app, &ctx, args] {
    if (app.get_subcommands().size() > 0) return;  // a subcommand ran instead
    if (args->session.command.empty()) {
      std::fprintf(stderr, "supervise: no command given\n%s", app.help().c_str());
      ctx.exit_code = kUsageExitCode;
      return;
    }
    // Config discovery (--policy, ./.supervise.json, $XDG_CONFIG_HOME,
    // /etc, preset) exactly as `supervise status` reports it.
    // The audit files are self-protected (docs/policy.md, "Self-protection").
    args->policy.audit_files = args->session.audit_files;
    auto loaded = loadEffectivePolicyOrReport(args->policy, "");
    if (!loaded) {
      ctx.exit_code = kExitPolicyError;
      return;
    }
    if (!workspaceIsADirectory(*loaded->policy)) {
      ctx.exit_code = kExitPolicyError;
      return;
    }
    args->session.policy = loaded->policy;
    ctx.exit_code = runSession(args->session);
  });
}

}  // namespace sv::supervisor
