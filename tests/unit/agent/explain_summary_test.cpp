// `supervise explain --summary` (supervisor/cli/policy_summary.h) driven
// through CLI11 in-process: the preset's roots and protected names, a policy
// with exec rules, an allowlist network and profiles with the commands that
// switch into them; the flags --summary refuses. And explainQuery(), which
// the MCP explain tool calls, against `supervise explain`'s own output.
#include <gtest/gtest.h>

#include <string>

#include "supervisor/cli/commands.h"
#include "supervisor/cli/explain_query.h"
#include "tests/unit/cli_test_util.h"

namespace sv::supervisor {
namespace {

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

// The line that starts with `label`, "" when none.
std::string lineOf(const std::string& text, const std::string& label) {
  size_t at = text.starts_with(label) ? 0 : text.find("\n" + label);
  if (at == std::string::npos) return "";
  if (at) ++at;
  return text.substr(at, text.find('\n', at) - at);
}

class Summary : public CliFixture {
 protected:
  Summary() : CliFixture({registerExplain}) {}
};

TEST_F(Summary, TheDefaultPresetInAFewLines) {
  std::string out, err;
  ASSERT_EQ(run({"explain", "--summary", "--preset", "code-sandbox"}, &out, &err), 0) << err;
  EXPECT_LE(std::count(out.begin(), out.end(), '\n'), 12) << out;
  EXPECT_TRUE(has(lineOf(out, "policy: "), "(enforced), workspace " + dir_.string())) << out;
  const std::string write = lineOf(out, "may write: ");
  EXPECT_TRUE(has(write, "the workspace, /tmp, /var/tmp")) << out;
  const std::string refused = lineOf(out, "refused whatever the roots say: ");
  for (const char* name : {".env", ".env.*", ".git/config", ".git/hooks/**", ".supervise.json"})
    EXPECT_TRUE(has(refused, name)) << name << "\n" << out;
  EXPECT_TRUE(has(refused, "supervise's own files")) << out;
  EXPECT_EQ(lineOf(out, "may run: "), "may run: anything it may read");
  EXPECT_EQ(lineOf(out, "network: "), "network: localhost only");
  EXPECT_TRUE(has(lineOf(out, "environment: "), "removed")) << out;
  EXPECT_TRUE(has(out, "supervise: denied <what> (rule <id>: <reason>) [event <id>]")) << out;
  EXPECT_EQ(lineOf(out, "profile "), "") << "the preset has no profile";
}

TEST_F(Summary, ProfilesAndTheCommandsThatSwitchIntoThem) {
  write(".supervise.json", R"({
    "filesystem": {"writableRoots": ["./build"], "denyRead": [{"path": "./secrets/**", "id": "no-secrets"}]},
    "exec": {"deny": [{"path": "/usr/bin/ssh", "reason": "ssh only under git"}],
             "switch": [{"match": "/usr/bin/git", "profile": "git"}]},
    "network": {"mode": "allowlist", "allow": ["registry.npmjs.org:443", "10.0.0.0/8"]},
    "profiles": {
      "git": {"network": {"allow": ["github.com:22"]}, "exec": {"allow": ["/usr/bin/ssh"]}},
      "release": {"filesystem": {"writableRoots": ["/srv/dist"]}}
    }
  })");
  std::string out, err;
  ASSERT_EQ(run({"explain", "--summary"}, &out, &err), 0) << err;
  EXPECT_TRUE(has(lineOf(out, "policy: "), ".supervise.json")) << out;
  EXPECT_TRUE(has(lineOf(out, "may write: "), "./build")) << out;
  EXPECT_TRUE(has(lineOf(out, "refused whatever the roots say: "), "reading ./secrets/**")) << out;
  EXPECT_EQ(lineOf(out, "may run: "), "may run: anything it may read, except /usr/bin/ssh");
  EXPECT_EQ(lineOf(out, "network: "), "network: only to registry.npmjs.org:443, 10.0.0.0/8");
  EXPECT_EQ(lineOf(out, "profile git: "),
            "profile git: entered by running /usr/bin/git; may run only /usr/bin/ssh; network "
            "only to github.com:22")
      << out;
  EXPECT_EQ(lineOf(out, "profile release: "),
            "profile release: entered only with `supervise exec --profile`; may write /srv/dist")
      << out;
}

TEST_F(Summary, LongListsAreCutAndAuditModeIsSaid) {
  std::string roots;
  for (int i = 0; i < 20; ++i)
    roots += std::string(i ? "," : "") + "\"/srv/r" + std::to_string(i) + "\"";
  write("p.json", R"({"mode": "audit", "filesystem": {"writableRoots": [)" + roots + "]}}");
  std::string out, err;
  ASSERT_EQ(run({"explain", "--summary", "--policy", "p.json"}, &out, &err), 0) << err;
  EXPECT_TRUE(has(lineOf(out, "policy: "), "audit mode")) << out;
  EXPECT_TRUE(has(lineOf(out, "may write: "), "and ")) << out;
  EXPECT_TRUE(has(lineOf(out, "may write: "), " more")) << out;
  EXPECT_FALSE(has(out, "/srv/r19")) << out;
}

TEST_F(Summary, SummaryTakesOnlyPolicyFlags) {
  std::string out, err;
  EXPECT_EQ(run({"explain", "--summary", "write", ".env"}, &out, &err), 2);
  EXPECT_TRUE(has(err, "--summary takes only the policy flags")) << err;
  EXPECT_EQ(run({"explain", "--summary", "--json"}, &out, &err), 2);
  EXPECT_EQ(run({"explain"}, &out, &err), 2);
  EXPECT_TRUE(has(err, "expected OPERATION TARGET")) << err;
  write("bad.json", "{");
  EXPECT_EQ(run({"explain", "--summary", "--policy", "bad.json"}, &out, &err), 2);
}

TEST_F(Summary, ExplainQueryAnswersWhatTheCommandPrints) {
  std::string out, err;
  ASSERT_EQ(run({"explain", "write", ".env"}, &out, &err), 1) << err;
  ExplainQuery q;
  q.words = {"write", ".env"};
  ExplainOutput o = explainQuery(q);
  EXPECT_EQ(o.exit_code, kExplainDeny);
  EXPECT_EQ(o.out, out);
  EXPECT_TRUE(has(o.out, "deny-write-env")) << o.out;
  q.words = {"write", "a.txt"};
  EXPECT_EQ(explainQuery(q).exit_code, kExplainAllow);
  q.words = {"fly", "away", "now"};
  EXPECT_EQ(explainQuery(q).exit_code, kExplainError);
  q.words = {"17"};
  o = explainQuery(q);
  EXPECT_EQ(o.exit_code, kExplainError);
  EXPECT_TRUE(has(o.err, "EVENT_ID needs --audit-file")) << o.err;
  q.words = {"-"};
  q.audit_line = "";
  EXPECT_TRUE(has(explainQuery(q).err, "no audit line")) << "the caller reads stdin";
}

}  // namespace
}  // namespace sv::supervisor
