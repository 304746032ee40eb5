// Self-protection (policy/self_protect.cpp, docs/policy.md "Self-protection"):
// the loader's last layer keeps the session's own files out of the tree's
// reach, ahead of every profile and base rule, whatever a file, override or
// the environment says; the BPF-LSM tables agree with the engine.
#include <gtest/gtest.h>

#include "policy/compile.h"
#include "policy/compile_lsm.h"
#include "policy/engine.h"
#include "policy/load.h"

namespace sv::policy {
namespace {

LoadRequest request(std::string text, std::string preset = "code-sandbox") {
  LoadRequest r;
  r.preset = std::move(preset);
  if (!text.empty()) r.files.push_back({"p.json", std::move(text)});
  r.workspace = "/ws";
  r.home = "/home/u";
  r.self_protect = {{"audit-file", "/ws/audit.jsonl", "", false},
                    {"audit-file", "/tmp/run/a.jsonl", "", false},
                    {"policy-file", "/ws/my-policy.json", "", false},
                    {"runtime-state", "/run/supervise", "", false},
                    {"binary", "/opt/sv/bin/supervise", "", false}};
  return r;
}

std::shared_ptr<const Policy> mustLoad(const LoadRequest& r) {
  LoadResult res = load(r);
  std::string diags;
  for (const auto& d : res.diagnostics) diags += d.format() + "\n";
  EXPECT_TRUE(res.ok()) << diags;
  return res.policy;
}

Decision decide(const Engine& e, Operation op, std::string_view path,
                std::string_view profile = "") {
  Request r;
  r.op = op;
  r.path = path;
  r.profile = profile;
  return e.decide(r);
}

TEST(SelfProtect, WritesToTheSessionsOwnFilesAreDenied) {
  auto p = mustLoad(request(""));
  ASSERT_TRUE(p);
  Engine e(p);
  for (const char* path : {"/ws/audit.jsonl", "/tmp/run/a.jsonl", "/run/supervise/kernel-audit/x",
                           "/opt/sv/bin/supervise"}) {
    SCOPED_TRACE(path);
    Decision d = decide(e, Operation::Write, path);
    EXPECT_EQ(d.verdict, Verdict::Deny);
    EXPECT_TRUE(d.rule_id.starts_with("self-protect:")) << d.rule_id;
    EXPECT_FALSE(d.reason.empty());
  }
  Decision d = decide(e, Operation::Write, "/ws/audit.jsonl");
  EXPECT_EQ(d.rule_id, "self-protect:audit-file");
  EXPECT_EQ(d.reason, "the audit trail is out of the tree's reach");
  EXPECT_EQ(d.name, "self-protection: audit-file");
  EXPECT_EQ(decide(e, Operation::Write, "/ws/my-policy.json").rule_id, "self-protect:policy-file");
  // Neighbours are not caught: a literal path, not a prefix of names.
  EXPECT_EQ(decide(e, Operation::Write, "/ws/audit.jsonl2").verdict, Verdict::Allow);
  EXPECT_EQ(decide(e, Operation::Write, "/tmp/run/b.jsonl").verdict, Verdict::Allow);
  // Reads stay allowed (write protection only; docs/policy.md says why).
  EXPECT_EQ(decide(e, Operation::Read, "/ws/audit.jsonl").verdict, Verdict::Allow);
  // The binary stays executable (a nested supervise).
  EXPECT_EQ(decide(e, Operation::Exec, "/usr/bin/true").verdict, Verdict::Allow);
  // The rule's text is known by id (cgroup/LSM events look it up).
  EXPECT_EQ(e.ruleText("self-protect:audit-file").reason,
            "the audit trail is out of the tree's reach");
}

TEST(SelfProtect, NoLayerOrProfileLiftsIt) {
  // A file that makes the audit file a writable root of the base and of a
  // profile, an override that replaces denyWrite, and an environment that
  // switches to audit-only (root / writable): the rule still decides first.
  LoadRequest r = request(R"({
    "filesystem": {"writableRoots": ["/ws/audit.jsonl", "/run"]},
    "exec": {"switch": [{"match": "/usr/bin/git", "profile": "git"}]},
    "profiles": {"git": {"filesystem": {"writableRoots": ["/ws/audit.jsonl", "/tmp/run"]}}}
  })");
  r.overrides = {"filesystem.denyWrite=[]"};
  r.env = {{"SUPERVISE_PRESET", "audit-only"}};
  auto p = mustLoad(r);
  ASSERT_TRUE(p);
  Engine e(p);
  for (const char* prof : {"", "git"}) {
    SCOPED_TRACE(prof);
    EXPECT_EQ(decide(e, Operation::Write, "/ws/audit.jsonl", prof).rule_id,
              "self-protect:audit-file");
    EXPECT_EQ(decide(e, Operation::Write, "/tmp/run/a.jsonl", prof).rule_id,
              "self-protect:audit-file");
    EXPECT_EQ(decide(e, Operation::Write, "/run/supervise", prof).rule_id,
              "self-protect:runtime-state");
  }
  // Policy text cannot name the list at all: it is not a key.
  LoadResult bad = load(request(R"({"selfProtect": []})"));
  EXPECT_FALSE(bad.ok());
}

TEST(SelfProtect, PolicySinksRotationsAndSpools) {
  LoadRequest r = request(R"({"audit": {"sinks": [
    {"type": "file", "path": "logs/trail.jsonl", "maxSizeMb": 1, "maxFiles": 3},
    {"type": "file", "path": "/tmp/plain.jsonl"},
    {"type": "syslog", "path": "udp://127.0.0.1:514", "spoolDir": "/tmp/spool"},
    {"type": "syslog", "path": "udp://127.0.0.1:515"},
    {"type": "kafka", "brokers": "127.0.0.1:9092", "topic": "t", "spoolDir": "/tmp/kspool"},
    {"type": "otlp", "url": "http://127.0.0.1:4318/v1/logs", "spoolDir": "/tmp/ospool"}]}})");
  r.self_protect.clear();
  auto p = mustLoad(r);
  ASSERT_TRUE(p);
  Engine e(p);
  for (const char* path : {"/ws/logs/trail.jsonl", "/ws/logs/trail.jsonl.1",
                           "/ws/logs/trail.jsonl.2", "/tmp/plain.jsonl"}) {
    SCOPED_TRACE(path);
    EXPECT_EQ(decide(e, Operation::Write, path).rule_id, "self-protect:audit-file");
  }
  // maxFiles 3 keeps .1 and .2; a sink without maxSizeMb does not rotate.
  EXPECT_EQ(decide(e, Operation::Write, "/ws/logs/trail.jsonl.3").verdict, Verdict::Allow);
  EXPECT_EQ(decide(e, Operation::Write, "/tmp/plain.jsonl.1").verdict, Verdict::Allow);
  EXPECT_EQ(decide(e, Operation::Write, "/tmp/spool/supervise-spool-0123456789ab").rule_id,
            "self-protect:audit-spool");
  EXPECT_EQ(decide(e, Operation::Write, "/var/tmp/supervise-spool-0123456789ab").rule_id,
            "self-protect:audit-spool");
  for (const char* spool : {"/tmp/kspool/supervise-spool-x", "/tmp/ospool/supervise-spool-x"})
    EXPECT_EQ(decide(e, Operation::Write, spool).rule_id, "self-protect:audit-spool") << spool;
  // The rest of the spool directory is the tree's (the default is /var/tmp).
  EXPECT_EQ(decide(e, Operation::Write, "/var/tmp/build.o").verdict, Verdict::Allow);
}

