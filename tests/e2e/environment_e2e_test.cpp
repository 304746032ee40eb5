// The command's environment (docs/policy.md, "Environment") through the real
// binary: under the default preset `env` in the tree shows none of the
// credential variables supervise was started with and every ordinary one with
// its value; the start event names exactly what went, and no value appears
// anywhere in the audit file. Then a one-line allowlist policy, an `-o` that
// keeps one stripped name, audit mode (nothing stripped, would_remove listed)
// and `supervise explain env NAME`.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/common/audit_events.h"
#include "tests/common/host_features.h"
#include "tests/common/run_command.h"

namespace sv::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kSupervise = SV_SUPERVISE_BIN;

// The values are distinctive so a leak anywhere in the audit file is found.
const std::map<std::string, std::string> kSecrets = {
    {"GITHUB_TOKEN", "ghp_e2eSecretValue0001"},
    {"AWS_SECRET_ACCESS_KEY", "awsE2eSecretValue0002"},
    {"OPENAI_API_KEY", "sk-e2eSecretValue0003"},
    {"SSH_AUTH_SOCK", "/tmp/ssh-e2eSecretValue0004/agent.1"},
};
const std::map<std::string, std::string> kOrdinary = {
    {"PATH", "/usr/bin:/bin"},
    {"HOME", "/root"},
    {"LANG", "C.UTF-8"},
    {"TOKENIZERS_PARALLELISM", "false"},
};

