// The `environment` section (docs/policy.md, "Environment"): the name
// patterns, both modes, layering and -o overrides, errors with file:line:col,
// the built-in credential list against a developer's usual variables, and
// explainEnv.
#include <gtest/gtest.h>

#include <algorithm>

#include "policy/env_rules.h"
#include "policy/load.h"
#include "policy/presets.h"
#include "tests/unit/load_request.h"

namespace sv::policy {
namespace {

using test_util::all;
using test_util::request;

std::shared_ptr<const Policy> loadOk(const LoadRequest& r) {
  LoadResult res = load(r);
  EXPECT_TRUE(res.ok()) << all(res);
  return res.policy;
}

// "kept" or "stripped by <rule id>".
std::string fate(const Policy& p, std::string_view name) {
  Decision d = decideEnv(p.environment, name);
  return d.verdict == Verdict::Allow ? "kept" : "stripped by " + std::string(d.rule_id);
}

std::vector<std::string> names(const std::vector<std::string>& env) {
  std::vector<std::string> out;
  for (const auto& e : env) out.push_back(e.substr(0, e.find('=')));
  return out;
}

TEST(EnvPattern, WholeNameCaseSensitiveStarAndQuestionMark) {
  EXPECT_TRUE(envNameMatches("*_TOKEN", "GITLAB_TOKEN"));
  EXPECT_TRUE(envNameMatches("*_TOKEN", "_TOKEN"));
  EXPECT_FALSE(envNameMatches("*_TOKEN", "TOKEN"));
  EXPECT_FALSE(envNameMatches("*_TOKEN", "GITLAB_TOKEN_FILE"));  // anchored at the end
  EXPECT_FALSE(envNameMatches("*_TOKEN", "gitlab_token"));       // case-sensitive
  EXPECT_FALSE(envNameMatches("TOKEN*", "MY_TOKEN"));            // anchored at the start
  EXPECT_TRUE(envNameMatches("LC_*", "LC_ALL"));
  EXPECT_TRUE(envNameMatches("A?C", "ABC"));
  EXPECT_FALSE(envNameMatches("A?C", "AC"));
  EXPECT_TRUE(envNameMatches("PATH", "PATH"));
  EXPECT_FALSE(envNameMatches("PATH", "PATHS"));
  EXPECT_TRUE(envNameMatches("*", "ANYTHING"));
}

TEST(EnvRules, DenylistKeepsWhatNoDenyMatchesAndAllowWins) {
  auto p = loadOk(request(R"({"environment": {
    "deny": ["*_TOKEN", {"name": "SECRET_?", "id": "no-secrets", "reason": "mine"}],
    "allow": ["CI_JOB_TOKEN"]}})"));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->environment.mode, EnvMode::Denylist);
  EXPECT_EQ(fate(*p, "PATH"), "kept");
  EXPECT_EQ(fate(*p, "GITLAB_TOKEN"), "stripped by environment.deny:*_TOKEN");
  EXPECT_EQ(fate(*p, "SECRET_A"), "stripped by no-secrets");
  EXPECT_EQ(decideEnv(p->environment, "SECRET_A").reason, "mine");
  EXPECT_EQ(fate(*p, "CI_JOB_TOKEN"), "kept");  // allow wins over a broad deny
  EXPECT_EQ(decideEnv(p->environment, "CI_JOB_TOKEN").rule_id, "environment.allow:CI_JOB_TOKEN");
  EXPECT_EQ(decideEnv(p->environment, "PATH").rule_id, kEnvDefaultKeep);
}

TEST(EnvRules, AllowlistIsOneLine) {
  auto p = loadOk(request(R"({"environment": {"mode": "allowlist", "allow": ["PATH", "HOME", "LANG"]}})"));
  ASSERT_TRUE(p);
  EnvFilterResult r = filterEnvironment(
      *p, {"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "EDITOR=vi", "GITHUB_TOKEN=ghp_x"});
  EXPECT_EQ(r.env, (std::vector<std::string>{"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8"}));
  ASSERT_EQ(r.removed.size(), 2u);
  EXPECT_EQ(r.removed[0].name, "EDITOR");
  EXPECT_EQ(r.removed[0].rule_id, kEnvDefaultStrip);
  EXPECT_TRUE(r.applied);
}

// Allow wins in both modes: in allowlist mode an explicit allow keeps a name
// even when a deny pattern (the built-in list) matches it.
TEST(EnvRules, AllowlistOnTheDefaultPresetAllowStillWins) {
  auto p = loadOk(request(
      R"({"environment": {"mode": "allowlist", "allow": ["PATH", "GITHUB_TOKEN"]}})", "code-sandbox"));
  ASSERT_TRUE(p);
  EXPECT_EQ(fate(*p, "PATH"), "kept");
  EXPECT_EQ(fate(*p, "GITHUB_TOKEN"), "kept");
  EXPECT_EQ(fate(*p, "GH_TOKEN"), "stripped by env-secret:gh-token");  // deny names it first
  EXPECT_EQ(fate(*p, "EDITOR"), "stripped by default-strip-env");
}

TEST(EnvRules, SetIsAppliedLastAndAlwaysPresent) {
  auto p = loadOk(request(R"({"environment": {"deny": ["FOO", "*_TOKEN"],
    "set": {"FOO": "fixed", "CI": "1", "API_TOKEN": "placeholder"}}})"));
  ASSERT_TRUE(p);
  EnvFilterResult r = filterEnvironment(*p, {"FOO=inherited", "PATH=/bin", "API_TOKEN=real"});
  // One layer's `set` in name order (JSON objects are unordered), after the rest.
  EXPECT_EQ(r.env, (std::vector<std::string>{"PATH=/bin", "API_TOKEN=placeholder", "CI=1",
                                             "FOO=fixed"}));
  EXPECT_TRUE(r.removed.empty());  // replaced, not removed
  EXPECT_EQ(r.set, (std::vector<std::string>{"API_TOKEN", "CI", "FOO"}));
  EXPECT_EQ(fate(*p, "FOO"), "kept");
  EXPECT_EQ(decideEnv(p->environment, "FOO").rule_id, "environment.set:FOO");
}

TEST(EnvRules, AuditModeStripsNothingAndSaysWhatItWould) {
  auto p = loadOk(request("", "audit-only"));
  ASSERT_TRUE(p);
  EnvFilterResult r = filterEnvironment(*p, {"PATH=/bin", "GITHUB_TOKEN=ghp_x"});
  EXPECT_FALSE(r.applied);
  EXPECT_EQ(r.env, (std::vector<std::string>{"PATH=/bin", "GITHUB_TOKEN=ghp_x"}));
  ASSERT_EQ(r.removed.size(), 1u);
  EXPECT_EQ(r.removed[0].name, "GITHUB_TOKEN");
  EXPECT_EQ(r.removed[0].rule_id, "env-secret:github-token");
}

TEST(EnvRules, LayersConcatenateListsAndReplaceScalars) {
  LoadRequest r = request(R"({"environment": {"mode": "allowlist", "allow": ["PATH"],
    "set": {"A": "1", "B": "2"}}})");
  r.files.push_back({"q.json", R"({"environment": {"allow": ["HOME"], "mode": "denylist",
    "deny": ["X"], "set": {"A": "3"}}})"});
  auto p = loadOk(r);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->environment.mode, EnvMode::Denylist);
  ASSERT_EQ(p->environment.allow.size(), 2u);
  EXPECT_EQ(p->environment.allow[1].pattern, "HOME");
  EXPECT_EQ(p->environment.allow[1].origin.file, "q.json");
  ASSERT_EQ(p->environment.set.size(), 2u);
  EXPECT_EQ(p->environment.set[0].value, "3");  // the later layer's value, the first place
  EXPECT_EQ(p->environment.set[0].origin.file, "q.json");
}

