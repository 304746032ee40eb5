// The MCP tools: see mcp_tools.h.
#include "supervisor/agent/mcp_tools.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "policy/path.h"
#include "supervisor/agent/captured_run.h"
#include "supervisor/serve/protocol.h"

namespace sv::supervisor::agent {
namespace {

using nlohmann::json;

json invalid(const std::string& why) { return mcpTextResult("invalid arguments: " + why, true); }

// The request a `run` call's arguments make, or "" and *why.
bool runRequest(const json& a, const RunToolOptions& o, serve::ExecRequest* r, std::string* why) {
  for (auto it = a.begin(); it != a.end(); ++it) {
    static const char* kKnown[] = {"command", "argv", "cwd", "timeout", "profile", "env"};
    if (std::none_of(std::begin(kKnown), std::end(kKnown),
                     [&](const char* k) { return it.key() == k; })) {
      *why = "unknown argument \"" + it.key() + "\"";
      return false;
    }
  }
  const bool has_command = a.contains("command"), has_argv = a.contains("argv");
  if (has_command == has_argv) {
    *why = "give either command (a shell line) or argv (a list of strings)";
    return false;
  }
  if (has_command) {
    if (!a["command"].is_string()) {
      *why = "command must be a string";
      return false;
    }
    // A shell line is decided on what really runs: bash and each program it starts.
    r->argv = {"bash", "-c", a["command"].get<std::string>()};
  } else {
    const json& argv = a["argv"];
    if (!argv.is_array() || argv.empty()) {
      *why = "argv must be a non-empty list of strings";
      return false;
    }
    for (const json& s : argv) {
      if (!s.is_string()) {
        *why = "argv must be a non-empty list of strings";
        return false;
      }
      r->argv.push_back(s.get<std::string>());
    }
  }
  for (const std::string& s : r->argv) {
    if (s.find('\0') != std::string::npos) {
      *why = "a NUL byte cannot be part of an argument";
      return false;
    }
  }
  r->cwd = o.default_cwd;
  if (a.contains("cwd")) {
    if (!a["cwd"].is_string() || a["cwd"].get<std::string>().empty()) {
      *why = "cwd must be a directory";
      return false;
    }
    r->cwd = policy::normalizePath(o.default_cwd, a["cwd"].get<std::string>());
  }
  r->timeout_ms = o.default_timeout_ms;
  if (a.contains("timeout")) {
    const json& t = a["timeout"];
    const double max_s = double(serve::kMaxTimeoutMs) / 1000;
    if (!t.is_number() || !(t.get<double>() > 0) || t.get<double>() > max_s) {
      *why = "timeout must be a number of seconds, above 0 and at most " +
             std::to_string(uint64_t(max_s));
      return false;
    }
    r->timeout_ms = std::max<uint64_t>(1, uint64_t(std::llround(t.get<double>() * 1000)));
  }
  if (a.contains("profile")) {
    if (!a["profile"].is_string()) {
      *why = "profile must be a string";
      return false;
    }
    r->profile = a["profile"].get<std::string>();
  }
  if (a.contains("env")) {
    if (!a["env"].is_object()) {
      *why = "env must be an object of NAME: \"value\"";
      return false;
    }
    for (auto it = a["env"].begin(); it != a["env"].end(); ++it) {
      if (!it->is_string() || it.key().empty() || it.key().find('=') != std::string::npos) {
        *why = "env must be an object of NAME: \"value\"";
        return false;
      }
      r->env.emplace_back(it.key(), it->get<std::string>());
    }
  }
  r->umask = o.umask;
  return true;
}

std::string streamText(const char* name, const CapturedStream& s) {
  if (s.bytes.empty() && s.dropped == 0) return "";
  std::string out = std::string("--- ") + name + " ---\n" + s.bytes;
  if (!s.bytes.empty() && s.bytes.back() != '\n') out += "\n";
  if (s.dropped)
    out += "[cut: " + std::to_string(s.dropped) + " more bytes of " + name + " not shown]\n";
  return out;
}

json runResult(const CapturedRun& run, const serve::ExecRequest& request,
               const RunToolOptions& options) {
  const auto& o = run.outcome;
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", double(request.timeout_ms) / 1000);
  std::string text = o.timed_out ? std::string("timed out after ") + seconds +
                                       " s: the command was killed (exit status " +
                                       std::to_string(o.status) + ")\n"
                                 : "exit status " + std::to_string(o.status) + "\n";
  text += streamText("stdout", run.out) + streamText("stderr", run.err);
  json denials = json::array();
  if (!run.denials.empty()) text += "--- refused by the policy ---\n";
  for (const Denial& d : run.denials) {
    text += d.action + " " + d.what + " (rule " + d.rule_id +
            (d.reason.empty() ? "" : ": " + d.reason) + ")" +
            (d.event_id.empty() ? "" : " [event " + d.event_id + "]") + "\n";
    json denial = {{"action", d.action}, {"what", d.what}, {"rule_id", d.rule_id},
                   {"reason", d.reason}};
    if (!d.event_id.empty()) denial["event_id"] = d.event_id;  // for the explain tool
    denials.push_back(std::move(denial));
  }
  if (run.denials_dropped)
    text += "[and " + std::to_string(run.denials_dropped) + " more refusals]\n";
  if (run.output_unfinished)
    text += "[a process kept the output open after the command ended: reading stopped]\n";
  const bool other_policy = !options.explained_policy_sha256.empty() &&
                            !o.policy_sha256.empty() &&
                            o.policy_sha256 != options.explained_policy_sha256;
  if (other_policy)
    text += "note: the daemon ran this under policy " + o.policy_name + " (sha256 " +
            o.policy_sha256.substr(0, 12) + "…), not the one `explain` answers with (sha256 " +
            options.explained_policy_sha256.substr(0, 12) +
            "…): start supervise mcp with the daemon's policy flags\n";
  json result = mcpTextResult(text, o.timed_out);
  result["structuredContent"] = {{"exit_code", o.status},
                                 {"policy", {{"name", o.policy_name}, {"sha256", o.policy_sha256},
                                             {"explained", !other_policy}}},
                                 {"timed_out", o.timed_out},
                                 {"command_id", o.command_id},
                                 {"stdout", run.out.bytes},
                                 {"stderr", run.err.bytes},
                                 {"stdout_cut_bytes", run.out.dropped},
                                 {"stderr_cut_bytes", run.err.dropped},
                                 {"denials", denials},
                                 {"denials_cut", run.denials_dropped}};
  return result;
}

}  // namespace

McpTool makeRunTool(RunToolOptions options) {
  McpTool t;
  t.name = "run";
  t.title = "Run a command under supervise";
  t.description =
      "Run a command on this machine under the supervise policy, in a session of its own "
      "(through the exec daemon). Give `command` (a shell line, run as bash -c) or `argv`. "
      "Returns the exit status, stdout, stderr and each operation the policy refused with its "
      "rule and reason: a refused write or connect fails inside the command with a permission "
      "error. stdin is empty; output past " +
      std::to_string(options.max_output_bytes) + " bytes per stream is cut.";
  t.input_schema = {
      {"type", "object"},
      {"properties",
       {{"command", {{"type", "string"}, {"description", "a shell line, run as bash -c LINE"}}},
        {"argv",
         {{"type", "array"},
          {"items", {{"type", "string"}}},
          {"minItems", 1},
          {"description", "the program and its arguments, run without a shell"}}},
        {"cwd",
         {{"type", "string"},
          {"description", "working directory (default: " + options.default_cwd + ")"}}},
        {"timeout",
         {{"type", "number"},
          {"description", "seconds before the command is killed (default " +
                              std::to_string(options.default_timeout_ms / 1000) + ")"}}},
        {"profile", {{"type", "string"}, {"description", "the policy profile to start in"}}},
        {"env",
         {{"type", "object"},
          {"additionalProperties", {{"type", "string"}}},
          {"description", "variables to set for the command"}}}}},
      {"additionalProperties", false}};
  t.call = [options](const json& arguments, int cancel_fd) -> json {
    serve::ExecRequest request;
    std::string why;
    if (!runRequest(arguments, options, &request, &why)) return invalid(why);
    auto run = runCaptured(options.socket, request, options.max_output_bytes, cancel_fd);
    if (!run)
      return mcpTextResult("supervise: the command did not run: " + run.error().message(), true);
    return runResult(*run, request, options);
  };
  return t;
}

McpTool makeExplainTool(ExplainFn explain) {
  McpTool t;
  t.name = "explain";
  t.title = "Explain a policy decision";
  t.description =
      "Ask the supervise policy what it decides for one operation, and why: \"write .env\", "
      "\"read ~/.ssh/id_rsa\", \"exec /usr/bin/curl\", \"connect github.com:443\", \"env "
      "GITHUB_TOKEN\", or an audit event id (SEQ or SESSION:SEQ). Returns allow or deny, the "
      "rule, its reason and how the policy could allow it. Relative paths are taken from the "
      "server's directory.";
  t.input_schema = {
      {"type", "object"},
      {"properties",
       {{"query",
         {{"type", "string"},
          {"description", "OPERATION TARGET (read|write|exec|connect|socket|env) or an EVENT_ID"}}},
        {"profile", {{"type", "string"}, {"description", "decide inside this profile"}}},
        {"as_exe",
         {{"type", "string"},
          {"description", "decide as a process running this binary (its exec.switch profile)"}}}}},
      {"required", {"query"}},
      {"additionalProperties", false}};
  t.call = [explain = std::move(explain)](const json& a, int /*cancel_fd*/) -> json {
    for (auto it = a.begin(); it != a.end(); ++it)
      if (it.key() != "query" && it.key() != "profile" && it.key() != "as_exe")
        return invalid("unknown argument \"" + it.key() + "\"");
    if (!a.contains("query") || !a["query"].is_string()) return invalid("query must be a string");
    for (const char* k : {"profile", "as_exe"})
      if (a.contains(k) && !a[k].is_string()) return invalid(std::string(k) + " must be a string");
    // "write .env" → {"write", ".env"}: the target is the rest, spaces and all.
    std::string q = a["query"].get<std::string>();
    const size_t start = q.find_first_not_of(" \t");
    if (start == std::string::npos) return invalid("query is empty");
    q.erase(0, start);
    while (!q.empty() && (q.back() == ' ' || q.back() == '\t')) q.pop_back();
    std::vector<std::string> words;
    const size_t space = q.find_first_of(" \t");
    words.push_back(q.substr(0, space));
    if (space != std::string::npos) words.push_back(q.substr(q.find_first_not_of(" \t", space)));
    if (words[0] == "-") return invalid("\"-\" (an audit line on stdin) is for the command line");
    ExplainAnswer answer = explain(words, a.value("profile", ""), a.value("as_exe", ""));
    if (answer.exit_code != 0 && answer.exit_code != 1)
      return mcpTextResult(answer.error.empty() ? "explain failed" : answer.error, true);
    json result = mcpTextResult(answer.text, false);
    json structured = json::parse(answer.json, nullptr, false);
    if (structured.is_object()) result["structuredContent"] = structured;
    return result;
  };
  return t;
}

}  // namespace sv::supervisor::agent
