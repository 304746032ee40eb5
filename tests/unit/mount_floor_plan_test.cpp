// planMountFloor(): the Landlock plan as mount steps — a missing path grants
// nothing, a rule below another carries the union of their rights (or no
// mount at all), scaffolding once per directory, protected names found.
#include <gtest/gtest.h>
#include <linux/mount.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tracer/mount_floor.h"

namespace sv::tracer {
namespace {

namespace fs = std::filesystem;
using Kind = MountFloorStep::Kind;

class MountFloorPlanTest : public testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("sv-floor-plan-" + std::to_string(::getpid()));
    fs::create_directories(root_ / "ws/sub");
    fs::create_directories(root_ / "sys");
    std::ofstream(root_ / "ws/.env") << "x";
    std::ofstream(root_ / "ws/sub/.env") << "x";
    std::ofstream(root_ / "ws/a.txt") << "x";
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string p(const std::string& rel) const { return (root_ / rel).string(); }
  policy::PathRule denyGlob(const std::string& pattern) const {
    policy::PathRule r;
    std::string err;
    EXPECT_TRUE(policy::Glob::compile(pattern, &r.glob, &err, nullptr, true)) << err;
    return r;
  }
  const MountFloorStep* bindOf(const MountFloorPlan& plan, const std::string& path) const {
    for (const auto& s : plan.steps)
      if (s.kind == Kind::Bind && s.source == path) return &s;
    return nullptr;
  }

  fs::path root_;
};

TEST_F(MountFloorPlanTest, RightsBecomeMountAttributesAndMissingPathsGrantNothing) {
  policy::LandlockPlan plan;
  plan.rules = {{p("missing"), true, true, true}, {p("sys"), true, false, false},
                {p("ws"), true, true, true}};
  auto planned = planMountFloor(plan, {}, "/stage", "/");
  ASSERT_TRUE(planned.ok()) << planned.error().message();
  EXPECT_EQ(bindOf(*planned, p("missing")), nullptr);
  const auto* sys = bindOf(*planned, p("sys"));
  ASSERT_NE(sys, nullptr);
  EXPECT_EQ(sys->target, "/stage" + p("sys"));
  EXPECT_EQ(sys->attr_set,
            uint64_t(MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOEXEC | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV));
  const auto* ws = bindOf(*planned, p("ws"));
  ASSERT_NE(ws, nullptr);
  EXPECT_EQ(ws->attr_set, uint64_t(MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV));
  // Each parent directory is made once, before the mount points below it.
  size_t made_root = 0;
  for (const auto& s : planned->steps) made_root += s.kind == Kind::MakeDir && s.target == "/stage" + root_.string();
  EXPECT_EQ(made_root, 1u);
}

TEST_F(MountFloorPlanTest, ARuleBelowAnotherCarriesTheUnionOrIsNotMounted) {
  policy::LandlockPlan plan;
  plan.rules = {{p("ws"), true, true, false}, {p("ws/sub"), true, false, true}};
  auto planned = planMountFloor(plan, {}, "/stage", "/");
  ASSERT_TRUE(planned.ok());
  const auto* sub = bindOf(*planned, p("ws/sub"));
  ASSERT_NE(sub, nullptr);
  EXPECT_EQ(sub->attr_set & MOUNT_ATTR_RDONLY, 0u) << "writable through its parent, as in Landlock";
  EXPECT_EQ(sub->attr_set & MOUNT_ATTR_NOEXEC, 0u);
  for (const auto& s : planned->steps)
    EXPECT_FALSE(s.kind != Kind::Bind && s.target == "/stage" + p("ws/sub"))
        << "the mount point below a bound root is the host's own";

  plan.rules = {{p("ws"), true, true, true}, {p("ws/sub"), true, false, false}};
  planned = planMountFloor(plan, {}, "/stage", "/");
  ASSERT_TRUE(planned.ok());
  EXPECT_EQ(bindOf(*planned, p("ws/sub")), nullptr) << "no rights beyond its parent's: no mount";
}

TEST_F(MountFloorPlanTest, ProtectedNamesBelowWritableRootsAreBoundReadOnly) {
  policy::LandlockPlan plan;
  plan.rules = {{p("sys"), true, false, false}, {p("ws"), true, true, true}};
  auto planned = planMountFloor(plan, {denyGlob(p("**/.env"))}, "/stage", "/");
  ASSERT_TRUE(planned.ok());
  EXPECT_EQ(planned->read_only_names, (std::vector<std::string>{p("ws/.env"), p("ws/sub/.env")}));
  const auto* env = bindOf(*planned, p("ws/sub/.env"));
  ASSERT_NE(env, nullptr);
  EXPECT_TRUE(env->attr_set & MOUNT_ATTR_RDONLY);
  EXPECT_FALSE(planned->names_truncated);
  EXPECT_EQ(bindOf(*planned, p("ws/a.txt")), nullptr);
}

// A directory that vanishes under the walk (another program's temporary
// tree in a shared /tmp) costs that directory only: the walk goes on and
// still finds the names beyond it.
TEST_F(MountFloorPlanTest, ADirectoryVanishingUnderTheWalkCostsOnlyThatDirectory) {
  fs::create_directories(root_ / "shared");
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    for (unsigned i = 0; !stop; ++i) {
      const fs::path d = root_ / "shared" / ("tmp" + std::to_string(i % 16));
      std::error_code ec;
      for (const char* sub : {"a/b/c", "a/d/e", "f/g"}) fs::create_directories(d / sub, ec);
      fs::remove_all(d, ec);
    }
  });
  policy::LandlockPlan plan;
  plan.rules = {{root_.string(), true, true, true}};
  int missed = 0;
  for (int round = 0; round < 300; ++round) {
    auto planned = planMountFloor(plan, {denyGlob(p("**/.env"))}, "/stage", p("ws"));
    ASSERT_TRUE(planned.ok());
    const auto& names = planned->read_only_names;
    missed += std::find(names.begin(), names.end(), p("ws/.env")) == names.end() ||
              std::find(names.begin(), names.end(), p("ws/sub/.env")) == names.end();
  }
  stop = true;
  churn.join();
  EXPECT_EQ(missed, 0) << "rounds whose walk stopped at a vanished directory";
}