TEST(EnvRules, Overrides) {
  LoadRequest r = request("", "code-sandbox");
  r.overrides = {"environment.mode=allowlist", "environment.allow+=PATH",
                 "environment.allow+=HOME", "environment.set.CI=true-ish"};
  auto p = loadOk(r);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->environment.mode, EnvMode::Allowlist);
  ASSERT_EQ(p->environment.allow.size(), 2u);
  EXPECT_EQ(p->environment.allow[0].origin.file, "-o environment.allow+=PATH");
  ASSERT_EQ(p->environment.set.size(), 1u);
  EXPECT_EQ(p->environment.set[0].value, "true-ish");

  // Keeping one variable the preset strips; then the whole built-in list off.
  r.overrides = {"environment.allow+=GITHUB_TOKEN"};
  p = loadOk(r);
  EXPECT_EQ(fate(*p, "GITHUB_TOKEN"), "kept");
  EXPECT_EQ(fate(*p, "GH_TOKEN"), "stripped by env-secret:gh-token");
  r.overrides = {"environment.secrets=false"};
  p = loadOk(r);
  EXPECT_TRUE(p->environment.deny.empty());
  EXPECT_EQ(fate(*p, "GH_TOKEN"), "kept");
  // `deny=` replaces the user's own list; the built-in one is its own switch.
  r = request(R"({"environment": {"deny": ["MINE"]}})", "code-sandbox");
  r.overrides = {"environment.deny=[]"};
  p = loadOk(r);
  EXPECT_EQ(fate(*p, "MINE"), "kept");
  EXPECT_EQ(fate(*p, "GH_TOKEN"), "stripped by env-secret:gh-token");
}

