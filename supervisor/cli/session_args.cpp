// addSessionFlags(); see session_args.h.
#include "supervisor/cli/session_args.h"

#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

namespace sv::supervisor {

void addSessionFlags(CLI::App& app, PolicyArgs& policy, SessionOptions& session) {
  // One value per occurrence: a greedy list option would take `--` as the end
  // of its values and then parse the command's own flags as ours.
  app.add_option("--audit-file", session.audit_files,
                 "append JSON audit events to FILE (repeatable)")
      ->allow_extra_args(false);
  app.add_option("--audit-fd", session.audit_fds, "write JSON audit events to open fd N")
      ->check(CLI::Range(3, INT_MAX).description("an fd above 2 (0-2 are the command's stdio)"))
      ->allow_extra_args(false);
  app.add_flag("--audit-stdout", session.audit_stdout,
               "write audit events to stdout (mixes with the command's output)");
  // Shorthand for -o audit.format=F: the policy layer validates the value.
  app.add_option_function<std::string>(
         "--audit-format",
         [&policy](const std::string& f) { policy.overrides.push_back("audit.format=" + f); },
         "audit event format: native (default), ocsf or ecs")
      ->check(CLI::IsMember({"native", "ocsf", "ecs"}))
      ->allow_extra_args(false);
  // Shorthand for -o 'audit.sinks+={"type":"syslog","path":URL}' (RFC 5424).
  app.add_option_function<std::string>(
         "--audit-syslog",
         [&policy](const std::string& url) {
           policy.overrides.push_back(
               "audit.sinks+=" + nlohmann::json{{"type", "syslog"}, {"path", url}}.dump());
         },
         "send audit events to a syslog receiver: udp|tcp|tls://HOST:PORT (repeatable)")
      ->allow_extra_args(false);
  // Shorthand for -o 'audit.sinks+={"type":"kafka","brokers":B,"topic":T}'.
  app.add_option_function<std::string>(
         "--audit-kafka",
         [&policy](const std::string& spec) {
           const size_t slash = spec.rfind('/');
           nlohmann::json sink{{"type", "kafka"},
                               {"brokers", spec.substr(0, slash == std::string::npos ? 0 : slash)},
                               {"topic", slash == std::string::npos ? "" : spec.substr(slash + 1)}};
           policy.overrides.push_back("audit.sinks+=" + sink.dump());
         },
         "send audit events to Kafka: BROKER[,BROKER...]/TOPIC (repeatable)")
      ->allow_extra_args(false);
  // Shorthand for -o 'audit.sinks+={"type":"otlp","url":URL}'.
  app.add_option_function<std::string>(
         "--audit-otlp",
         [&policy](const std::string& url) {
           policy.overrides.push_back(
               "audit.sinks+=" + nlohmann::json{{"type", "otlp"}, {"url", url}}.dump());
         },
         "send audit events as OTLP/HTTP logs: http(s)://HOST:PORT/v1/logs (repeatable)")
      ->allow_extra_args(false);
  app.add_flag("-q,--quiet", session.quiet, "no 'supervise: denied ...' lines on stderr");
  app.add_option("--backend", session.backend,
                 "who decides files, exec and connect: auto (bpf-lsm where the kernel runs it, "
                 "else host; ptrace where seccomp user-notify is missing), host (Landlock + "
                 "seccomp user-notify), bpf-lsm, ptrace (seccomp stops answered by a tracer); "
                 "exit 125 where the one asked for is unavailable")
      ->check(CLI::IsMember({"auto", "host", "bpf-lsm", "ptrace"}))
      ->envname("SUPERVISE_BACKEND")
      ->allow_extra_args(false);
}

bool workspaceIsADirectory(const policy::Policy& policy) {
  struct stat st;
  const std::string& ws = policy.workspace;
  const bool found = ::stat(ws.c_str(), &st) == 0;
  if (found && S_ISDIR(st.st_mode)) return true;
  std::fprintf(stderr, "supervise: workspace %s: %s\n", ws.c_str(),
               found ? "not a directory" : std::strerror(errno));
  return false;
}

}  // namespace sv::supervisor
