// The subcommands of `supervise`, each registered on the CLI11 app by its
// own file. A command's callback stores its exit status in the context.
//
// Also the small shared model of a recorded decision (one audit line) that
// `explain EVENT_ID|-` and `policy learn` both read: which engine request the
// event was, so the current policy can be asked about it again.
#pragma once

#include <cstdint>
#include "common/exit_codes.h"
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "policy/engine.h"

namespace CLI {
class App;
}

namespace sv::supervisor {

struct CommandContext {
  int exit_code = 0;
};

// Usage errors (unknown flag, missing argument) of supervise itself.
inline constexpr int kUsageExitCode = sv::kExitUsage;

// The one adapter between a command's body and its CLI11 callback: an
// exception (nlohmann/json, std::filesystem, bad_alloc) must not escape into
// CLI11's parse, so it is printed as "supervise <command>: what" and becomes
// `error_code`.
template <typename Body>
int runGuarded(const char* command, int error_code, Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "supervise %s: %s\n", command, e.what());
    return error_code;
  }
}

void registerRun(CLI::App& app, CommandContext& ctx);       // cmd_run.cpp
void registerValidate(CLI::App& app, CommandContext& ctx);  // cmd_validate.cpp
void registerExplain(CLI::App& app, CommandContext& ctx);   // cmd_explain.cpp
void registerDoctor(CLI::App& app, CommandContext& ctx);    // cmd_doctor.cpp
void registerStatus(CLI::App& app, CommandContext& ctx);    // cmd_status.cpp
void registerCheck(CLI::App& app, CommandContext& ctx);     // cmd_check.cpp
void registerPolicy(CLI::App& app, CommandContext& ctx);    // cmd_policy.cpp
void registerVerify(CLI::App& app, CommandContext& ctx);    // cmd_verify.cpp
void registerReport(CLI::App& app, CommandContext& ctx);    // cmd_report.cpp
void registerServe(CLI::App& app, CommandContext& ctx);     // cmd_serve.cpp
void registerExec(CLI::App& app, CommandContext& ctx);      // cmd_exec.cpp
void registerAgent(CLI::App& app, CommandContext& ctx);     // cmd_agent.cpp
void registerMcp(CLI::App& app, CommandContext& ctx);       // cmd_mcp.cpp

// ---- recorded decisions (cmd_explain.cpp) ----

// A decision event of the native audit schema (docs/audit-events.md), reduced
// to what the engine decided on. Owns its strings; request() views into them.
struct RecordedDecision {
  uint64_t seq = 0;
  std::string session_id;
  std::string category, operation;  // "file"/"write", "exec"/"exec", "network"/"connect"
  std::string decision;             // allow | deny | would-deny
  std::string rule_id, rule_reason;
  std::string errno_name;           // "" when none
  std::string comm, exe;            // of the process that made the call
  std::string profile;              // the process's profile ("" = base)
  policy::Operation op = policy::Operation::Read;
  std::string path;                 // Read/Write/Exec target
  policy::Ip6 ip{};                 // Connect target
  std::string ip_text;
  uint16_t port = 0;

  policy::Request request() const;
  // "write /ws/.env", "connect 198.51.100.1:80", "exec /usr/bin/ssh".
  std::string target() const;
};

// Parses one JSON line. Not a decision the engine can be asked about again
// (session records, `socket` creation, unix sockets, bad JSON) → nullopt with
// the reason in *why.
std::optional<RecordedDecision> parseRecordedDecision(std::string_view line, std::string* why);

// Event ids: "SEQ" (the only session in the file, or the last one), or
// "SESSION:SEQ" where SESSION may be a unique prefix of the session id.
struct EventId {
  std::string session;  // "" = any
  uint64_t seq = 0;
};
std::optional<EventId> parseEventId(std::string_view text);

// The smallest policy-file fragment that, layered on the engine's policy,
// allows `d`: a root or allow entry for exactly that path or ip:port, in the
// process's profile when it had one. A base deny rule can't be undone by a
// later layer, so for it the fragment adds a profile entered on exec of the
// process's binary (exec.switch) that allows the one path: profile allows
// are checked before base denies. null when the policy already allows it, or
// when no addition can (a deny rule of the process's own profile); *why then
// says what to do instead.
nlohmann::ordered_json smallestEdit(const policy::Engine& engine, const RecordedDecision& d,
                                    std::string* why);

// Layers a fragment onto a policy document the way the loader layers files:
// objects merge, lists gain the entries they lack (compared by pattern),
// scalars replace.
void mergePolicyFragment(nlohmann::ordered_json& into, const nlohmann::ordered_json& fragment);

}  // namespace sv::supervisor
