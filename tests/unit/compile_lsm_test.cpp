// compileLsm(): the path DFAs the BPF-LSM programs walk must give exactly the
// verdict and rule id Engine::decide gives, for every profile and operation.
// A seeded generator builds paths from components that hit the rule corners
// (.env anywhere, .env.*, .git/hooks/**, system paths, `..`, unicode, long
// names, glob metacharacters as literal bytes) and compares both over
// 100,000+ requests; the VM suite then holds the kernel to these tables.
#include "policy/compile_lsm.h"

#include <gtest/gtest.h>

#include <random>

#include "policy/compile.h"
#include "policy/engine.h"
#include "policy/load.h"
#include "tests/unit/lsm_path_gen.h"
#include "tests/unit/policy_test_util.h"
#include "policy/path.h"

namespace sv::policy {
namespace {

// Warnings fail these tests too: the tables must come from a clean policy.
std::shared_ptr<const Policy> mustLoad(const std::string& text, const std::string& preset) {
  return test_util::mustLoad(text, preset, /*warnings_fail=*/true);
}

// Compares the tables with the engine for every profile and op over `n` paths.
void differential(const Policy& policy, int n, uint32_t seed) {
  auto shared = std::make_shared<const Policy>(policy);
  Engine engine(shared);
  LsmPlan plan = compileLsm(policy, compile(policy));
  PathGen gen(seed);
  int compared = 0;
  for (int i = 0; i < n; ++i) {
    std::string path = gen.next();
    for (uint32_t prof = 0; prof < plan.profiles.size(); ++prof) {
      const std::string& name = plan.profiles[prof];
      for (LsmOp op : {LsmOp::Read, LsmOp::Write, LsmOp::Exec}) {
        Request req;
        req.op = op == LsmOp::Read    ? Operation::Read
                 : op == LsmOp::Write ? Operation::Write
                                      : Operation::Exec;
        req.path = path;
        req.profile = name;
        Decision want = engine.decide(req);
        LsmOutcome got = lsmDecide(plan, prof, op, path);
        ASSERT_LT(got.value, plan.rule_ids.size());
        ASSERT_EQ(got.verdict == kLsmAllow, want.verdict == Verdict::Allow)
            << toString(req.op) << " " << path << " profile '" << name << "' engine rule "
            << want.rule_id << ", tables rule " << plan.rule_ids[got.value];
        ASSERT_EQ(plan.rule_ids[got.value], want.rule_id)
            << toString(req.op) << " " << path << " profile '" << name << "'";
        ++compared;
      }
      LsmOutcome sw = lsmDecide(plan, prof, LsmOp::Switch, path);
      std::string_view next = engine.profileAfterExec(name, path);
      std::string_view got = sw.verdict == kLsmSwitch ? std::string_view(plan.profiles[sw.value])
                                                      : std::string_view(name);
      ASSERT_EQ(got, next) << "switch " << path << " from '" << name << "'";
      ++compared;
    }
  }
  EXPECT_GE(compared, n);
}

TEST(CompileLsm, DifferentialCodeSandbox) {
  auto p = mustLoad("", "code-sandbox");
  ASSERT_TRUE(p);
  differential(*p, 40000, 1);
}

TEST(CompileLsm, DifferentialStrictAndAuditOnly) {
  for (const char* preset : {"strict", "audit-only"}) {
    auto p = mustLoad("", preset);
    ASSERT_TRUE(p);
    differential(*p, 20000, 2);
  }
}

TEST(CompileLsm, DifferentialProfilesExecAndGlobs) {
  auto p = mustLoad(kProfilesPolicy, "code-sandbox");
  ASSERT_TRUE(p);
  differential(*p, 40000, 3);
}

TEST(CompileLsm, CodeSandboxCorners) {
  auto p = mustLoad("", "code-sandbox");
  ASSERT_TRUE(p);
  LsmPlan plan = compileLsm(*p, compile(*p));
  auto rule = [&](LsmOp op, const char* path) {
    LsmOutcome o = lsmDecide(plan, 0, op, path);
    return std::string(o.verdict == kLsmAllow ? "allow " : "deny ") + plan.rule_ids[o.value];
  };
  EXPECT_EQ(rule(LsmOp::Write, "/ws/.env"), "deny deny-write-env");
  EXPECT_EQ(rule(LsmOp::Write, "/ws/a/b/c/.env"), "deny deny-write-env");
  EXPECT_EQ(rule(LsmOp::Write, "/ws/sub/.env.production"), "deny deny-write-env-variants");
  EXPECT_EQ(rule(LsmOp::Write, "/ws/.envrc"), "allow workspace");
  EXPECT_EQ(rule(LsmOp::Write, "/ws/.git/hooks/pre-commit"), "deny deny-write-git-hooks");
  EXPECT_EQ(rule(LsmOp::Write, "/ws/.git/config"), "deny deny-write-git-config");
  EXPECT_EQ(rule(LsmOp::Read, "/ws/.env"), "allow workspace");
  EXPECT_EQ(rule(LsmOp::Write, "/etc/passwd"), "deny default-deny-write");
  EXPECT_EQ(rule(LsmOp::Read, "/etc/passwd"), "allow system-read:/etc");
  EXPECT_EQ(rule(LsmOp::Read, "/root/x"), "deny default-deny-read");
  EXPECT_EQ(rule(LsmOp::Read, "/"), "deny default-deny-read");
  EXPECT_EQ(rule(LsmOp::Exec, "/proc/self/exe"), "deny default-deny-exec");
  EXPECT_EQ(rule(LsmOp::Exec, "/usr/bin/true"), "allow system-read:/usr");
  EXPECT_EQ(rule(LsmOp::Write, "/dev/null"), "allow system-write:/dev/null");
  EXPECT_EQ(rule(LsmOp::Write, "/dev/nullx"), "deny default-deny-write");
}

TEST(CompileLsm, WalkStopsOnceTheOutcomeIsFixed) {
  auto p = mustLoad("", "code-sandbox");
  ASSERT_TRUE(p);
  LsmPlan plan = compileLsm(*p, compile(*p));
  size_t walked = 0;
  // Nothing below /usr can change a read's outcome: the walk stops right after "/usr/".
  lsmDecide(plan, 0, LsmOp::Read, "/usr/share/doc/some/deep/file", &walked);
  EXPECT_LE(walked, 5u);
  // Below the workspace a later `.env` can still deny a write: the whole path is walked.
  lsmDecide(plan, 0, LsmOp::Write, "/ws/src/main.cpp", &walked);
  EXPECT_EQ(walked, std::string("/ws/src/main.cpp").size());
  EXPECT_LE(plan.num_classes, 64u) << lsmSummary(plan);
  EXPECT_LT(plan.states.size(), 5000u) << lsmSummary(plan);
}

TEST(CompileLsm, Deterministic) {
  auto p = mustLoad(kProfilesPolicy, "code-sandbox");
  ASSERT_TRUE(p);
  LsmPlan a = compileLsm(*p, compile(*p)), b = compileLsm(*p, compile(*p));
  EXPECT_EQ(a.transitions, b.transitions);
  EXPECT_EQ(a.states, b.states);
  EXPECT_EQ(a.rule_ids, b.rule_ids);
  EXPECT_EQ(a.profiles, (std::vector<std::string>{"", "git", "tools"}));
}

TEST(CompileLsm, NetworkEntriesInEngineOrder) {
  auto p =
      mustLoad(R"({"network": {"mode": "allowlist", "allow": ["127.0.0.1:22", "10.0.0.0/8:443"]},
                        "profiles": {"lo": {"network": {"mode": "localhost", "allow": ["192.0.2.1:53"]}},
                                     "off": {"network": {"mode": "none"}}}})",
               "code-sandbox");
  ASSERT_TRUE(p);
  LsmPlan plan = compileLsm(*p, compile(*p));
  ASSERT_EQ(plan.profiles, (std::vector<std::string>{"", "lo", "off"}));
  auto ids = [&](size_t prof) {
    std::vector<std::string> out;
    for (const auto& e : plan.network[prof].entries) out.push_back(e.rule_id);
    return out;
  };
  EXPECT_EQ(plan.network[0].mode, NetworkMode::Allowlist);
  EXPECT_EQ(ids(0), (std::vector<std::string>{"network.allow:127.0.0.1:22",
                                              "network.allow:10.0.0.0/8:443"}));
  EXPECT_EQ(plan.network[1].mode, NetworkMode::Localhost);
  EXPECT_EQ(ids(1), (std::vector<std::string>{
                        "profiles.lo.network.allow:192.0.2.1:53", "network.allow:127.0.0.1:22",
                        "network.allow:10.0.0.0/8:443", "network-loopback", "network-loopback"}));
  EXPECT_EQ(plan.network[2].mode, NetworkMode::None);
  EXPECT_TRUE(plan.network[2].entries.empty());
}

}  // namespace
// A policy swap renumbers the new plan onto the old names: every kept
// profile and rule keeps its index, a dropped profile decides as the base,
// and decisions are otherwise unchanged.
TEST(CompileLsm, RenumberedPlanKeepsNamesAndDecisions) {
  auto a = mustLoad(kProfilesPolicy, "code-sandbox");
  auto b = mustLoad(R"({"exec": {"switch": [{"match": "/ws/tools/**", "profile": "tools"},
                                            {"match": "/usr/bin/make", "profile": "new"}]},
                        "profiles": {"tools": {"filesystem": {"readableRoots": ["/srv"]}},
                                     "new": {"filesystem": {"writableRoots": ["/opt/data"]},
                                             "network": {"mode": "none"}}}})",
                    "code-sandbox");
  ASSERT_TRUE(a && b);
  LsmPlan pa = compileLsm(*a, compile(*a)), pb = compileLsm(*b, compile(*b));
  ASSERT_EQ(pb.profiles, (std::vector<std::string>{"", "new", "tools"}));
  LsmPlan rb = renumberLsmPlan(pb, pa.profiles, pa.rule_ids);
  EXPECT_EQ(rb.profiles, (std::vector<std::string>{"", "git", "tools", "new"}));
  ASSERT_GE(rb.rule_ids.size(), pa.rule_ids.size());
  EXPECT_TRUE(std::equal(pa.rule_ids.begin(), pa.rule_ids.end(), rb.rule_ids.begin()));
  EXPECT_EQ(rb.network[3].mode, NetworkMode::None);
  EXPECT_EQ(rb.network[1].mode, pb.network[0].mode);  // git: dropped, so the base's

  PathGen gen(7);
  for (int i = 0; i < 20000; ++i) {
    std::string path = gen.next();
    for (uint32_t now = 0; now < rb.profiles.size(); ++now) {
      const uint32_t before = lsmProfileIndex(pb, rb.profiles[now]);  // git → 0, the base
      for (LsmOp op : {LsmOp::Read, LsmOp::Write, LsmOp::Exec}) {
        LsmOutcome got = lsmDecide(rb, now, op, path), want = lsmDecide(pb, before, op, path);
        ASSERT_EQ(got.verdict, want.verdict) << path << " profile " << rb.profiles[now];
        ASSERT_EQ(rb.rule_ids[got.value], pb.rule_ids[want.value]) << path;
      }
      LsmOutcome got = lsmDecide(rb, now, LsmOp::Switch, path);
      LsmOutcome want = lsmDecide(pb, before, LsmOp::Switch, path);
      ASSERT_EQ(got.verdict, want.verdict) << path;
      if (got.verdict == kLsmSwitch) {
        ASSERT_EQ(rb.profiles[got.value], pb.profiles[want.value]) << path;
      }
    }
  }
  // Renumbering onto its own names changes nothing.
  LsmPlan same = renumberLsmPlan(pa, pa.profiles, pa.rule_ids);
  EXPECT_EQ(same.starts, pa.starts);
  EXPECT_EQ(same.outcomes, pa.outcomes);
  EXPECT_EQ(same.rule_ids, pa.rule_ids);
}

}  // namespace sv::policy