TEST(EnvRules, ErrorsWithPosition) {
  struct Case {
    const char* text;
    const char* error;
  } cases[] = {
      {R"({"environment": {"keep": []}})",
       "p.json:1:18: error: unknown key \"keep\" in \"environment\" (expected one of: mode, "
       "secrets, allow, deny, set)"},
      {R"({"environment": {"mode": "some"}})",
       "p.json:1:26: error: invalid value \"some\" (expected one of: denylist, allowlist)"},
      {R"({"environment": {"deny": ["A=B"]}})",
       "p.json:1:27: error: \"A=B\": a variable name cannot contain '='"},
      {R"({"environment": {"deny": [""]}})", "p.json:1:27: error: empty pattern"},
      {R"({"environment": {"allow": [{"name": "X", "why": 1}]}})",
       "p.json:1:42: error: unknown key \"why\" in \"environment.allow.0\" (expected one of: "
       "name, id, reason)"},
      {R"({"environment": {"allow": [7]}})",
       "p.json:1:28: error: expected a string or an object with \"name\", got a number"},
      {R"({"environment": {"deny": ["A[B"]}})",
       "p.json:1:29: error: bad glob \"A[B\": unterminated or empty character class"},
      {R"({"environment": {"secrets": "yes"}})",
       "p.json:1:29: error: expected true or false, got a string"},
      {R"({"environment": {"set": {"A": 1}}})", "p.json:1:31: error: expected a string, got a number"},
      {R"({"environment": {"set": {"A=B": "x"}}})",
       "p.json:1:26: error: bad variable name \"A=B\" (not empty, no '=')"},
      {R"({"environment": {"set": ["A"]}})", "p.json:1:25: error: expected an object, got an array"},
      {R"({"profiles": {"git": {"environment": {"allow": ["SSH_AUTH_SOCK"]}}}})",
       "p.json:1:23: error: a profile cannot change the environment: it is decided once, when the "
       "command starts, and a process that execs into a profile keeps the environment it has (the "
       "supervisor does not rewrite an exec's envp); put it in the base policy's \"environment\""},
  };
  for (const auto& c : cases) {
    LoadResult res = load(request(c.text));
    EXPECT_FALSE(res.ok()) << c.text;
    ASSERT_FALSE(res.diagnostics.empty()) << c.text;
    EXPECT_EQ(res.diagnostics[0].format(), c.error) << c.text << "\n" << all(res);
    EXPECT_EQ(res.errorCount(), 1u) << c.text << "\n" << all(res);
  }
  LoadRequest r = request("", "code-sandbox");
  r.overrides = {"environment.mode+=allowlist"};
  LoadResult res = load(r);
  ASSERT_EQ(res.errorCount(), 1u);
  EXPECT_EQ(res.diagnostics[0].format(),
            "-o environment.mode+=allowlist: error: \"+=\" only appends to lists; "
            "\"environment.mode\" is not one");
}

TEST(EnvRules, DuplicateIdsAreErrors) {
  LoadResult res = load(request(R"({"environment": {"allow": [{"name": "A", "id": "x"}],
    "deny": [{"name": "B", "id": "x"}]}})"));
  EXPECT_FALSE(res.ok());
  EXPECT_NE(all(res).find("duplicate rule id \"x\""), std::string::npos) << all(res);
}

