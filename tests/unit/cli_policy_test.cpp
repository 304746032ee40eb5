// The validate and explain subcommands, driven through CLI11 in-process:
// exit codes, printed verdicts and diagnostics.
#include <gtest/gtest.h>

#include <algorithm>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "supervisor/cli/commands.h"
#include "supervisor/cli/policy_args.h"
#include "tests/unit/cli_test_util.h"

namespace sv::supervisor {
namespace {

namespace fs = std::filesystem;

class CliTest : public CliFixture {
 protected:
  CliTest() : CliFixture({registerValidate, registerExplain}) {}
};

// explain decides under the policy a run here would use: the discovered
// ./.supervise.json (status reports the same file), not the preset alone.
TEST_F(CliTest, ExplainHonoursTheDiscoveredPolicyFile) {
  std::string out;
  EXPECT_EQ(run({"explain", "write", "notes.txt"}, &out), 0) << out;
  write(".supervise.json",
        R"({"filesystem": {"denyWrite": [{"path": "notes.txt", "id": "deny-notes",
            "reason": "notes are read-only"}]}})");
  EXPECT_EQ(run({"explain", "write", "notes.txt"}, &out), 1) << out;
  EXPECT_EQ(out.substr(0, 5), "deny\n") << out;
  EXPECT_NE(out.find("rule:   deny-notes"), std::string::npos) << out;
  // --policy still wins over discovery.
  write("other.json", "{}");
  EXPECT_EQ(run({"explain", "-p", "other.json", "write", "notes.txt"}, &out), 0) << out;
}

TEST_F(CliTest, ExplainWriteEnvIsDenied) {
  std::string out;
  EXPECT_EQ(run({"explain", "write", ".env"}, &out), 1);
  EXPECT_EQ(out.substr(0, 5), "deny\n") << out;
  EXPECT_NE(out.find("rule:   deny-write-env"), std::string::npos) << out;
  EXPECT_NE(out.find("secrets stay out of the agent's reach"), std::string::npos) << out;
  EXPECT_NE(out.find("suggestion:"), std::string::npos) << out;
}

TEST_F(CliTest, ExplainAllowAndJson) {
  std::string out;
  EXPECT_EQ(run({"explain", "write", "src/main.c"}, &out), 0);
  EXPECT_EQ(out.substr(0, 6), "allow\n") << out;
  EXPECT_EQ(run({"explain", "--json", "connect", "127.0.0.1:8080"}, &out), 0);
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["verdict"], "allow");
  EXPECT_EQ(j["rule_id"], "network-loopback");
  EXPECT_EQ(run({"explain", "--json", "connect", "[2001:db8::1]:443"}, &out), 1);
  j = nlohmann::json::parse(out);
  EXPECT_EQ(j["rule_id"], "default-deny-connect");
  EXPECT_EQ(j["suggestion"], "add \"[2001:db8::1]:443\" to network.allow");
}

TEST_F(CliTest, ExplainProfilesViaAsExe) {
  write("p.json", R"({
    "exec": {"deny": [{"path": "/usr/bin/ssh", "reason": "ssh only under git"}],
             "switch": [{"match": "/usr/bin/git", "profile": "git"}]},
    "profiles": {"git": {"exec": {"allow": ["/usr/bin/ssh"]},
                         "network": {"allow": ["github.com:22"]}}}})");
  std::string out;
  EXPECT_EQ(run({"explain", "-p", "p.json", "exec", "/usr/bin/ssh"}, &out), 1);
  EXPECT_NE(out.find("exec.deny:/usr/bin/ssh"), std::string::npos) << out;
  EXPECT_NE(out.find("ssh only under git"), std::string::npos) << out;
  EXPECT_EQ(run({"explain", "-p", "p.json", "exec", "/usr/bin/ssh", "--as-exe", "/usr/bin/git"}, &out),
            0);
  EXPECT_NE(out.find("(profile git)"), std::string::npos) << out;
  EXPECT_EQ(run({"explain", "-p", "p.json", "--profile", "git", "connect", "github.com:22"}, &out), 0);
  EXPECT_EQ(run({"explain", "-p", "p.json", "connect", "github.com:22"}, &out), 1);
  EXPECT_EQ(run({"explain", "-p", "p.json", "--profile", "nope", "read", "x"}), 2);
}

