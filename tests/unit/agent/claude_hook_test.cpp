// The Claude Code hook's contract (supervisor/agent/claude_hook.h) on
// recorded PreToolUse payloads (fixtures/): every Bash command comes back
// rewritten to `supervise exec -- bash -c '…'` with its other fields kept and
// its bytes intact after a real shell has parsed the rewrite; other tools
// pass untouched; what cannot be rewritten is blocked (exit 2). Then the
// settings.json merge and the probe's check of a hook's answer.
#include "supervisor/agent/claude_hook.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "supervisor/agent/hook_probe.h"

namespace sv::supervisor::agent {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(SV_AGENT_FIXTURES) + "/" + name);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class ClaudeHook : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sv-hook-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // A stand-in for supervise that prints its arguments NUL-separated: what
    // a shell made of the rewritten command, argument by argument.
    fake_ = dir_ + "/fake supervise";  // a space in the path, to be quoted too
    std::ofstream(fake_) << "#!/bin/sh\nprintf '%s\\0' \"$@\"\n";
    ::chmod(fake_.c_str(), 0755);
    options_.supervise = fake_;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The arguments the rewritten command hands supervise, after /bin/sh parsed it.
  std::vector<std::string> argsOf(const std::string& rewritten) {
    auto run = runShell(rewritten, "", dir_, std::chrono::seconds(10));
    EXPECT_TRUE(run.ok());
    std::vector<std::string> args;
    if (!run.ok()) return args;
    EXPECT_EQ(run->status, 0) << run->err;
    std::string cur;
    for (char c : run->out) {
      if (c == '\0') {
        args.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
    return args;
  }

  std::string dir_, fake_;
  HookOptions options_;
};

TEST_F(ClaudeHook, BashCallsComeBackRewrittenWithEveryByteOfTheCommand) {
  for (const char* name : {"bash_quotes.json", "bash_heredoc.json", "bash_subshell.json"}) {
    SCOPED_TRACE(name);
    const std::string payload = fixture(name);
    ASSERT_FALSE(payload.empty());
    const json in = json::parse(payload);
    HookReply reply = answerHook(payload, options_);
    ASSERT_EQ(reply.exit_code, 0) << reply.err;
    EXPECT_TRUE(reply.err.empty());
    ASSERT_TRUE(reply.out.ends_with("\n"));
    EXPECT_EQ(reply.out.find('\n'), reply.out.size() - 1) << "one line of JSON";
    const json out = json::parse(reply.out);
    const json& hso = out.at("hookSpecificOutput");
    EXPECT_EQ(hso.at("hookEventName"), "PreToolUse");
    EXPECT_EQ(hso.at("permissionDecision"), "allow");
    EXPECT_TRUE(hso.at("permissionDecisionReason").is_string());
    const json& updated = hso.at("updatedInput");
    // updatedInput replaces the input: every other field is still there.
    for (auto it = in["tool_input"].begin(); it != in["tool_input"].end(); ++it) {
      if (it.key() == "command") continue;
      EXPECT_EQ(updated.at(it.key()), *it) << it.key();
    }
    const std::string original = in["tool_input"]["command"];
    const std::string rewritten = updated.at("command");
    EXPECT_EQ(rewritten, rewriteCommand(original, options_));
    // What a shell makes of it: supervise exec -- bash -c ORIGINAL, byte for byte.
    EXPECT_EQ(argsOf(rewritten), (std::vector<std::string>{"exec", "--", "bash", "-c", original}));
  }
}

TEST_F(ClaudeHook, TheRewrittenCommandRunsWhatTheModelWrote) {
  // bash itself runs the heredoc fixture's command from the rewrite's last word.
  const std::string rewritten =
      json::parse(answerHook(fixture("bash_heredoc.json"), options_)
                      .out)["hookSpecificOutput"]["updatedInput"]["command"];
  auto args = argsOf(rewritten);
  ASSERT_EQ(args.size(), 5u);
  auto direct = runShell("bash -c " + shellQuote(args[4]), "", dir_, std::chrono::seconds(10));
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(direct->status, 0) << direct->err;
  EXPECT_EQ(direct->out, "2 notes.txt\n");
  std::ifstream notes(dir_ + "/notes.txt");
  std::string text(std::istreambuf_iterator<char>(notes), {});
  EXPECT_EQ(text,
            "line one with 'single' and \"double\" quotes\n$HOME stays literal, `date` too\n");
}

TEST_F(ClaudeHook, OtherToolsPassUntouched) {
  for (const char* name : {"edit_tool.json", "write_tool.json"}) {
    SCOPED_TRACE(name);
    HookReply reply = answerHook(fixture(name), options_);
    EXPECT_EQ(reply.exit_code, 0);
    EXPECT_EQ(reply.out, "") << "no output: the call goes on as it was";
    EXPECT_EQ(reply.err, "");
  }
  // Another event than PreToolUse is not ours either.
  json post = json::parse(fixture("bash_quotes.json"));
  post["hook_event_name"] = "PostToolUse";
  EXPECT_EQ(answerHook(post.dump(), options_).out, "");
}

TEST_F(ClaudeHook, WhatCannotBeRewrittenIsBlocked) {
  const std::string bash = fixture("bash_quotes.json");
  json no_command = json::parse(bash);
  no_command["tool_input"].erase("command");
  json number_command = json::parse(bash);
  number_command["tool_input"]["command"] = 42;
  json nul = json::parse(bash);
  nul["tool_input"]["command"] = std::string("echo a\0b", 8);
  json no_tool = json::parse(bash);
  no_tool.erase("tool_name");
  for (const std::string& payload :
       {std::string("{not json"), std::string(""), std::string("[1,2]"), no_command.dump(),
        number_command.dump(), nul.dump(), no_tool.dump()}) {
    SCOPED_TRACE(payload);
    HookReply reply = answerHook(payload, options_);
    EXPECT_EQ(reply.exit_code, kHookBlock);
    EXPECT_EQ(reply.out, "");
    EXPECT_TRUE(reply.err.starts_with("supervise agent claude-code-hook: ")) << reply.err;
  }
}

TEST_F(ClaudeHook, AskAndSocketOptions) {
  options_.ask = true;
  options_.socket = "/run/user/1000/it's here/exec.sock";
  const json out = json::parse(answerHook(fixture("bash_quotes.json"), options_).out);
  EXPECT_EQ(out["hookSpecificOutput"]["permissionDecision"], "ask");
  const std::string cmd = out["hookSpecificOutput"]["updatedInput"]["command"];
  auto args = argsOf(cmd);
  ASSERT_EQ(args.size(), 7u);
  EXPECT_EQ(args[1], "--socket");
  EXPECT_EQ(args[2], options_.socket);
  EXPECT_EQ(hookCommandLine(options_), shellQuote(fake_) + " agent claude-code-hook --socket " +
                                           shellQuote(options_.socket) + " --ask");
}

// Where the lean client is installed beside supervise, the rewrite runs it:
// the same arguments but the subcommand, every byte of the command kept;
// and the probe accepts that rewrite.
TEST_F(ClaudeHook, TheRewriteRunsTheLeanClientWhereItIsInstalled) {
  options_.client = fake_;
  options_.supervise = "/usr/bin/supervise";
  options_.socket = "/run/it's/exec.sock";
  const std::string original = "printf '%s' \"$HOME\" && echo 'a b'";
  const std::string rewritten = rewriteCommand(original, options_);
  EXPECT_EQ(argsOf(rewritten),
            (std::vector<std::string>{"--socket", options_.socket, "--", "bash", "-c", original}));
  options_.client = "/usr/bin/supervise-exec";
  options_.socket.clear();
  HookReply probe = answerHook(probePayload(kProbeCommand, dir_), options_);
  std::string seen, why;
  EXPECT_TRUE(checkProbeReply(probe.exit_code, probe.out, &seen, &why)) << why;
  EXPECT_EQ(seen, "'/usr/bin/supervise-exec' -- bash -c " + shellQuote(kProbeCommand));
}

TEST_F(ClaudeHook, InstallMergesIntoExistingSettingsKeepingEverythingElse) {
  const ordered_json before = ordered_json::parse(fixture("settings_existing.json"));
  ordered_json settings = before;
  std::string error;
  const std::string cmd = hookCommandLine(options_);
  ASSERT_TRUE(installHook(settings, cmd, &error)) << error;
  // Every key, in its order, as it was; PreToolUse gained one entry at its end.
  ASSERT_EQ(settings.size(), before.size());
  auto a = settings.begin();
  for (auto b = before.begin(); b != before.end(); ++a, ++b) {
    EXPECT_EQ(a.key(), b.key());
    if (a.key() != "hooks") {
      EXPECT_EQ(*a, *b) << a.key();
    }
  }
  EXPECT_EQ(settings["hooks"]["PostToolUse"], before["hooks"]["PostToolUse"]);
  const ordered_json& pre = settings["hooks"]["PreToolUse"];
  ASSERT_EQ(pre.size(), 3u);
  EXPECT_EQ(pre[0], before["hooks"]["PreToolUse"][0]);
  EXPECT_EQ(pre[1], before["hooks"]["PreToolUse"][1]) << "the user's own Bash hook stays";
  EXPECT_EQ(pre[2]["matcher"], "Bash");
  EXPECT_EQ(pre[2]["hooks"][0]["type"], "command");
  EXPECT_EQ(pre[2]["hooks"][0]["command"], cmd);
  EXPECT_TRUE(pre[2]["hooks"][0]["timeout"].is_number());
  EXPECT_EQ(installedHookCommands(settings), std::vector<std::string>{cmd});

  // Again: still one supervise hook. From another path: that one, replaced.
  ASSERT_TRUE(installHook(settings, cmd, &error));
  EXPECT_EQ(settings["hooks"]["PreToolUse"].size(), 3u);
  const std::string moved = "'/opt/supervise/bin/supervise' agent claude-code-hook";
  ASSERT_TRUE(installHook(settings, moved, &error));
  EXPECT_EQ(settings["hooks"]["PreToolUse"].size(), 3u);
  EXPECT_EQ(installedHookCommands(settings), std::vector<std::string>{moved});
}

TEST_F(ClaudeHook, InstallIntoNothingAndRefusesShapesClaudeCodeWouldNotRead) {
  ordered_json empty = ordered_json::object();
  std::string error;
  ASSERT_TRUE(installHook(empty, "x agent claude-code-hook", &error));
  EXPECT_EQ(installedHookCommands(empty), std::vector<std::string>{"x agent claude-code-hook"});
  for (const char* text : {R"({"hooks": []})", R"({"hooks": {"PreToolUse": {}}})", "[]"}) {
    ordered_json bad = ordered_json::parse(text);
    const ordered_json was = bad;
    EXPECT_FALSE(installHook(bad, "x agent claude-code-hook", &error)) << text;
    EXPECT_FALSE(error.empty());
    EXPECT_EQ(bad, was) << "nothing changed";
  }
  // Other users' hooks, or ours under another matcher, are not counted as installed.
  EXPECT_TRUE(
      installedHookCommands(ordered_json::parse(fixture("settings_existing.json"))).empty());
  EXPECT_TRUE(installedHookCommands(
                  ordered_json::parse(
                      R"({"hooks":{"PreToolUse":[{"matcher":"Edit","hooks":[{"type":"command",
                  "command":"supervise agent claude-code-hook"}]}]}})"))
                  .empty());
}