// What builds and toolchains need survives the default preset; every listed
// credential name does not.
TEST(EnvRules, DefaultPresetKeepsToolchainsAndStripsCredentials) {
  for (const char* preset : {"code-sandbox", "strict", "audit-only"}) {
    auto p = loadOk(request("", preset));
    ASSERT_TRUE(p);
    for (const char* kept :
         {"PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "USER", "LOGNAME", "SHELL",
          "TMPDIR", "PWD", "HOSTNAME", "EDITOR", "PYENV_ROOT", "PYENV_VERSION", "PYENV_SHELL",
          "CARGO_HOME", "RUSTUP_HOME", "RUSTFLAGS", "NVM_DIR", "NODE_OPTIONS", "GOPATH", "GOROOT",
          "GOFLAGS", "JAVA_HOME", "VIRTUAL_ENV", "CONDA_PREFIX", "CC", "CXX", "CFLAGS", "CXXFLAGS",
          "LDFLAGS", "MAKEFLAGS", "PKG_CONFIG_PATH", "LD_LIBRARY_PATH", "PYTHONPATH",
          "PYTHONHASHSEED", "TOKENIZERS_PARALLELISM", "GPG_KEY", "GPG_TTY", "SSH_KEY_PATH",
          "SSH_CONNECTION", "KUBECONFIG", "AWS_REGION", "AWS_PROFILE", "AWS_DEFAULT_REGION",
          "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "DISPLAY", "COLORTERM", "CI", "GIT_AUTHOR_NAME",
          "TOKEN_BUCKET_SIZE", "PASSWORD_STORE_DIR", "KEYTIMEOUT", "HISTFILE"})
      EXPECT_EQ(fate(*p, kept), "kept") << preset << " " << kept;
    for (const char* stripped :
         {"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID", "GITHUB_TOKEN",
          "GH_TOKEN", "GH_ENTERPRISE_TOKEN", "GITLAB_TOKEN", "NPM_TOKEN", "PYPI_TOKEN",
          "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN", "DOCKER_PASSWORD", "SSH_AUTH_SOCK",
          "GPG_AGENT_INFO", "DATABASE_URL", "TEST_DATABASE_URL", "SENTRY_DSN", "VAULT_TOKEN",
          "CI_JOB_TOKEN", "SLACK_BOT_TOKEN", "AZURE_CLIENT_SECRET", "STRIPE_SECRET_KEY",
          "SECRET_KEY_BASE", "DB_PASSWORD", "MYSQL_PASSWD", "GOOGLE_API_KEY", "MAPS_APIKEY",
          "JWT_PRIVATE_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "TWINE_PASSWORD"}) {
      Decision d = decideEnv(p->environment, stripped);
      EXPECT_EQ(d.verdict, Verdict::Deny) << preset << " " << stripped;
      EXPECT_TRUE(d.rule_id.starts_with("env-secret:")) << stripped;
      EXPECT_FALSE(d.reason.empty()) << stripped;
    }
  }
}

// Every built-in entry is reached (no entry hidden by an earlier one with
// another reason would be wrong; exact names are listed before patterns) and
// explains itself.
TEST(EnvRules, EachBuiltInEntryHasAnIdAReasonAndIsInTheDefaultPolicy) {
  auto p = loadOk(request("", "code-sandbox"));
  ASSERT_TRUE(p);
  ASSERT_EQ(p->environment.deny.size(), envSecrets().size());
  for (size_t i = 0; i < envSecrets().size(); ++i) {
    const auto& e = envSecrets()[i];
    EXPECT_TRUE(e.id.starts_with("env-secret:")) << e.id;
    EXPECT_FALSE(e.reason.empty()) << e.id;
    EXPECT_EQ(p->environment.deny[i].id, e.id);
    EXPECT_EQ(p->environment.deny[i].origin.file, "builtin");
    if (e.pattern.find('*') == std::string_view::npos) {
      EXPECT_EQ(decideEnv(p->environment, e.pattern).rule_id, e.id) << e.pattern;
    }
  }
}

TEST(EnvRules, FilterKeepsOrderAndValues) {
  auto p = loadOk(request("", "code-sandbox"));
  ASSERT_TRUE(p);
  EnvFilterResult r = filterEnvironment(
      *p, {"PATH=/usr/bin:/bin", "GITHUB_TOKEN=ghp_secret", "LANG=C.UTF-8",
           "TOKENIZERS_PARALLELISM=false", "SSH_AUTH_SOCK=/tmp/agent.sock", "ODD"});
  EXPECT_EQ(r.env, (std::vector<std::string>{"PATH=/usr/bin:/bin", "LANG=C.UTF-8",
                                             "TOKENIZERS_PARALLELISM=false", "ODD"}));
  ASSERT_EQ(r.removed.size(), 2u);
  EXPECT_EQ(r.removed[0].name, "GITHUB_TOKEN");
  EXPECT_EQ(r.removed[0].reason, "GitHub token");
  EXPECT_EQ(r.removed[1].name, "SSH_AUTH_SOCK");
  EXPECT_EQ(names(r.env).size(), 4u);
}

TEST(EnvRules, Explain) {
  LoadRequest r = request(R"({"environment": {"allow": [{"name": "NPM_TOKEN", "id": "keep-npm",
    "reason": "the publish job needs it"}]}})", "code-sandbox");
  auto p = loadOk(r);
  ASSERT_TRUE(p);
  Explanation e = explainEnv(*p, "GITHUB_TOKEN");
  EXPECT_EQ(e.decision.verdict, Verdict::Deny);
  EXPECT_EQ(e.decision.rule_id, "env-secret:github-token");
  EXPECT_EQ(e.decision.reason, "GitHub token");
  ASSERT_FALSE(e.chain.empty());
  EXPECT_EQ(e.chain.front().description, "environment.allow NPM_TOKEN does not match");
  EXPECT_TRUE(e.chain.back().matched);
  EXPECT_EQ(e.chain.back().description, "environment.deny GITHUB_TOKEN matches");
  EXPECT_NE(e.suggestion.find("-o environment.allow+=GITHUB_TOKEN"), std::string::npos);

  e = explainEnv(*p, "NPM_TOKEN");
  EXPECT_EQ(e.decision.verdict, Verdict::Allow);
  EXPECT_EQ(e.decision.rule_id, "keep-npm");
  EXPECT_EQ(e.decision.reason, "the publish job needs it");
  EXPECT_EQ(e.chain.size(), 1u);  // the allow decides; the denies are not reached
  EXPECT_TRUE(e.suggestion.empty());

  e = explainEnv(*p, "PATH");
  EXPECT_EQ(e.decision.verdict, Verdict::Allow);
  EXPECT_EQ(e.decision.rule_id, kEnvDefaultKeep);
  EXPECT_EQ(e.chain.size(), 1 + envSecrets().size() + 1);
}

}  // namespace
}  // namespace sv::policy
