// The agent integrations through the real binaries and a real daemon
// (docs/agents.md): `supervise serve` started by the test, then
//
//  - `supervise mcp` driven by a scripted JSON-RPC session on its stdin and
//    stdout: initialize, tools/list, tools/call run (a denied write, a plain
//    success, an output far past the cap), tools/call explain, a malformed
//    line, an unknown method, and its exit when stdin closes;
//  - `supervise agent claude-code --install` into an existing
//    .claude/settings.json, `--check` (the probe through the daemon, and
//    starting the agent after it), the probe refusing a hook that cannot
//    start, and the hook's rewrite of a recorded payload run by a shell: the
//    command ran through the daemon, its denied write refused.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/common/host_features.h"
#include "tests/common/run_command.h"
#include "tests/common/serve_daemon.h"

namespace sv::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kSupervise = SV_SUPERVISE_BIN;

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

// `supervise mcp` with a pipe on each side: lines in, messages out.
class McpProcess {
 public:
  McpProcess(const std::vector<std::string>& argv, const std::string& cwd) {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      const int err = ::open((cwd + "/../mcp.err").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (err >= 0) ::dup2(err, 2);
      if (::chdir(cwd.c_str()) != 0) ::_exit(122);
      std::vector<char*> cargv;
      for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
      cargv.push_back(nullptr);
      ::execv(cargv[0], cargv.data());
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    to_ = in[1];
    from_ = out[0];
  }
  ~McpProcess() {
    closeInput();
    if (from_ >= 0) ::close(from_);
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  void sendLine(const std::string& line) {
    const std::string l = line + "\n";
    ASSERT_EQ(::write(to_, l.data(), l.size()), ssize_t(l.size()));
  }
  void closeInput() {
    if (to_ >= 0) ::close(to_);
    to_ = -1;
  }

  // The next message, or null after `timeout`.
  json next(std::chrono::seconds timeout = 60s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const size_t nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        json j = json::parse(line, nullptr, false);
        EXPECT_FALSE(j.is_discarded()) << "stdout carries only JSON: " << line;
        return j;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return nullptr;
      pollfd p{from_, POLLIN, 0};
      if (::poll(&p, 1, int(left.count())) <= 0) continue;
      char buf[65536];
      const ssize_t n = ::read(from_, buf, sizeof buf);
      if (n <= 0) return nullptr;
      buffer_.append(buf, size_t(n));
    }
  }

  // Sends a request and returns its answer (the id pairs them).
  json call(int id, const std::string& method, const json& params) {
    sendLine(json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump());
    json m = next();
    EXPECT_EQ(m.value("id", json()), id) << m.dump();
    return m;
  }

  // Its exit status once stdin closed, -1 when it did not end within `timeout`.
  int waitExit(std::chrono::seconds timeout) {
    for (auto end = std::chrono::steady_clock::now() + timeout;
         std::chrono::steady_clock::now() < end; std::this_thread::sleep_for(10ms)) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string buffer_;
};

class Agent : public testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = missingSessionFeature(kSupervise); !why.empty()) GTEST_SKIP() << why;
    char tmpl[] = "/tmp/sv-agent-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directories(ws_ = dir_ + "/ws");
    daemon_ = std::make_unique<ServeDaemon>(kSupervise, dir_, ws_);
    std::string why;
    ASSERT_TRUE(daemon_->start({}, &why)) << why;
  }
  void TearDown() override {
    if (daemon_) {
      EXPECT_TRUE(daemon_->alive()) << "the daemon lived through it all";
    }
    daemon_.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  CommandResult supervise(const std::vector<std::string>& args, const std::string& cwd) {
    std::vector<std::string> argv = {kSupervise};
    argv.insert(argv.end(), args.begin(), args.end());
    CommandOptions options;
    options.cwd = cwd;
    return runCommand(argv, dir_ + "/cmd-" + std::to_string(++runs_), options);
  }

  std::string dir_, ws_;
  std::unique_ptr<ServeDaemon> daemon_;
  int runs_ = 0;
};

json text(const json& result) { return result["result"]["content"][0]["text"]; }