TEST(SelfProtect, GlobCharactersInPathsAreLiteral) {
  LoadRequest r = request("");
  r.self_protect = {{"audit-file", "/ws/a[1]*.jsonl", "", false}};
  auto p = mustLoad(r);
  ASSERT_TRUE(p);
  Engine e(p);
  EXPECT_EQ(decide(e, Operation::Write, "/ws/a[1]*.jsonl").rule_id, "self-protect:audit-file");
  EXPECT_EQ(decide(e, Operation::Write, "/ws/a1x.jsonl").verdict, Verdict::Allow);
}

TEST(SelfProtect, ReadProtectionSendsReadOpensToUserSpace) {
  LoadRequest r = request("");
  EXPECT_FALSE(compile(*mustLoad(r)).seccomp.notify_read_opens);
  r.self_protect.push_back({"audit-spool", "/ws/spool", "", true});
  auto p = mustLoad(r);
  EXPECT_TRUE(compile(*p).seccomp.notify_read_opens);
  Engine e(p);
  EXPECT_EQ(decide(e, Operation::Read, "/ws/spool/x").rule_id, "self-protect:audit-spool");
}

TEST(SelfProtect, ExplainNamesTheRuleAndSaysNoEditLiftsIt) {
  auto p = mustLoad(request(""));
  Engine e(p);
  Request req;
  req.op = Operation::Write;
  req.path = "/ws/audit.jsonl";
  Explanation x = e.explain(req);
  EXPECT_EQ(x.decision.rule_id, "self-protect:audit-file");
  ASSERT_FALSE(x.chain.empty());
  EXPECT_TRUE(x.chain.back().matched);
  EXPECT_NE(x.suggestion.find("no policy edit lifts it"), std::string::npos) << x.suggestion;
}

TEST(SelfProtect, LsmTablesAgreeWithTheEngine) {
  LoadRequest r = request(R"({
    "exec": {"switch": [{"match": "/usr/bin/git", "profile": "git"}]},
    "profiles": {"git": {"filesystem": {"writableRoots": ["/ws/audit.jsonl"]}}}})");
  auto p = mustLoad(r);
  ASSERT_TRUE(p);
  Engine e(p);
  LsmPlan plan = compileLsm(*p, compile(*p));
  for (uint32_t prof = 0; prof < plan.profiles.size(); ++prof) {
    for (const char* path : {"/ws/audit.jsonl", "/tmp/run/a.jsonl", "/run/supervise/x",
                             "/ws/other", "/ws/my-policy.json"}) {
      SCOPED_TRACE(std::string(path) + " profile " + plan.profiles[prof]);
      Decision want = decide(e, Operation::Write, path, plan.profiles[prof]);
      LsmOutcome got = lsmDecide(plan, prof, LsmOp::Write, path);
      EXPECT_EQ(got.verdict == kLsmAllow, want.verdict == Verdict::Allow);
      EXPECT_EQ(plan.rule_ids[got.value], want.rule_id);
    }
  }
}

}  // namespace
}  // namespace sv::policy
