// `supervise agent claude-code [--install | --check] [--project DIR] [--socket PATH] [--ask]
//                              [-- AGENT...]`
// `supervise agent claude-code-hook [--socket PATH] [--ask]`   (run by Claude Code)
//
// Claude Code's Bash tool through the exec daemon (docs/agents.md): prints,
// or merges into DIR/.claude/settings.json, a PreToolUse hook whose command
// is `supervise agent claude-code-hook`, which rewrites every Bash command
// to `supervise exec -- bash -c '…'` (supervisor/agent/claude_hook.h).
// --install and --check then probe the installed hook (agent/hook_probe.h)
// and fail when it does not rewrite: a hook that fails to start is a silent
// bypass in Claude Code. `--check -- claude ...` starts the agent only when
// the probe passed. Exit 0 ok, 1 the probe failed, 2 usage or settings error.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "supervisor/agent/claude_hook.h"
#include "supervisor/agent/hook_probe.h"
#include "supervisor/cli/commands.h"

namespace sv::supervisor {
namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

constexpr int kProbeFailed = 1;
constexpr int kSettingsError = 2;
// A hook payload is one tool call; a Write of a big file is the largest.
constexpr size_t kMaxPayloadBytes = 64u << 20;

struct AgentArgs {
  std::string project, socket;
  bool install = false, check = false, ask = false;
  std::vector<std::string> agent;  // after --: started when the probe passed
};

// This binary, as the hook and its rewrite must name it: a full path, so
// neither depends on Claude Code's PATH.
std::string selfPath() {
  std::error_code ec;
  std::string self = fs::read_symlink("/proc/self/exe", ec).string();
  // Replaced on disk while running (an upgrade): the new file has the old name.
  constexpr std::string_view kDeleted = " (deleted)";
  if (self.ends_with(kDeleted)) self.resize(self.size() - kDeleted.size());
  return self;
}

// The lean client beside this binary (installed with it: docs/serve.md), if
// it is there: the rewritten commands start faster through it.
std::string leanClientBeside(const std::string& supervise) {
  if (supervise.empty()) return {};
  const std::string client = (fs::path(supervise).parent_path() / "supervise-exec").string();
  return ::access(client.c_str(), X_OK) == 0 ? client : std::string();
}

agent::HookOptions hookOptions(const AgentArgs& a) {
  const std::string self = selfPath();
  return {.supervise = self, .client = leanClientBeside(self), .socket = a.socket, .ask = a.ask};
}

// The settings file's JSON, {} when there is none; nullopt (and a message)
// when it cannot be read or is not JSON: --install must not overwrite it then.
std::optional<ordered_json> readSettings(const fs::path& file, bool* exists) {
  std::error_code ec;
  *exists = fs::exists(file, ec);
  if (!*exists && !ec) return ordered_json::object();
  std::ifstream in(file);
  if (!in) {
    std::fprintf(stderr, "supervise agent: cannot read %s\n", file.c_str());
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  ordered_json j = ordered_json::parse(text.str(), nullptr, false);
  if (j.is_discarded()) {
    std::fprintf(stderr,
                 "supervise agent: %s is not valid JSON; fix it first (it was left as it is)\n",
                 file.c_str());
    return std::nullopt;
  }
  return j;
}

// Writes `text` to `file` through a temporary file and rename(), keeping the
// old file's mode: Claude Code never reads half a settings file.
bool writeAtomically(const fs::path& file, const std::string& text) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  struct stat st {};
  const mode_t mode = ::stat(file.c_str(), &st) == 0 ? st.st_mode & 07777 : 0644;
  const fs::path tmp = file.string() + ".supervise-tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  bool ok = fd >= 0;
  for (size_t done = 0; ok && done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    ok = n > 0;
    done += ok ? size_t(n) : 0;
  }
  if (fd >= 0) {
    ok = ::fsync(fd) == 0 && ok;
    ::close(fd);
  }
  if (ok) ok = ::rename(tmp.c_str(), file.c_str()) == 0;
  if (!ok) {
    std::fprintf(stderr, "supervise agent: cannot write %s: %s\n", file.c_str(),
                 std::strerror(errno));
    ::unlink(tmp.c_str());
  }
  return ok;
}

// Probes the hooks installed in the project; prints what it found. The
// daemon run is reported, not required: a daemon that is down makes every
// command fail (exit 125), which is no bypass.
int probeProject(const fs::path& project, bool run_through_daemon) {
  std::vector<std::string> commands;
  std::vector<std::string> files;
  for (const char* name : {"settings.json", "settings.local.json"}) {
    bool exists = false;
    auto settings = readSettings(project / ".claude" / name, &exists);
    if (!settings) return kSettingsError;
    for (auto& c : agent::installedHookCommands(*settings)) commands.push_back(c);
    if (exists) files.push_back((project / ".claude" / name).string());
  }
  if (commands.empty()) {
    std::fprintf(stderr,
                 "supervise agent: no supervise hook for the Bash tool in %s/.claude/settings.json "
                 "(or settings.local.json): Bash commands would run unsupervised. Install it with "
                 "`supervise agent claude-code --install`\n",
                 project.c_str());
    return kProbeFailed;
  }
  agent::ProbeResult r = agent::probeHooks(commands, project.string(), run_through_daemon);
  if (!r.rewritten) {
    for (const auto& p : r.problems)
      std::fprintf(stderr, "supervise agent: probe: %s\n", p.c_str());
    std::fprintf(stderr,
                 "supervise agent: the hook does not rewrite Bash commands: refusing "
                 "(Claude Code would run them unsupervised)\n");
    return kProbeFailed;
  }
  std::printf("probe: the hook rewrites Bash commands to run through supervise exec (%zu hook%s)\n",
              commands.size(), commands.size() == 1 ? "" : "s");
  if (run_through_daemon) {
    if (r.daemon_ran)
      std::printf("probe: the exec daemon ran the sample command\n");
    else
      std::fprintf(stderr,
                   "supervise agent: warning: the sample command did not run through the daemon "
                   "(%s); Bash commands will fail until `supervise serve` runs\n",
                   r.daemon_problem.c_str());
  }
  return 0;
}

int runClaudeCode(const AgentArgs& a) {
  const agent::HookOptions options = hookOptions(a);
  if (options.supervise.empty()) {
    std::fprintf(stderr, "supervise agent: cannot tell where this binary is (/proc/self/exe)\n");
    return kSettingsError;
  }
  const std::string command = agent::hookCommandLine(options);
  std::error_code ec;
  const fs::path project = fs::absolute(a.project.empty() ? "." : a.project, ec);
  if (!a.install && !a.check) {
    ordered_json fragment = ordered_json::object();
    std::string error;
    agent::installHook(fragment, command, &error);
    std::printf("%s\n", fragment.dump(2).c_str());
    return 0;
  }
  if (a.install) {
    const fs::path file = project / ".claude" / "settings.json";
    bool exists = false;
    auto settings = readSettings(file, &exists);
    if (!settings) return kSettingsError;
    const ordered_json before = *settings;
    std::string error;
    if (!agent::installHook(*settings, command, &error)) {
      std::fprintf(stderr, "supervise agent: %s: %s; left as it is\n", file.c_str(), error.c_str());
      return kSettingsError;
    }
    if (!writeAtomically(file, settings->dump(2) + "\n")) return kSettingsError;
    std::printf("installed the supervise hook for the Bash tool in %s\n", file.c_str());
    if (const int rc = probeProject(project, /*run_through_daemon=*/false); rc != 0) {
      // Leave the file as it was rather than with a hook that does not work.
      if (exists)
        writeAtomically(file, before.dump(2) + "\n");
      else
        fs::remove(file, ec);
      std::fprintf(stderr, "supervise agent: %s restored\n", file.c_str());
      return rc;
    }
  }
  if (a.check) {
    if (const int rc = probeProject(project, /*run_through_daemon=*/true); rc != 0) return rc;
    if (!a.agent.empty()) {
      std::fflush(stdout);
      std::vector<char*> argv;
      for (const auto& s : a.agent) argv.push_back(const_cast<char*>(s.c_str()));
      argv.push_back(nullptr);
      ::execvp(argv[0], argv.data());
      std::fprintf(stderr, "supervise agent: cannot start %s: %s\n", argv[0], std::strerror(errno));
      return 127;
    }
  }
  return 0;
}

int runHook(const AgentArgs& a) {
  std::string payload;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(0, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    payload.append(buf, size_t(n));
    if (payload.size() > kMaxPayloadBytes) {
      std::fprintf(stderr, "supervise agent claude-code-hook: the payload is over %zu MiB\n",
                   kMaxPayloadBytes >> 20);
      return agent::kHookBlock;
    }
  }
  const agent::HookOptions options = hookOptions(a);
  if (options.supervise.empty()) {
    std::fprintf(stderr, "supervise agent claude-code-hook: cannot tell where this binary is\n");
    return agent::kHookBlock;
  }
  agent::HookReply reply = agent::answerHook(payload, options);
  std::fputs(reply.out.c_str(), stdout);
  std::fputs(reply.err.c_str(), stderr);
  return reply.exit_code;
}

}  // namespace

