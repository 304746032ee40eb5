// explainQuery(): the body of `supervise explain` with its output returned
// instead of printed, so the MCP server's `explain` tool (supervisor/agent/)
// answers exactly what the command line would, from the same code.
//
// Asks the Engine what it would decide for one operation (or a recorded
// audit event) and why: verdict, rule, reason, the chain of rules considered
// and, for an event, the smallest policy edit that flips a deny.
#pragma once

#include <string>
#include <vector>

#include "supervisor/cli/policy_args.h"

namespace sv::supervisor {

// Exit codes of `supervise explain`, so scripts can branch on it.
inline constexpr int kExplainAllow = 0;
inline constexpr int kExplainDeny = 1;
inline constexpr int kExplainError = 2;

struct ExplainQuery {
  PolicyArgs policy;
  // OPERATION TARGET (read|write|exec|connect|socket|env), EVENT_ID, or "-".
  std::vector<std::string> words;
  std::string audit_line;  // for "-": the audit line the caller read
  std::string audit_file;  // EVENT_ID is looked up here; self-protected as in that run
  std::string as_exe;      // decide as a process running this binary
  std::string profile;     // decide inside this profile
  bool json = false;
};

struct ExplainOutput {
  int exit_code = kExplainError;  // kExplainAllow, kExplainDeny or kExplainError
  std::string out;                // what `supervise explain` prints on stdout
  std::string err;                // ... and on stderr (diagnostics, "supervise explain: why")
};

// Loads the effective policy (discovery from the cwd, as a run here would)
// and explains. Throws only what the policy loader and nlohmann throw.
ExplainOutput explainQuery(const ExplainQuery& query);

}  // namespace sv::supervisor
