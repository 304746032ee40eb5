// `supervise serve`: the exec daemon (supervisor/serve/daemon.h, docs/serve.md).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "supervisor/cli/commands.h"
#include "supervisor/cli/policy_discovery.h"
#include "supervisor/cli/session_args.h"
#include "supervisor/serve/daemon.h"

namespace sv::supervisor {

void registerServe(CLI::App& app, CommandContext& ctx) {
  struct ServeArgs {
    PolicyArgs policy;
    serve::DaemonOptions daemon;
  };
  auto args = std::make_shared<ServeArgs>();
  CLI::App* sub = app.add_subcommand(
      "serve", "run every command sent by `supervise exec` in a session of its own, under one "
               "loaded policy (docs/serve.md)");
  args->policy.addTo(*sub);
  addSessionFlags(*sub, args->policy, args->daemon.session);
  sub->add_option("--socket", args->daemon.socket_path,
                  "the unix socket to listen on (default: $SUPERVISE_SOCKET, else "
                  "$XDG_RUNTIME_DIR/supervise/exec.sock, else /run/supervise/serve-<uid>/exec.sock)");
  sub->add_option("--allow-uid", args->daemon.allowed_uids,
                  "a uid whose clients are served (repeatable; default: the daemon's own)")
      ->allow_extra_args(false);
  sub->add_option("--max-commands", args->daemon.max_commands,
                  "commands running at once, all clients together")
      ->check(CLI::Range(1, 60))  // each session holds one of the host's 64 BPF slots
      ->capture_default_str();
  sub->add_option("--max-per-client", args->daemon.max_per_client,
                  "commands running at once per client uid")
      ->check(CLI::Range(1, 60))
      ->capture_default_str();
  sub->add_option("--ready-sessions", args->daemon.ready_sessions,
                  "sessions set up ahead of the requests, so a command starts without waiting "
                  "for its set-up (0: none; docs/serve.md, \"Ready sessions\")")
      ->check(CLI::Range(0, 4))  // each holds a BPF slot too: with 60 commands, 64 in all
      ->capture_default_str();
  sub->footer(
      "Examples:\n  supervise serve --audit-file /var/log/supervise/audit.jsonl &\n"
      "  supervise exec -- bash -c 'make test'\n  kill -HUP <pid>   # reload the policy");
  sub->callback([&ctx, args] {
    ctx.exit_code = runGuarded("serve", kExitSupervisorError, [&] {
      serve::DaemonOptions& d = args->daemon;
      if (!d.session.audit_fds.empty() || d.session.audit_stdout) {
        std::fprintf(stderr,
                     "supervise serve: --audit-fd and --audit-stdout are not for the daemon "
                     "(its commands own their stdio): use --audit-file or an audit sink\n");
        return kUsageExitCode;
      }
      if (d.socket_path.empty()) d.socket_path = serve::defaultSocketPath();
      args->policy.audit_files = d.session.audit_files;
      args->policy.daemon_socket = d.socket_path;
      // Not the shared_ptr: `args` holds this function, and a copy of
      // `args` in it would keep both alive for ever (LeakSanitizer).
      d.load_policy = [policy_args = &args->policy]()
          -> Result<std::shared_ptr<const policy::Policy>> {
        auto loaded = loadEffectivePolicyOrReport(*policy_args, "serve");
        if (!loaded) return Error{0, "invalid policy"};
        if (!workspaceIsADirectory(*loaded->policy)) return Error{0, "invalid policy workspace"};
        return loaded->policy;
      };
      d.argv = {"supervise", "serve", "--socket", d.socket_path};
      return serve::runDaemon(d);
    });
  });
}

}  // namespace sv::supervisor
