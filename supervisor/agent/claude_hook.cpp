// The Claude Code hook: see claude_hook.h.
#include "supervisor/agent/claude_hook.h"

namespace sv::supervisor::agent {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// What marks a hook in settings.json as ours: its command runs this subcommand.
constexpr std::string_view kHookSubcommand = "agent claude-code-hook";
constexpr char kMatcher[] = "Bash";
// Seconds Claude Code gives the hook. Ours answers in a few milliseconds;
// the margin is for a loaded machine, and a hook killed at its timeout is a
// non-blocking error (the original command would run).
constexpr int kHookTimeoutSeconds = 30;

HookReply block(const std::string& why) {
  return {kHookBlock, "", "supervise agent claude-code-hook: " + why + "\n"};
}

// A payload may carry any bytes in its strings; dump() must not throw on
// invalid UTF-8 (the answer is built from them).
std::string dumpLine(const ordered_json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

bool isOurs(const ordered_json& hook) {
  if (!hook.is_object()) return false;
  auto cmd = hook.find("command");
  return cmd != hook.end() && cmd->is_string() &&
         cmd->get<std::string>().find(kHookSubcommand) != std::string::npos;
}

}  // namespace

const char* const kProbeCommand =
    "printf '%s\\n' \"supervise probe\" 'it'\\''s' \\\n  $(echo \"ok\")";
const char* const kProbeExpectedOutput = "supervise probe\nit's\nok\n";

std::string shellQuote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string rewriteCommand(std::string_view command, const HookOptions& options) {
  std::string out = options.client.empty() ? shellQuote(options.supervise) + " exec"
                                           : shellQuote(options.client);
  if (!options.socket.empty()) out += " --socket " + shellQuote(options.socket);
  return out + " -- bash -c " + shellQuote(command);
}

std::string hookCommandLine(const HookOptions& options) {
  std::string out = shellQuote(options.supervise) + " " + std::string(kHookSubcommand);
  if (!options.socket.empty()) out += " --socket " + shellQuote(options.socket);
  if (options.ask) out += " --ask";
  return out;
}

HookReply answerHook(std::string_view payload, const HookOptions& options) {
  ordered_json in = ordered_json::parse(payload, nullptr, /*allow_exceptions=*/false);
  // Not knowing what the call is, letting it through would be the bypass.
  if (in.is_discarded() || !in.is_object()) return block("the hook payload is not a JSON object");
  auto event = in.find("hook_event_name");
  if (event != in.end() && *event != "PreToolUse") return {};  // not ours to rewrite
  auto tool = in.find("tool_name");
  if (tool == in.end() || !tool->is_string()) return block("the hook payload has no tool_name");
  if (*tool != kMatcher) return {};  // another tool: untouched
  auto input = in.find("tool_input");
  if (input == in.end() || !input->is_object()) return block("the Bash call has no tool_input");
  auto command = input->find("command");
  if (command == input->end() || !command->is_string())
    return block("the Bash call's tool_input has no command string");
  const std::string original = command->get<std::string>();
  if (original.find('\0') != std::string::npos)
    return block("the command holds a NUL byte, which no bash -c argument can carry");

  ordered_json updated = *input;  // updatedInput replaces the input: keep every field
  updated["command"] = rewriteCommand(original, options);
  ordered_json out = {
      {"hookSpecificOutput",
       {{"hookEventName", "PreToolUse"},
        {"permissionDecision", options.ask ? "ask" : "allow"},
        {"permissionDecisionReason",
         "supervise: the command runs through the exec daemon (supervise exec), under its "
         "policy"},
        {"updatedInput", updated}}}};
  return {0, dumpLine(out) + "\n", ""};
}

bool installHook(ordered_json& settings, const std::string& command, std::string* error) {
  if (!settings.is_object()) {
    *error = "the settings file is not a JSON object";
    return false;
  }
  if (settings.contains("hooks") && !settings["hooks"].is_object()) {
    *error = "\"hooks\" is not an object";
    return false;
  }
  ordered_json& hooks = settings["hooks"];
  if (hooks.is_null()) hooks = ordered_json::object();
  if (hooks.contains("PreToolUse") && !hooks["PreToolUse"].is_array()) {
    *error = "\"hooks.PreToolUse\" is not a list";
    return false;
  }
  ordered_json& pre = hooks["PreToolUse"];
  if (pre.is_null()) pre = ordered_json::array();
  // Ours already there (an older binary path or socket): replace its command.
  bool replaced = false;
  for (auto& entry : pre) {
    if (!entry.is_object() || !entry.contains("hooks") || !entry["hooks"].is_array()) continue;
    for (auto& hook : entry["hooks"]) {
      if (!isOurs(hook)) continue;
      hook["command"] = command;
      entry["matcher"] = kMatcher;
      replaced = true;
    }
  }
  if (!replaced)
    pre.push_back({{"matcher", kMatcher},
                   {"hooks", ordered_json::array({{{"type", "command"},
                                                   {"command", command},
                                                   {"timeout", kHookTimeoutSeconds}}})}});
  return true;
}

std::vector<std::string> installedHookCommands(const ordered_json& settings) {
  std::vector<std::string> out;
  if (!settings.is_object()) return out;
  auto hooks = settings.find("hooks");
  if (hooks == settings.end() || !hooks->is_object()) return out;
  auto pre = hooks->find("PreToolUse");
  if (pre == hooks->end() || !pre->is_array()) return out;
  for (const auto& entry : *pre) {
    if (!entry.is_object() || entry.value("matcher", std::string()) != kMatcher) continue;
    auto list = entry.find("hooks");
    if (list == entry.end() || !list->is_array()) continue;
    for (const auto& hook : *list)
      if (isOurs(hook)) out.push_back(hook["command"].get<std::string>());
  }
  return out;
}

std::string probePayload(std::string_view command, std::string_view cwd) {
  ordered_json j = {{"session_id", "supervise-probe"},
                    {"transcript_path", "/dev/null"},
                    {"cwd", std::string(cwd)},
                    {"permission_mode", "default"},
                    {"hook_event_name", "PreToolUse"},
                    {"tool_name", "Bash"},
                    {"tool_input",
                     {{"command", std::string(command)},
                      {"description", "supervise probe"},
                      {"timeout", 120000}}},
                    {"tool_use_id", "toolu_supervise_probe"}};
  return dumpLine(j) + "\n";
}

bool checkProbeReply(int exit_status, std::string_view out, std::string* rewritten,
                     std::string* why) {
  if (exit_status != 0) {
    *why = "the hook exited with status " + std::to_string(exit_status) +
           " (Claude Code would run the command unsupervised, or not at all)";
    return false;
  }
  ordered_json j = ordered_json::parse(out, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    *why = out.empty() ? "the hook printed nothing: the command would run unchanged"
                       : "the hook's output is not a JSON object";
    return false;
  }
  const ordered_json* hso = j.contains("hookSpecificOutput") ? &j["hookSpecificOutput"] : nullptr;
  if (!hso || !hso->is_object() || hso->value("hookEventName", "") != "PreToolUse") {
    *why = "no hookSpecificOutput for PreToolUse in the hook's output";
    return false;
  }
  const std::string decision = hso->value("permissionDecision", "");
  if (decision != "allow" && decision != "ask") {
    *why = "permissionDecision is \"" + decision + "\", not allow or ask";
    return false;
  }
  auto updated = hso->find("updatedInput");
  const ordered_json* command = nullptr;
  if (updated != hso->end() && updated->is_object()) {
    auto c = updated->find("command");
    if (c != updated->end() && c->is_string()) command = &*c;
  }
  if (!command) {
    *why = "no updatedInput.command: the command would run unchanged";
    return false;
  }
  const std::string cmd = command->get<std::string>();
  const std::string tail = " -- bash -c " + shellQuote(kProbeCommand);
  if (!cmd.starts_with("'/") ||
      (cmd.find(" exec ") == std::string::npos && cmd.find("/supervise-exec' ") == std::string::npos)) {
    *why = "the command is not run through supervise exec: " + cmd;
    return false;
  }
  if (!cmd.ends_with(tail)) {
    *why = "the command did not come back intact after bash -c: " + cmd;
    return false;
  }
  if (updated->value("description", "") != "supervise probe") {
    *why = "updatedInput dropped the call's other fields (description)";
    return false;
  }
  *rewritten = cmd;
  return true;
}

}  // namespace sv::supervisor::agent
