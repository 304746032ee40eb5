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
#include "supervisor/session/session.h"

namespace sv::supervisor {

void registerRun(CLI::App& app, CommandContext& ctx) {
  struct RunArgs {
    PolicyArgs policy;
    SessionOptions session;
  };
  auto args = std::make_shared<RunArgs>();
  args->policy.addTo(app);
  // One value per occurrence: a greedy list option would take `--` as the end
  // of its values and then parse the command's own flags as ours.
  app.add_option("--audit-file", args->session.audit_files,
                 "append JSON audit events to FILE (repeatable)")
      ->allow_extra_args(false);
  app.add_option("--audit-fd", args->session.audit_fds, "write JSON audit events to open fd N")
      ->check(CLI::Range(3, INT_MAX).description("an fd above 2 (0-2 are the command's stdio)"))
      ->allow_extra_args(false);
  app.add_flag("--audit-stdout", args->session.audit_stdout,
               "write audit events to stdout (mixes with the command's output)");
  // Shorthand for -o audit.format=F: the policy layer validates the value.
  app.add_option_function<std::string>(
         "--audit-format",
         [args](const std::string& f) { args->policy.overrides.push_back("audit.format=" + f); },
         "audit event format: native (default), ocsf or ecs")
      ->check(CLI::IsMember({"native", "ocsf", "ecs"}))
      ->allow_extra_args(false);
  // Shorthand for -o 'audit.sinks+={"type":"syslog","path":URL}' (RFC 5424).
  app.add_option_function<std::string>(
         "--audit-syslog",
         [args](const std::string& url) {
           args->policy.overrides.push_back(
               "audit.sinks+=" + nlohmann::json{{"type", "syslog"}, {"path", url}}.dump());
         },
         "send audit events to a syslog receiver: udp|tcp|tls://HOST:PORT (repeatable)")
      ->allow_extra_args(false);
  // Shorthand for -o 'audit.sinks+={"type":"kafka","brokers":B,"topic":T}'.
  app.add_option_function<std::string>(
         "--audit-kafka",
         [args](const std::string& spec) {
           const size_t slash = spec.rfind('/');
           nlohmann::json sink{{"type", "kafka"},
                               {"brokers", spec.substr(0, slash == std::string::npos ? 0 : slash)},
                               {"topic", slash == std::string::npos ? "" : spec.substr(slash + 1)}};
           args->policy.overrides.push_back("audit.sinks+=" + sink.dump());
         },
         "send audit events to Kafka: BROKER[,BROKER...]/TOPIC (repeatable)")
      ->allow_extra_args(false);
  // Shorthand for -o 'audit.sinks+={"type":"otlp","url":URL}'.
  app.add_option_function<std::string>(
         "--audit-otlp",
         [args](const std::string& url) {
           args->policy.overrides.push_back(
               "audit.sinks+=" + nlohmann::json{{"type", "otlp"}, {"url", url}}.dump());
         },
         "send audit events as OTLP/HTTP logs: http(s)://HOST:PORT/v1/logs (repeatable)")
      ->allow_extra_args(false);
  app.add_flag("-q,--quiet", args->session.quiet, "no 'supervise: denied ...' lines on stderr");
  app.add_option("--backend", args->session.backend,
                 "who decides files, exec and connect: auto (bpf-lsm where the kernel runs it, "
                 "else host; ptrace where seccomp user-notify is missing), host (Landlock + "
                 "seccomp user-notify), bpf-lsm, ptrace (seccomp stops answered by a tracer); "
                 "exit 125 where the one asked for is unavailable")
      ->check(CLI::IsMember({"auto", "host", "bpf-lsm", "ptrace"}))
      ->envname("SUPERVISE_BACKEND")
      ->allow_extra_args(false);
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
    // Every relative rule hangs off the workspace: one that is not a
    // directory is a mistake to report, not a policy to half-apply.
    struct stat st;
    const std::string& ws = loaded->policy->workspace;
    const bool found = ::stat(ws.c_str(), &st) == 0;
    if (!found || !S_ISDIR(st.st_mode)) {
      std::fprintf(stderr, "supervise: workspace %s: %s\n", ws.c_str(),
                   found ? "not a directory" : std::strerror(errno));
      ctx.exit_code = kExitPolicyError;
      return;
    }
    args->session.policy = loaded->policy;
    ctx.exit_code = runSession(args->session);
  });
}

}  // namespace sv::supervisor