TEST_F(CliTest, ExplainOverridesPresetAndEnv) {
  std::string out;
  EXPECT_EQ(run({"explain", "-o", "network.mode=none", "connect", "127.0.0.1:80"}, &out), 1);
  EXPECT_NE(out.find("network-none"), std::string::npos);
  EXPECT_EQ(run({"explain", "--preset", "strict", "write", "x"}, &out), 1);
  EXPECT_EQ(run({"explain", "--preset", "audit-only", "write", "/etc/x"}, &out), 0);
  ::setenv("SUPERVISE_MODE", "audit", 1);
  EXPECT_EQ(run({"explain", "write", ".env"}, &out), 1);
  EXPECT_NE(out.find("would-deny"), std::string::npos) << out;
  ::unsetenv("SUPERVISE_MODE");
  EXPECT_EQ(run({"explain", "--workspace", "/elsewhere", "write", "/elsewhere/f"}, &out), 0);
  EXPECT_EQ(run({"explain", "write", "/elsewhere/f"}, &out), 1);
}

TEST_F(CliTest, ExplainBadInput) {
  std::string err;
  EXPECT_EQ(run({"explain", "connect", "nonsense"}, nullptr, &err), 2);
  EXPECT_NE(err.find("connect target"), std::string::npos) << err;
  EXPECT_EQ(run({"explain", "connect", "1.2.3.4:99999"}), 2);
  EXPECT_EQ(run({"explain", "frobnicate", "x"}), kUsageExitCode);
  EXPECT_EQ(run({"explain", "-p", "missing.json", "read", "x"}, nullptr, &err), 2);
  EXPECT_NE(err.find("missing.json"), std::string::npos) << err;
  write("bad.json", "{\"mode\": \"loud\"}");
  EXPECT_EQ(run({"explain", "-p", "bad.json", "read", "x"}, nullptr, &err), 2);
  EXPECT_EQ(err, "bad.json:1:10: error: invalid value \"loud\" (expected one of: enforce, audit)\n");
}

TEST_F(CliTest, Validate) {
  write("good.json", R"({"version": 1, "network": {"mode": "none", "allow": ["10.0.0.0/8"]}})");
  write("bad.json", "{\n  \"mode\": \"loud\",\n  \"filesystem\": {\"denyWirte\": []}\n}\n");
  std::string out, err;
  EXPECT_EQ(run({"validate", "good.json"}, &out, &err), 0);
  EXPECT_EQ(out, "good.json: valid (1 warning)\n");
  EXPECT_NE(err.find("good.json:1:54: warning: network.allow entry never fires"), std::string::npos)
      << err;
  EXPECT_EQ(run({"validate", "good.json", "bad.json"}, &out, &err), 2);
  EXPECT_NE(err.find("bad.json:2:11: error: invalid value \"loud\""), std::string::npos) << err;
  EXPECT_NE(err.find("bad.json:3:18: error: unknown key \"denyWirte\""), std::string::npos) << err;
  EXPECT_EQ(run({"validate", "--json", "bad.json"}, &out), 2);
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["valid"], false);
  EXPECT_EQ(j["files"][0]["diagnostics"].size(), 2u);
  EXPECT_EQ(j["files"][0]["diagnostics"][0]["line"], 2);
  EXPECT_EQ(j["files"][0]["diagnostics"][0]["column"], 11);
  EXPECT_EQ(run({"validate", "nope.json"}, &out, &err), 2);
  EXPECT_EQ(run({"validate"}), kUsageExitCode);
}

TEST_F(CliTest, LoadPolicyReadsFileEnvAndCwd) {
  write("p.json", R"({"filesystem": {"writableRoots": ["out"]}})");
  PolicyArgs args;
  args.policy_file = "p.json";
  args.overrides = {"mode=audit"};
  ::setenv("SUPERVISE_NETWORK", "none", 1);
  std::vector<policy::Diagnostic> diags;
  auto p = loadPolicy(args, &diags);
  ::unsetenv("SUPERVISE_NETWORK");
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ((*p)->workspace, fs::current_path().string());
  EXPECT_EQ((*p)->mode, policy::Mode::Audit);
  EXPECT_EQ((*p)->network.mode, policy::NetworkMode::None);
  const auto& roots = (*p)->filesystem.writable_roots;
  EXPECT_TRUE(std::any_of(roots.begin(), roots.end(), [](const policy::PathRule& r) {
    return r.glob.pattern() == (fs::current_path() / "out").string();
  }));
  args.policy_file = "missing.json";
  auto q = loadPolicy(args, &diags);
  ASSERT_FALSE(q);
  EXPECT_EQ(q.error().code, ENOENT);
}

}  // namespace
}  // namespace sv::supervisor