TEST_F(ClaudeHook, TheProbeAcceptsOnlyARewrite) {
  options_.supervise = "/usr/bin/supervise";
  const std::string payload = probePayload(kProbeCommand, dir_);
  HookReply good = answerHook(payload, options_);
  std::string rewritten, why;
  EXPECT_TRUE(checkProbeReply(good.exit_code, good.out, &rewritten, &why)) << why;
  EXPECT_EQ(rewritten, rewriteCommand(kProbeCommand, options_));

  json out = json::parse(good.out);
  auto with = [&](auto edit) {
    json j = out;
    edit(j["hookSpecificOutput"]);
    return j.dump();
  };
  const std::vector<std::pair<int, std::string>> bad = {
      {1, good.out},  // a failing hook: non-blocking in Claude Code
      {0, ""},        // passthrough
      {0, "not json"},
      {0, with([](json& h) { h.erase("updatedInput"); })},
      {0, with([](json& h) { h["permissionDecision"] = "deny"; })},
      {0, with([](json& h) { h["updatedInput"]["command"] = std::string(kProbeCommand); })},
      {0, with([](json& h) {
         h["updatedInput"]["command"] = "'/usr/bin/supervise' exec -- bash -c 'printf x'";
       })},
      {0, with([](json& h) { h["updatedInput"].erase("description"); })},
      {0, with([](json& h) { h["hookEventName"] = "PostToolUse"; })},
  };
  for (const auto& [status, text] : bad) {
    SCOPED_TRACE(text);
    why.clear();
    EXPECT_FALSE(checkProbeReply(status, text, &rewritten, &why));
    EXPECT_FALSE(why.empty());
  }
  // The sample, run by bash, prints what the probe expects of the daemon run.
  auto run = runShell(std::string("bash -c ") + shellQuote(kProbeCommand), "", dir_,
                      std::chrono::seconds(10));
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->out, kProbeExpectedOutput);
}

TEST_F(ClaudeHook, TheProbeRefusesHooksThatDoNotStartOrDoNotRewrite) {
  const std::string silent = dir_ + "/silent-hook";
  std::ofstream(silent) << "#!/bin/sh\ncat > /dev/null\n";
  ::chmod(silent.c_str(), 0755);
  ProbeResult r = probeHooks({shellQuote(dir_ + "/missing") + " agent claude-code-hook",
                              shellQuote(silent) + " agent claude-code-hook"},
                             dir_, false);
  EXPECT_FALSE(r.rewritten);
  ASSERT_EQ(r.problems.size(), 2u);
  EXPECT_NE(r.problems[0].find("status 127"), std::string::npos) << r.problems[0];
  EXPECT_NE(r.problems[1].find("printed nothing"), std::string::npos) << r.problems[1];
  EXPECT_FALSE(probeHooks({}, dir_, false).rewritten) << "no hook is no rewrite";
}

}  // namespace
}  // namespace sv::supervisor::agent