TEST_F(Agent, McpScriptedSession) {
  McpProcess mcp({kSupervise, "mcp", "--socket", daemon_->socket(), "--max-output", "65536"}, ws_);

  json init = mcp.call(1, "initialize",
                       {{"protocolVersion", "2025-06-18"},
                        {"capabilities", json::object()},
                        {"clientInfo", {{"name", "e2e"}, {"version", "1"}}}});
  ASSERT_TRUE(init.contains("result")) << init.dump();
  EXPECT_EQ(init["result"]["protocolVersion"], "2025-06-18");
  EXPECT_EQ(init["result"]["serverInfo"]["name"], "supervise");
  // The instructions carry the policy summary (explain --summary).
  EXPECT_TRUE(contains(init["result"]["instructions"], "may write: the workspace")) << init.dump();
  mcp.sendLine(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");

  json list = mcp.call(2, "tools/list", json::object());
  std::vector<std::string> names;
  for (auto& t : list["result"]["tools"]) names.push_back(t["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"run", "explain"}));

  // The issue's example through the daemon: a.txt written, .env refused with its rule.
  json denied =
      mcp.call(3, "tools/call",
               {{"name", "run"}, {"arguments", {{"command", "echo hi > a.txt; echo x > .env"}}}});
  const json& d = denied["result"]["structuredContent"];
  EXPECT_EQ(denied["result"]["isError"], false) << denied.dump();
  EXPECT_EQ(d["exit_code"], 1) << denied.dump();
  EXPECT_EQ(slurp(ws_ + "/a.txt"), "hi\n");
  EXPECT_FALSE(fs::exists(ws_ + "/.env"));
  ASSERT_EQ(d["denials"].size(), 1u) << denied.dump();
  EXPECT_EQ(d["denials"][0]["action"], "denied");
  EXPECT_EQ(d["denials"][0]["what"], "write to .env");
  EXPECT_EQ(d["denials"][0]["rule_id"], "deny-write-env");
  EXPECT_FALSE(d["denials"][0]["reason"].get<std::string>().empty());
  EXPECT_TRUE(contains(text(denied), "refused by the policy")) << text(denied);
  EXPECT_TRUE(contains(d["stderr"], "Permission denied")) << denied.dump();
  EXPECT_FALSE(d["command_id"].get<std::string>().empty());
  // Same directory, same flags: the daemon ran it under the policy explain answers with.
  EXPECT_EQ(d["policy"]["sha256"].get<std::string>().size(), 64u) << denied.dump();
  EXPECT_EQ(d["policy"]["explained"], true) << denied.dump();
  EXPECT_FALSE(contains(text(denied), "not the one `explain` answers with")) << text(denied);

  json ok = mcp.call(4, "tools/call",
                     {{"name", "run"}, {"arguments", {{"argv", {"/bin/echo", "hello", "world"}}}}});
  EXPECT_EQ(ok["result"]["isError"], false);
  EXPECT_EQ(ok["result"]["structuredContent"]["exit_code"], 0);
  EXPECT_EQ(ok["result"]["structuredContent"]["stdout"], "hello world\n");
  EXPECT_EQ(ok["result"]["structuredContent"]["denials"].size(), 0u);

  // 3 MB on stdout and 1 MB on stderr at once: both pipes drained (no
  // deadlock), 64 KiB of each kept, the rest counted.
  json big =
      mcp.call(5, "tools/call",
               {{"name", "run"},
                {"arguments",
                 {{"command",
                   "head -c 1000000 /dev/zero | tr '\\0' e >&2 & head -c 3000000 /dev/zero | "
                   "tr '\\0' o; wait"},
                  {"timeout", 60}}}});
  const json& b = big["result"]["structuredContent"];
  EXPECT_EQ(b["exit_code"], 0) << big.dump().substr(0, 2000);
  EXPECT_EQ(b["stdout"].get<std::string>().size(), 65536u);
  EXPECT_EQ(b["stdout_cut_bytes"], 3000000 - 65536);
  EXPECT_EQ(b["stderr_cut_bytes"], 1000000 - 65536);
  EXPECT_TRUE(contains(text(big), "more bytes of stdout not shown"));

  json timeout =
      mcp.call(6, "tools/call",
               {{"name", "run"}, {"arguments", {{"command", "sleep 30"}, {"timeout", 0.5}}}});
  EXPECT_EQ(timeout["result"]["isError"], true);
  EXPECT_EQ(timeout["result"]["structuredContent"]["timed_out"], true) << timeout.dump();

  json explain =
      mcp.call(7, "tools/call", {{"name", "explain"}, {"arguments", {{"query", "write .env"}}}});
  EXPECT_EQ(explain["result"]["isError"], false) << explain.dump();
  EXPECT_EQ(explain["result"]["structuredContent"]["verdict"], "deny");
  EXPECT_EQ(explain["result"]["structuredContent"]["rule_id"], "deny-write-env");
  EXPECT_TRUE(contains(text(explain), "rule:   deny-write-env")) << text(explain);
  json bad_query =
      mcp.call(8, "tools/call", {{"name", "explain"}, {"arguments", {{"query", "teleport x"}}}});
  EXPECT_EQ(bad_query["result"]["isError"], true);

  mcp.sendLine("{\"jsonrpc\": \"2.0\", \"id\": 9, \"method\": ");  // cut short
  json parse = mcp.next();
  EXPECT_EQ(parse["error"]["code"], -32700) << parse.dump();
  EXPECT_TRUE(parse["id"].is_null());
  json unknown = mcp.call(10, "resources/list", json::object());
  EXPECT_EQ(unknown["error"]["code"], -32601);
  json no_tool = mcp.call(11, "tools/call", {{"name", "rm"}, {"arguments", json::object()}});
  EXPECT_EQ(no_tool["error"]["code"], -32602);

  // stdin closed right after a request (`printf ... | supervise mcp`): the
  // call in flight is still answered, then the server ends.
  mcp.sendLine(
      json{{"jsonrpc", "2.0"},
           {"id", 12},
           {"method", "tools/call"},
           {"params", {{"name", "run"}, {"arguments", {{"command", "sleep 0.3; echo late"}}}}}}
          .dump());
  mcp.closeInput();
  json late = mcp.next();
  EXPECT_EQ(late["id"], 12);
  EXPECT_EQ(late["result"]["structuredContent"]["stdout"], "late\n");
  EXPECT_EQ(mcp.waitExit(10s), 0);
}

// notifications/cancelled for a running `run` call: its command is killed
// through the daemon (the client side goes, the daemon kills the tree), no
// answer comes for it, and the server goes on answering.
TEST_F(Agent, McpCancelKillsTheRunningCommand) {
  McpProcess mcp({kSupervise, "mcp", "--socket", daemon_->socket()}, ws_);
  mcp.call(1, "initialize", {{"protocolVersion", "2025-06-18"}});
  mcp.sendLine(json{{"jsonrpc", "2.0"},
                    {"id", 2},
                    {"method", "tools/call"},
                    {"params",
                     {{"name", "run"},
                      {"arguments", {{"command", "echo $$ > pid.tmp && mv pid.tmp pid && exec sleep 60"}}}}}}
                   .dump());
  const std::string pid_file = ws_ + "/pid";
  for (int i = 0; i < 1000 && !fs::exists(pid_file); ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(fs::exists(pid_file)) << "the command did not start";
  const pid_t command = std::stoi(slurp(pid_file));
  ASSERT_EQ(::kill(command, 0), 0);
  mcp.sendLine(json{{"jsonrpc", "2.0"},
                    {"method", "notifications/cancelled"},
                    {"params", {{"requestId", 2}, {"reason", "the user stopped it"}}}}
                   .dump());
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    gone = ::kill(command, 0) != 0 ||
           slurp("/proc/" + std::to_string(command) + "/stat").find(") Z ") != std::string::npos;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(gone) << "the cancelled command still runs";
  // The next answer is the ping's: none ever comes for id 2.
  json pong = mcp.call(3, "ping", json::object());
  EXPECT_EQ(pong["result"], json::object()) << pong.dump();
  mcp.closeInput();
  EXPECT_EQ(mcp.waitExit(10s), 0);
}

// A server started with other policy flags than the daemon's explains with
// another policy than the one commands run under: each run result says so.
TEST_F(Agent, McpSaysWhenTheDaemonRunsAnotherPolicy) {
  McpProcess mcp({kSupervise, "mcp", "--socket", daemon_->socket(), "--preset", "strict"}, ws_);
  mcp.call(1, "initialize", {{"protocolVersion", "2025-06-18"}});
  json r = mcp.call(2, "tools/call", {{"name", "run"}, {"arguments", {{"command", "true"}}}});
  EXPECT_EQ(r["result"]["structuredContent"]["policy"]["explained"], false) << r.dump();
  EXPECT_TRUE(contains(text(r), "not the one `explain` answers with")) << text(r);
  mcp.closeInput();
  EXPECT_EQ(mcp.waitExit(10s), 0);
}

TEST_F(Agent, ClaudeCodeInstallCheckAndTheHookThroughTheDaemon) {
  const std::string project = ws_;
  fs::create_directories(project + "/.claude");
  const std::string settings = project + "/.claude/settings.json";
  fs::copy_file(std::string(SV_AGENT_FIXTURES) + "/settings_existing.json", settings);
  const json before = json::parse(slurp(settings));

  auto install = supervise(
      {"agent", "claude-code", "--install", "--project", project, "--socket", daemon_->socket()},
      dir_);
  ASSERT_EQ(install.status, 0) << install.describe();
  const json after = json::parse(slurp(settings));
  for (auto it = before.begin(); it != before.end(); ++it)
    if (it.key() != "hooks") {
      EXPECT_EQ(after[it.key()], *it) << it.key();
    }
  EXPECT_EQ(after["hooks"]["PostToolUse"], before["hooks"]["PostToolUse"]);
  ASSERT_EQ(after["hooks"]["PreToolUse"].size(), 3u);
  const std::string hook = after["hooks"]["PreToolUse"][2]["hooks"][0]["command"];
  EXPECT_TRUE(contains(hook, "agent claude-code-hook")) << hook;

  // The probe through the daemon, then the agent started after it.
  auto check = supervise(
      {"agent", "claude-code", "--check", "--project", project, "--", "/bin/echo", "agent started"},
      dir_);
  EXPECT_EQ(check.status, 0) << check.describe();
  EXPECT_TRUE(contains(check.out, "the exec daemon ran the sample command")) << check.describe();
  EXPECT_TRUE(contains(check.out, "agent started\n")) << check.describe();

  // The hook, run as Claude Code runs it, on a recorded payload whose command
  // writes a.txt and .env; its rewrite run by a shell goes through the daemon.
  json payload = json::parse(slurp(std::string(SV_AGENT_FIXTURES) + "/bash_quotes.json"));
  payload["cwd"] = project;
  payload["tool_input"]["command"] = "echo \"it's\" > a.txt; echo x > .env";
  std::ofstream(dir_ + "/payload.json") << payload.dump();
  // With nothing on stdin the hook blocks (exit 2), never lets a call through.
  auto answer = supervise({"agent", "claude-code-hook", "--socket", daemon_->socket()}, dir_);
  EXPECT_EQ(answer.status, 2) << answer.describe();
  auto hooked = runCommand({"/bin/sh", "-c", hook + " < " + dir_ + "/payload.json"}, dir_ + "/hook",
                           CommandOptions{project});
  ASSERT_EQ(hooked.status, 0) << hooked.describe();
  const std::string rewritten =
      json::parse(hooked.out)["hookSpecificOutput"]["updatedInput"]["command"];
  auto ran = runCommand({"/bin/sh", "-c", rewritten}, dir_ + "/ran", CommandOptions{project});
  EXPECT_EQ(ran.status, 1) << ran.describe();
  EXPECT_EQ(slurp(project + "/a.txt"), "it's\n");
  EXPECT_FALSE(fs::exists(project + "/.env"));
  EXPECT_TRUE(contains(ran.err, "supervise: denied write to .env (rule deny-write-env"))
      << ran.describe();
}

TEST_F(Agent, TheProbeRefusesAHookThatCannotStart) {
  const std::string project = ws_;
  fs::create_directories(project + "/.claude");
  // Installed by a binary that is gone since: Claude Code would get a
  // non-blocking error and run every command unsupervised.
  std::ofstream(project + "/.claude/settings.json")
      << R"({"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command",)"
         R"("command":"'/opt/gone/supervise' agent claude-code-hook"}]}]}})";
  auto check = supervise(
      {"agent", "claude-code", "--check", "--project", project, "--", "/bin/echo", "agent started"},
      dir_);
  EXPECT_EQ(check.status, 1) << check.describe();
  EXPECT_TRUE(contains(check.err, "refusing")) << check.describe();
  EXPECT_FALSE(contains(check.out, "agent started")) << "the agent is not started";

  // No hook at all: refused too.
  fs::remove(project + "/.claude/settings.json");
  check = supervise({"agent", "claude-code", "--check", "--project", project}, dir_);
  EXPECT_EQ(check.status, 1) << check.describe();
  EXPECT_TRUE(contains(check.err, "--install")) << check.describe();

  // A settings file that is not JSON is left alone by --install.
  std::ofstream(project + "/.claude/settings.json") << "{ // a comment\n}";
  auto install = supervise({"agent", "claude-code", "--install", "--project", project}, dir_);
  EXPECT_EQ(install.status, 2) << install.describe();
  EXPECT_EQ(slurp(project + "/.claude/settings.json"), "{ // a comment\n}");
}

}  // namespace
}  // namespace sv::test