void registerAgent(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<AgentArgs>();
  CLI::App* agent = app.add_subcommand(
      "agent", "coding-agent integrations: Claude Code's Bash tool through the exec daemon");
  agent->require_subcommand(1);

  CLI::App* cc = agent->add_subcommand(
      "claude-code",
      "print, or --install into .claude/settings.json, the PreToolUse hook that runs every Bash "
      "command through `supervise exec`; --check probes it");
  cc->add_flag("--install", args->install,
               "merge the hook into PROJECT/.claude/settings.json (everything else kept), then "
               "probe it");
  cc->add_flag("--check", args->check,
               "probe the installed hook with a sample Bash call: exit 1 when it does not rewrite "
               "the command; then run AGENT... if given");
  cc->add_option("--project", args->project, "the project directory (default: this one)");
  cc->add_option("--socket", args->socket, "the daemon's socket (default as supervise exec)");
  cc->add_flag("--ask", args->ask,
               "have Claude Code ask before each rewritten command (default: allow it, the "
               "policy decides what it may do)");
  cc->add_option("agent", args->agent, "with --check: the agent to start after the probe passed");
  cc->footer(
      "Examples:\n  supervise agent claude-code --install\n"
      "  supervise agent claude-code --check -- claude\n  supervise agent claude-code > hook.json");
  cc->callback([&ctx, args] {
    ctx.exit_code = runGuarded("agent", kSettingsError, [&] {
      if (!args->agent.empty() && !args->check) {
        std::fprintf(stderr, "supervise agent: an agent command goes with --check\n");
        return kUsageExitCode;
      }
      return runClaudeCode(*args);
    });
  });

  CLI::App* hook = agent->add_subcommand(
      "claude-code-hook",
      "the hook itself (Claude Code runs it): a PreToolUse payload on stdin, the rewritten Bash "
      "call on stdout");
  hook->add_option("--socket", args->socket, "the daemon's socket, for the rewritten command");
  hook->add_flag("--ask", args->ask, "answer permissionDecision \"ask\" instead of \"allow\"");
  hook->callback([&ctx, args] {
    // Any failure blocks the call (exit 2): another exit would let it run unsupervised.
    ctx.exit_code =
        runGuarded("agent claude-code-hook", agent::kHookBlock, [&] { return runHook(*args); });
  });
}

}  // namespace sv::supervisor
