// The kernel's walk of the BPF-LSM policy tables, held to Engine::decide,
// and policy swaps: no decision may see half of a policy.
//
// The decide_for_test program runs the hooks' own table lookup and DFA walk
// (bpf/lib/lsm_helpers.h) on a request passed through BPF_PROG_TEST_RUN. It
// is a syscall program, not an LSM one, so this suite runs on any host that
// loads BPF programs, the development and CI hosts included. (The hooks'
// path retrieval is what only the VM suite can test: lsm_filter_test.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <set>
#include <thread>
#include <tuple>

#include "policy/compile.h"
#include "policy/engine.h"
#include "tests/unit/lsm_path_gen.h"
#include "tests/unit/policy_test_util.h"
#include "tracer/bpf/lsm_filter.h"

namespace sv::tracer {
namespace {

using policy::LsmOp;
using policy::LsmPlan;
using policy::Operation;

const LsmOp kPathOps[] = {LsmOp::Read, LsmOp::Write, LsmOp::Exec};

Operation engineOp(LsmOp op) {
  return op == LsmOp::Read ? Operation::Read : op == LsmOp::Write ? Operation::Write
                                                                  : Operation::Exec;
}

LsmPlan planOf(const policy::Policy& p) { return policy::compileLsm(p, policy::compile(p)); }

class LsmTables : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to load BPF programs: euid " << geteuid();
    sandbox_ = policy::test_util::mustLoad("", "code-sandbox");
    profiles_ = policy::test_util::mustLoad(policy::kProfilesPolicy, "code-sandbox");
    ASSERT_TRUE(sandbox_ && profiles_);
  }

  // A test-only filter (no hook) holding `plan`; skips where BPF cannot load.
  std::unique_ptr<LsmFilter> load(const LsmPlan& plan) {
    auto f = LsmFilter::load(plan, 0, {.test_only = true});
    if (!f.ok()) {
      if (f.error().code == EPERM || f.error().code == ENOSYS) {
        skipped_ = "BPF programs do not load here: " + f.error().message();
        return nullptr;
      }
      ADD_FAILURE() << f.error().message();
      return nullptr;
    }
    return std::make_unique<LsmFilter>(std::move(*f));
  }

  // Every generated path, every profile and path op, and the exec.switch
  // table, through the kernel's walk and through the engine; returns how
  // many requests were compared.
  int differential(const policy::Policy& policy, LsmFilter& kernel, int paths, uint32_t seed) {
    policy::Engine engine(std::make_shared<const policy::Policy>(policy));
    const LsmPlan plan = planOf(policy);
    policy::PathGen gen(seed);
    int compared = 0;
    for (int i = 0; i < paths; ++i) {
      const std::string path = gen.next();
      for (uint32_t prof = 0; prof < plan.profiles.size(); ++prof) {
        const std::string& name = plan.profiles[prof];
        for (LsmOp op : kPathOps) {
          policy::Request req;
          req.op = engineOp(op);
          req.path = path;
          req.profile = name;
          const policy::Decision want = engine.decide(req);
          auto got = kernel.decideInKernel(prof, op, path);
          EXPECT_TRUE(got.ok()) << path << ": " << got.error().message();
          if (!got.ok()) return compared;
          EXPECT_EQ(got->verdict == policy::kLsmAllow, want.verdict == policy::Verdict::Allow)
              << toString(req.op) << " " << path << " profile '" << name << "'";
          EXPECT_EQ(kernel.ruleIdAt(got->value), want.rule_id)
              << toString(req.op) << " " << path << " profile '" << name << "'";
          if (::testing::Test::HasFailure()) return compared;
          ++compared;
        }
        auto sw = kernel.decideInKernel(prof, LsmOp::Switch, path);
        EXPECT_TRUE(sw.ok());
        if (!sw.ok()) return compared;
        const std::string next = sw->verdict == policy::kLsmSwitch ? kernel.profileAt(sw->value)
                                                                   : name;
        EXPECT_EQ(next, engine.profileAfterExec(name, path)) << "switch " << path;
        if (::testing::Test::HasFailure()) return compared;
        ++compared;
      }
    }
    return compared;
  }

  std::shared_ptr<const policy::Policy> sandbox_, profiles_;
  std::string skipped_;
};

#define LOAD_OR_SKIP(var, plan)                        \
  auto var = load(plan);                               \
  if (!var && !skipped_.empty()) GTEST_SKIP() << skipped_; \
  ASSERT_TRUE(var)

// One truth: over 100,000 requests the kernel's walk gives the engine's
// verdict and rule id (and exec.switch its next profile), for the default
// preset and for a policy with profiles, exec rules and switches.
TEST_F(LsmTables, KernelWalkDecidesLikeTheEngine) {
  LOAD_OR_SKIP(sandbox, planOf(*sandbox_));
  int compared = differential(*sandbox_, *sandbox, 12000, 11);
  LOAD_OR_SKIP(profiles, planOf(*profiles_));
  compared += differential(*profiles_, *profiles, 6000, 12);
  EXPECT_GE(compared, 100000);
  RecordProperty("requests", compared);
}

