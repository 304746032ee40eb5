// `supervise mcp [--socket PATH] [policy flags] [--audit-file F] [--max-output BYTES]
//                [--timeout S]`
//
// A Model Context Protocol server on stdin/stdout (docs/agents.md, "MCP";
// supervisor/agent/mcp_server.h) with two tools: `run`, every call a
// session of the exec daemon's (`supervise serve` must run), and `explain`,
// `supervise explain`'s own code (explain_query.h). Explain and the
// instructions (the policy summary) use the policy this command loads: give
// it the flags the daemon got, or start both in the same directory. The
// daemon names the policy each command runs under (its sha256, in the
// "started" reply): a `run` result says so when it is not this one.
// Exits when stdin closes and the calls in flight are answered.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>

#include "supervisor/agent/mcp_server.h"
#include "supervisor/agent/mcp_tools.h"
#include "supervisor/audit/policy_json.h"
#include "supervisor/cli/commands.h"
#include "supervisor/cli/explain_query.h"
#include "supervisor/cli/policy_discovery.h"
#include "supervisor/cli/policy_summary.h"
#include "supervisor/serve/daemon.h"

namespace sv::supervisor {
namespace {

// A request line is a tool call's arguments: far below this.
constexpr size_t kMaxLineBytes = 16u << 20;
// Tool calls at once: the daemon has its own caps (32 at once by default).
constexpr size_t kMaxConcurrentCalls = 16;

struct McpArgs {
  PolicyArgs policy;
  std::string socket, audit_file;
  size_t max_output = 256u << 10;
  double timeout_s = 120;
};

agent::ExplainAnswer explainFor(const McpArgs& a, const std::vector<std::string>& words,
                                const std::string& profile, const std::string& as_exe) {
  ExplainQuery q;
  q.policy = a.policy;
  q.words = words;
  q.audit_file = a.audit_file;
  q.profile = profile;
  q.as_exe = as_exe;
  agent::ExplainAnswer answer;
  ExplainOutput text = explainQuery(q);
  answer.exit_code = text.exit_code;
  answer.text = text.out;
  answer.error = text.err;
  if (text.exit_code == kExplainAllow || text.exit_code == kExplainDeny) {
    q.json = true;
    answer.json = explainQuery(q).out;
  }
  return answer;
}

int runMcp(const McpArgs& a) {
  // stdout is the protocol's: nothing else may be written there. A client
  // that closes it must not kill us with SIGPIPE mid-answer.
  ::signal(SIGPIPE, SIG_IGN);
  auto effective = loadEffectivePolicyOrReport(a.policy, "mcp");
  if (!effective) return kUsageExitCode;
  std::error_code ec;
  agent::RunToolOptions run;
  run.socket = a.socket.empty() ? serve::defaultSocketPath() : a.socket;
  run.default_cwd = std::filesystem::current_path(ec).string();
  run.max_output_bytes = a.max_output;
  run.default_timeout_ms = uint64_t(a.timeout_s * 1000);
  run.explained_policy_sha256 = policyDigest(*effective->policy);
  const mode_t mask = ::umask(022);
  ::umask(mask);
  run.umask = mask;

  agent::McpServerInfo info;
  info.name = "supervise";
  info.version = SV_VERSION;
  info.instructions =
      "Commands run through the `run` tool are supervised: each runs in a session of its own "
      "under this policy, and what it refuses fails inside the command with a permission error "
      "and is listed in the result with its rule and reason. `explain` tells in advance what "
      "the policy decides for one operation.\n\n" +
      policySummary(*effective->policy);
  std::vector<agent::McpTool> tools = {
      agent::makeRunTool(run),
      agent::makeExplainTool(
          [a](const std::vector<std::string>& words, const std::string& profile,
              const std::string& as_exe) { return explainFor(a, words, profile, as_exe); })};
  agent::McpServer server(info, std::move(tools), agent::fdLineWriter(STDOUT_FILENO),
                          kMaxConcurrentCalls);
  agent::serveLines(server, STDIN_FILENO, kMaxLineBytes);
  // Calls in flight are answered before leaving (the server's destructor
  // waits): a client may close stdin right after its last request (`printf
  // ... | supervise mcp`). One that is gone ends us with SIGTERM, as the
  // stdio transport's shutdown has it; our connections then close and the
  // daemon kills their commands (a client that disconnects kills its command).
  return 0;
}

}  // namespace

void registerMcp(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<McpArgs>();
  CLI::App* sub = app.add_subcommand(
      "mcp",
      "a Model Context Protocol server on stdio: tools run (through `supervise serve`) "
      "and explain (docs/agents.md)");
  args->policy.addTo(*sub);
  sub->add_option("--socket", args->socket, "the daemon's socket (default as supervise exec)");
  sub->add_option("--audit-file", args->audit_file,
                  "the daemon's audit file, where explain looks up an EVENT_ID");
  sub->add_option("--max-output", args->max_output,
                  "bytes of each of stdout and stderr a run returns; the rest is cut and counted")
      ->check(CLI::Range(size_t(1024), size_t(64) << 20))
      ->capture_default_str();
  sub->add_option("--timeout", args->timeout_s,
                  "seconds a run may take when the call gives no timeout")
      ->check(CLI::Range(1.0, 7.0 * 24 * 3600))
      ->capture_default_str();
  sub->footer(
      "Examples:\n  supervise serve &\n  claude mcp add supervise -- supervise mcp\n"
      "  supervise mcp --policy .supervise.json --audit-file /var/log/supervise/audit.jsonl");
  sub->callback([&ctx, args] {
    ctx.exit_code = runGuarded("mcp", kUsageExitCode, [&] { return runMcp(*args); });
  });
}

}  // namespace sv::supervisor