// NAME → value of `env` output.
std::map<std::string, std::string> parseEnv(const std::string& out) {
  std::map<std::string, std::string> vars;
  size_t start = 0;
  while (start < out.size()) {
    size_t nl = out.find('\n', start);
    if (nl == std::string::npos) nl = out.size();
    std::string line = out.substr(start, nl - start);
    start = nl + 1;
    size_t eq = line.find('=');
    if (eq != std::string::npos) vars[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return vars;
}

const json* startEvent(const std::vector<json>& events) {
  for (const auto& e : events)
    if (e.value("category", "") == "session" && e.value("operation", "") == "start") return &e;
  return nullptr;
}

// The names in session.environment.<key>, each with its rule id.
std::map<std::string, std::string> listed(const json& start, const char* key) {
  std::map<std::string, std::string> out;
  const json& env = start["session"]["environment"];
  if (!env.contains(key)) return out;
  for (const auto& r : env[key]) out[r.value("name", "")] = r["rule"].value("id", "");
  return out;
}

class Environment : public testing::Test {
 protected:
  void SetUp() override {
    if (std::string missing = missingSessionFeature(kSupervise); !missing.empty())
      GTEST_SKIP() << missing;
    char tmpl[] = "/tmp/sv-env-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr) << std::strerror(errno);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  CommandResult run(std::vector<std::string> args, const std::string& name) {
    CommandOptions o;
    o.cwd = dir_;
    for (const auto& m : {kSecrets, kOrdinary})
      for (const auto& [k, v] : m) o.env.push_back(k + "=" + v);
    std::vector<std::string> argv = {kSupervise};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv, dir_ + "/" + name, o);
  }

  std::string dir_;
};

TEST_F(Environment, DefaultPresetStripsCredentialsAndTheStartEventNamesThem) {
  const std::string audit = dir_ + "/audit.jsonl";
  CommandResult r = run({"--audit-file", audit, "--", "env"}, "default");
  ASSERT_EQ(r.status, 0) << r.describe();
  const auto vars = parseEnv(r.out);
  for (const auto& [k, v] : kSecrets) EXPECT_EQ(vars.count(k), 0u) << k << "\n" << r.out;
  for (const auto& [k, v] : kOrdinary) EXPECT_EQ(vars.count(k) ? vars.at(k) : "<absent>", v) << k;

  const std::string text = slurp(audit);
  for (const auto& [k, v] : kSecrets) EXPECT_EQ(text.find(v), std::string::npos) << k << " leaked";
  const auto events = readAuditEvents(audit);
  const json* start = startEvent(events);
  ASSERT_NE(start, nullptr) << text;
  EXPECT_EQ(start->value("schema_version", ""), "1.8");
  const json& env = (*start)["session"]["environment"];
  EXPECT_EQ(env.value("applied", false), true) << env.dump();
  EXPECT_FALSE(env.contains("would_remove"));
  EXPECT_EQ(listed(*start, "removed"),
            (std::map<std::string, std::string>{
                {"AWS_SECRET_ACCESS_KEY", "env-secret:aws-secret-access-key"},
                {"GITHUB_TOKEN", "env-secret:github-token"},
                {"OPENAI_API_KEY", "env-secret:openai-api-key"},
                {"SSH_AUTH_SOCK", "env-secret:ssh-auth-sock"}}))
      << env.dump();
  for (const auto& rem : env["removed"]) EXPECT_FALSE(rem["rule"].value("reason", "").empty());
  EXPECT_EQ(env["set"], json::array());
}

TEST_F(Environment, AllowlistPolicyIsOneLine) {
  {
    std::ofstream(dir_ + "/p.json")
        << R"({"environment": {"mode": "allowlist", "allow": ["PATH", "HOME", "LANG"]}})";
  }
  const std::string audit = dir_ + "/audit.jsonl";
  CommandResult r = run({"--policy", "p.json", "--audit-file", audit, "--", "env"}, "allowlist");
  ASSERT_EQ(r.status, 0) << r.describe();
  const auto vars = parseEnv(r.out);
  std::set<std::string> got;
  for (const auto& [k, v] : vars) got.insert(k);
  EXPECT_EQ(got, (std::set<std::string>{"PATH", "HOME", "LANG"})) << r.out;
  const auto events = readAuditEvents(audit);
  const json* start = startEvent(events);
  ASSERT_NE(start, nullptr);
  const auto removed = listed(*start, "removed");
  EXPECT_EQ(removed.size(), 5u) << start->dump();
  EXPECT_EQ(removed.at("TOKENIZERS_PARALLELISM"), "default-strip-env");
  EXPECT_EQ(removed.at("GITHUB_TOKEN"), "env-secret:github-token");
  for (const auto& [k, v] : kSecrets) EXPECT_EQ(slurp(audit).find(v), std::string::npos) << k;
}

TEST_F(Environment, AnOverrideKeepsOneAndSetGivesAFixedValue) {
  // The value in a policy file: given with -o it would be in supervise's own
  // argv, which events show (parent.argv) unless audit.redact hides it.
  {
    std::ofstream(dir_ + "/p.json") << R"({"environment": {"set": {"SV_E2E_FIXED": "fixed-value"}}})";
  }
  const std::string audit = dir_ + "/audit.jsonl";
  CommandResult r = run({"--policy", "p.json", "-o", "environment.allow+=GITHUB_TOKEN",
                         "--audit-file", audit, "--", "env"},
                        "override");
  ASSERT_EQ(r.status, 0) << r.describe();
  const auto vars = parseEnv(r.out);
  EXPECT_EQ(vars.count("GITHUB_TOKEN") ? vars.at("GITHUB_TOKEN") : "<absent>",
            kSecrets.at("GITHUB_TOKEN"));
  EXPECT_EQ(vars.count("SV_E2E_FIXED") ? vars.at("SV_E2E_FIXED") : "<absent>", "fixed-value");
  EXPECT_EQ(vars.count("OPENAI_API_KEY"), 0u);
  const auto events = readAuditEvents(audit);
  const json* start = startEvent(events);
  ASSERT_NE(start, nullptr);
  const auto removed = listed(*start, "removed");
  EXPECT_EQ(removed.size(), 3u) << start->dump();
  EXPECT_EQ(removed.count("GITHUB_TOKEN"), 0u);
  EXPECT_EQ((*start)["session"]["environment"]["set"], json::array({"SV_E2E_FIXED"}));
  EXPECT_EQ(slurp(audit).find("fixed-value"), std::string::npos) << "a set value is not recorded";
}

TEST_F(Environment, AuditModeKeepsEverythingAndSaysWhatItWouldStrip) {
  const std::string audit = dir_ + "/audit.jsonl";
  CommandResult r = run({"--preset", "audit-only", "--audit-file", audit, "--", "env"}, "audit");
  ASSERT_EQ(r.status, 0) << r.describe();
  const auto vars = parseEnv(r.out);
  for (const auto& [k, v] : kSecrets) EXPECT_EQ(vars.count(k), 1u) << k;
  const auto events = readAuditEvents(audit);
  const json* start = startEvent(events);
  ASSERT_NE(start, nullptr);
  EXPECT_EQ((*start)["session"]["environment"].value("applied", true), false);
  EXPECT_EQ(listed(*start, "would_remove").size(), 4u) << start->dump();
  EXPECT_TRUE(listed(*start, "removed").empty());
  for (const auto& [k, v] : kSecrets) EXPECT_EQ(slurp(audit).find(v), std::string::npos) << k;
}

TEST_F(Environment, ExplainEnv) {
  CommandResult r = run({"explain", "env", "GITHUB_TOKEN"}, "explain-strip");
  EXPECT_EQ(r.status, 1) << r.describe();
  EXPECT_NE(r.out.find("rule:   env-secret:github-token"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reason: GitHub token"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("-o environment.allow+=GITHUB_TOKEN"), std::string::npos) << r.out;
  r = run({"explain", "--json", "env", "TOKENIZERS_PARALLELISM"}, "explain-keep");
  EXPECT_EQ(r.status, 0) << r.describe();
  json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j.value("rule_id", ""), "default-keep-env");
  EXPECT_EQ(j.value("operation", ""), "env");
  r = run({"explain", "-o", "environment.allow+=GITHUB_TOKEN", "env", "GITHUB_TOKEN"},
          "explain-kept");
  EXPECT_EQ(r.status, 0) << r.describe();
  EXPECT_NE(r.out.find("rule:   environment.allow:GITHUB_TOKEN"), std::string::npos) << r.out;
  r = run({"explain", "--profile", "x", "env", "PATH"}, "explain-profile");
  EXPECT_EQ(r.status, 2) << r.describe();
}

}  // namespace
}  // namespace sv::test