// After replacePolicy() the next decision uses the new tables, names keep
// their indices, and a dropped profile decides as the base.
TEST_F(LsmTables, ReplacedPolicyDecidesTheNextRequest) {
  LOAD_OR_SKIP(kernel, planOf(*profiles_));
  const uint32_t git = 1, tools = 2;
  ASSERT_EQ(kernel->profileAt(git), "git");
  ASSERT_EQ(kernel->profileAt(tools), "tools");
  auto before = kernel->decideInKernel(git, LsmOp::Write, "/home/u/.ssh/known_hosts");
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->version, 1u);
  EXPECT_EQ(before->verdict, policy::kLsmAllow);  // git's own writable root

  ASSERT_TRUE(kernel->replacePolicy(planOf(*sandbox_)).ok());  // no profiles at all
  EXPECT_EQ(kernel->policyVersion(), 2u);
  auto after = kernel->decideInKernel(git, LsmOp::Write, "/home/u/.ssh/known_hosts");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->version, 2u);
  EXPECT_EQ(after->verdict, policy::kLsmDeny);
  EXPECT_EQ(kernel->ruleIdAt(after->value), "default-deny-write");
  EXPECT_EQ(kernel->profileAt(git), "git");  // the name stays with its index
  auto env = kernel->decideInKernel(0, LsmOp::Write, "/ws/.env");
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(kernel->ruleIdAt(env->value), "deny-write-env");

  // And back: the profiles apply again under their old indices.
  ASSERT_TRUE(kernel->replacePolicy(planOf(*profiles_)).ok());
  auto again = kernel->decideInKernel(git, LsmOp::Write, "/home/u/.ssh/known_hosts");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->version, 3u);
  EXPECT_EQ(again->verdict, policy::kLsmAllow);
  auto sw = kernel->decideInKernel(0, LsmOp::Switch, "/ws/tools/build");
  ASSERT_TRUE(sw.ok());
  EXPECT_EQ(sw->verdict, policy::kLsmSwitch);
  EXPECT_EQ(kernel->profileAt(sw->value), "tools");
}

// Decisions race policy swaps between two policies whose tables differ in
// every dimension (classes, states, outcomes, profiles). Each decision
// reports the version it used; its answer must be exactly that version's
// policy's answer. A decision mixing tables of two versions gives no
// outcome or a wrong one.
TEST_F(LsmTables, DecisionsRacingSwapsSeeOneWholePolicy) {
  const LsmPlan a = planOf(*sandbox_), b = planOf(*profiles_);
  ASSERT_NE(a.num_classes, b.num_classes);
  LOAD_OR_SKIP(kernel, a);
  // What each policy says, by rule id, for a fixed set of requests.
  struct Probe {
    uint32_t profile;
    LsmOp op;
    std::string path;
    std::string want[2];  // [0]: policy a (odd versions), [1]: policy b
  };
  std::vector<Probe> probes;
  policy::PathGen gen(21);
  for (int i = 0; i < 64; ++i) {
    Probe p{static_cast<uint32_t>(i % 3), kPathOps[i % 3], gen.next(), {}};
    if (i % 8 == 0) p.path = "/ws/.env";
    // Indices as the filter numbers them: b's profiles land on a's base or
    // are appended, so compare by name through the filter after the run.
    probes.push_back(p);
  }
  std::atomic<bool> stop{false};
  std::atomic<int> decisions{0}, failures{0};
  std::vector<std::tuple<size_t, uint32_t, uint8_t, uint32_t>> seen;  // probe, version, verdict, rule
  std::thread racer([&] {
    for (size_t i = 0; !stop.load(); i = (i + 1) % probes.size()) {
      auto got = kernel->decideInKernel(probes[i].profile, probes[i].op, probes[i].path);
      if (!got.ok()) {
        failures.fetch_add(1);
        continue;
      }
      seen.emplace_back(i, got->version, got->verdict, got->value);
      decisions.fetch_add(1);
    }
  });
  int swaps = 0;
  for (; swaps < 60; ++swaps) {
    ASSERT_TRUE(kernel->replacePolicy(swaps % 2 == 0 ? b : a).ok());
  }
  while (decisions.load() < 2000 && failures.load() < 100)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  stop = true;
  racer.join();
  EXPECT_EQ(failures.load(), 0) << "decisions that found no whole policy";

  // The expected answers, per policy, through a filter of its own.
  std::string want[2][64];
  for (int which = 0; which < 2; ++which) {
    LOAD_OR_SKIP(solo, which == 0 ? a : b);
    for (size_t i = 0; i < probes.size(); ++i) {
      // Same profile *names* as the racing filter, whose numbering is a's
      // (base only) followed by b's new profiles.
      const std::string& name = kernel->profileAt(probes[i].profile);
      const LsmPlan& plan = which == 0 ? a : b;
      auto got = solo->decideInKernel(policy::lsmProfileIndex(plan, name), probes[i].op,
                                      probes[i].path);
      ASSERT_TRUE(got.ok());
      want[which][i] = std::to_string(got->verdict) + " " + solo->ruleIdAt(got->value);
    }
  }
  std::set<uint32_t> versions;
  for (const auto& [i, version, verdict, rule] : seen) {
    versions.insert(version);
    const int which = version % 2 == 1 ? 0 : 1;  // odd: a (1, 3, ...), even: b
    ASSERT_EQ(std::to_string(verdict) + " " + kernel->ruleIdAt(rule), want[which][i])
        << probes[i].path << " under version " << version;
  }
  EXPECT_GE(versions.size(), 3u) << "the decisions did not overlap the swaps";
  RecordProperty("decisions", static_cast<int>(seen.size()));
  RecordProperty("versions_seen", static_cast<int>(versions.size()));
}

}  // namespace
}  // namespace sv::tracer