// The working directory's names are found first: a writable root with more
// entries than the budget elsewhere still has the command's own .env bound.
TEST_F(MountFloorPlanTest, TheWorkingDirectoryIsWalkedFirst) {
  fs::create_directories(root_ / "aaa-big");
  for (int i = 0; i < 300; ++i) fs::create_directories(root_ / "aaa-big" / std::to_string(i));
  policy::LandlockPlan plan;
  plan.rules = {{root_.string(), true, true, true}};
  auto planned = planMountFloor(plan, {denyGlob(p("**/.env"))}, "/stage", p("ws"), 100);
  ASSERT_TRUE(planned.ok());
  EXPECT_TRUE(planned->names_truncated);
  EXPECT_EQ(planned->read_only_names, (std::vector<std::string>{p("ws/.env"), p("ws/sub/.env")}));
}

// A writable root above the workspace (/tmp) is walked only on the way to
// the rules' literal prefixes: the rest of it cannot hold a match.
TEST_F(MountFloorPlanTest, OnlyDirectoriesThatMayHoldAMatchAreWalked) {
  for (int i = 0; i < 300; ++i) fs::create_directories(root_ / "aaa-big" / std::to_string(i));
  policy::LandlockPlan plan;
  plan.rules = {{root_.string(), true, true, true}};
  auto planned = planMountFloor(plan, {denyGlob(p("ws/**/.env"))}, "/stage", "/", 100);
  ASSERT_TRUE(planned.ok());
  EXPECT_FALSE(planned->names_truncated) << "aaa-big was walked";
  EXPECT_EQ(planned->read_only_names, (std::vector<std::string>{p("ws/.env"), p("ws/sub/.env")}));
}

TEST_F(MountFloorPlanTest, APlanThatDecidesNoPathsHasNoFloor) {
  policy::LandlockPlan plan;
  plan.paths = false;
  EXPECT_FALSE(planMountFloor(plan, {}, "/stage", "/").ok());
}

}  // namespace
}  // namespace sv::tracer
