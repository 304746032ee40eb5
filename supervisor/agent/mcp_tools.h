// The tools of `supervise mcp` (docs/agents.md, "MCP"):
//
//   run      argv or a shell line (bash -c), cwd, timeout, profile, env →
//            exit status, stdout, stderr and the operations the policy
//            refused, each with its rule and reason. Through the exec daemon
//            (captured_run.h): every call is a session of its own, as
//            `supervise exec` runs it.
//   explain  "write .env", "connect github.com:443", an audit event id →
//            the decision, the rule and why: `supervise explain`'s own code,
//            given to makeExplainTool() by the CLI (explain_query.h lives
//            above this library).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "supervisor/agent/mcp_server.h"

namespace sv::supervisor::agent {

struct RunToolOptions {
  std::string socket;                    // the daemon's
  std::string default_cwd;               // a call without cwd runs here (absolute)
  size_t max_output_bytes = 256u << 10;  // kept of each of stdout and stderr
  uint64_t default_timeout_ms = 120'000;
  // The sha256 of the policy this server explains with and summarised in
  // its instructions: a command the daemon ran under another (not the same
  // flags, or a reload since) says so in its result. "" = not compared.
  std::string explained_policy_sha256;
  unsigned umask = 022;
};

McpTool makeRunTool(RunToolOptions options);

// What `supervise explain` would print, for the tool's answer.
struct ExplainAnswer {
  int exit_code = 2;  // 0 allow, 1 deny, 2 error (explain_query.h)
  std::string text;   // the explanation as the command line prints it
  std::string json;   // the same as --json prints it ("" on error)
  std::string error;  // what it printed on stderr
};
using ExplainFn = std::function<ExplainAnswer(
    const std::vector<std::string>& words, const std::string& profile, const std::string& as_exe)>;

McpTool makeExplainTool(ExplainFn explain);

}  // namespace sv::supervisor::agent
