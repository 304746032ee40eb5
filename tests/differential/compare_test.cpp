// The comparison itself (compare.h) on made-up runs: each kind of
// difference it exists to find is found, and agreement is not one.
#include "tests/differential/compare.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace sv::differential {
namespace {

struct MadeUpRun {
  std::vector<Request> requests;
  std::vector<Expectation> expected;
  std::vector<int> outcomes;
  AuditTrail trail;

  // A write the engine denies by `rule`, refused with `outcome`.
  void deniedWrite(const std::string& path, const std::string& rule, int outcome = EACCES) {
    requests.push_back({Kind::OpenWrite, kCwd, path});
    Expectation e;
    e.verdict = policy::Verdict::Deny;
    e.rule = rule;
    e.events.push_back({"file open " + path, "deny", rule, path});
    expected.push_back(e);
    outcomes.push_back(outcome);
  }
  // An event of the backend's own shape (one per hook: another `what`).
  void backendDenial(const std::string& path, const std::string& rule) {
    trail.decisions.push_back({"file write " + path, "deny", rule, path});
  }
  Comparison compareDenialRules() const {
    CompareOptions o;
    o.events = CompareOptions::Events::DenialRules;
    return compare(requests, expected, outcomes, trail, {}, o);
  }
};

TEST(CompareDenialRules, TheEnginesRuleOnTheSamePathAgrees) {
  MadeUpRun run;
  run.deniedWrite("/ws/.env", "deny-write-env");
  run.deniedWrite("/ws/.env", "deny-write-env");
  run.backendDenial("/ws/.env", "deny-write-env");  // once per distinct pair is enough
  const Comparison c = run.compareDenialRules();
  EXPECT_EQ(c.differences, 0u);
  EXPECT_EQ(c.denial_rules, 1u);
  EXPECT_EQ(c.denied, 2u);
}

TEST(CompareDenialRules, AnotherRuleOnTheSamePathIsADifferenceBothWays) {
  MadeUpRun run;
  run.deniedWrite("/ws/.env", "deny-write-env");
  run.backendDenial("/ws/.env", "default-deny-write");
  const Comparison c = run.compareDenialRules();
  ASSERT_EQ(c.differences, 2u);
  EXPECT_NE(c.lines[0].find("no denial event by that rule"), std::string::npos) << c.lines[0];
  EXPECT_NE(c.lines[1].find("rule default-deny-write"), std::string::npos) << c.lines[1];
}

TEST(CompareDenialRules, ARefusalWithoutItsEventIsADifference) {
  MadeUpRun run;
  run.deniedWrite("/ws/.git/config", "deny-write-git-config");
  EXPECT_EQ(run.compareDenialRules().differences, 1u);
}

TEST(CompareDenialRules, ADenialOfARequestTheBackendAllowedIsNotExpectedToHaveAnEvent) {
  MadeUpRun run;
  // The verdicts differ: that is one difference, not a second for the event.
  run.deniedWrite("/ws/.env", "deny-write-env", 0);
  const Comparison c = run.compareDenialRules();
  EXPECT_EQ(c.differences, 1u);
  EXPECT_EQ(c.allowed, 1u);
}

TEST(CompareDenialRules, AKnownDifferenceIsCountedApart) {
  MadeUpRun run;
  run.backendDenial("/ws/sock", "unix-socket-outside-writable-roots");
  CompareOptions o;
  o.events = CompareOptions::Events::DenialRules;
  o.known = {{"/ws/sock", "made up"}};
  const Comparison c = compare(run.requests, run.expected, run.outcomes, run.trail, {}, o);
  EXPECT_EQ(c.differences, 0u);
  EXPECT_EQ(c.known, 1u);
}

}  // namespace
}  // namespace sv::differential
