// The Claude Code PreToolUse hook (docs/agents.md, "Claude Code").
//
// Claude Code runs the hook command with the tool call as JSON on stdin
// (session_id, cwd, hook_event_name "PreToolUse", tool_name, tool_input,
// tool_use_id, ...). For the Bash tool the hook answers, exit 0, with
//
//   {"hookSpecificOutput": {"hookEventName": "PreToolUse",
//     "permissionDecision": "allow" | "ask", "permissionDecisionReason": "...",
//     "updatedInput": {...tool_input, "command": "SUPERVISE exec -- bash -c '…'"}}}
//
// updatedInput replaces the whole input, so every other field of tool_input
// (description, timeout, run_in_background) is copied. Any other tool gets
// no output (the call goes on untouched). What cannot be rewritten — a
// payload that is not JSON, a Bash call without a command string, a command
// with a NUL byte (bash -c cannot carry one) — is blocked: exit 2 with the
// reason on stderr, which Claude Code shows the model. Any other exit would
// be a non-blocking error there: the original command would run unsupervised.
//
// Pure: strings in, strings out (the probe that runs the installed command is
// hook_probe.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace sv::supervisor::agent {

// Blocking error: Claude Code does not run the call and shows stderr to the model.
inline constexpr int kHookBlock = 2;

struct HookOptions {
  std::string supervise;  // absolute path of the supervise binary the hook runs
  std::string client;     // the lean client supervise-exec, absolute ("" = `supervise exec`)
  std::string socket;     // supervise exec --socket ("" = its default)
  bool ask = false;       // "ask": the user confirms the rewritten command; else "allow"
};

// `text` as one POSIX shell word: '…', each ' written as '\''. Every byte
// but NUL survives (newlines, $, `, \, !, non-UTF-8).
std::string shellQuote(std::string_view text);

// What a Bash call's command becomes:
//   'SUPERVISE' exec [--socket 'S'] -- bash -c 'COMMAND'
// or, through the lean client (the same options, a faster start):
//   'SUPERVISE-EXEC' [--socket 'S'] -- bash -c 'COMMAND'
std::string rewriteCommand(std::string_view command, const HookOptions& options);

// The hook's own command line as settings.json holds it:
//   'SUPERVISE' agent claude-code-hook [--socket 'S'] [--ask]
std::string hookCommandLine(const HookOptions& options);

struct HookReply {
  int exit_code = 0;  // 0, or kHookBlock
  std::string out;    // stdout: the JSON answer, or "" to let the call through untouched
  std::string err;    // stderr: why it was blocked
};

// The hook: one PreToolUse payload in, the answer out.
HookReply answerHook(std::string_view payload, const HookOptions& options);

// ---- .claude/settings.json ----

// Adds the hook to hooks.PreToolUse of a settings object under matcher
// "Bash", or replaces the command of a supervise hook already there;
// everything else in the file is kept as it was (order included). False with
// *error when the file's shape is not what Claude Code reads (hooks not an
// object, PreToolUse not a list...): nothing is changed then.
bool installHook(nlohmann::ordered_json& settings, const std::string& command, std::string* error);

// The commands of the supervise hooks (`agent claude-code-hook`) that
// settings runs for the Bash tool.
std::vector<std::string> installedHookCommands(const nlohmann::ordered_json& settings);

// ---- the probe (hook_probe.h runs it) ----

// The sample Bash command the probe sends: quotes of both kinds, a newline,
// $(...) — everything a naive rewrite breaks. Run by bash it prints
// kProbeExpectedOutput.
extern const char* const kProbeCommand;
extern const char* const kProbeExpectedOutput;

// A PreToolUse payload for the Bash tool running `command`, as Claude Code sends it.
std::string probePayload(std::string_view command, std::string_view cwd);

// Whether a hook's reply (exit status and stdout) to probePayload(kProbeCommand)
// rewrote the command to run through `supervise exec -- bash -c` with the
// command intact and the other fields kept. On success *rewritten is the new
// command; otherwise *why says what came back instead.
bool checkProbeReply(int exit_status, std::string_view out, std::string* rewritten,
                     std::string* why);

}  // namespace sv::supervisor::agent
