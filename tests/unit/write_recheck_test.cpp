// planWriteRecheck(): when a session may let the kernel perform its allowed
// write opens (docs/enforcement.md, "Write opens the kernel re-checks"), and
// the walk for the protected names it then binds read-only.
#include "supervisor/session/write_recheck.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "policy/compile.h"
#include "policy/load.h"
#include "tracer/mount_floor.h"

namespace sv::supervisor {
namespace {

namespace fs = std::filesystem;

class WriteRecheckTest : public testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("sv-write-recheck-" + std::to_string(::getpid()));
    fs::create_directories(root_ / "ws/.git/hooks");
    fs::create_directories(root_ / "ws/src/deep");
    std::ofstream(root_ / "ws/.env") << "x";
    std::ofstream(root_ / "ws/.env.local") << "x";
    std::ofstream(root_ / "ws/.git/config") << "x";
    std::ofstream(root_ / "ws/src/.env.not-at-the-top") << "x";
    std::ofstream(root_ / "ws/src/a.txt") << "x";
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string p(const std::string& rel) const { return (root_ / rel).string(); }

  // code-sandbox with `text` on top, the workspace ws/.
  void load(const std::string& text) {
    policy::LoadRequest r;
    r.preset = "code-sandbox";
    if (!text.empty()) r.files.push_back({"p.json", text});
    r.workspace = p("ws");
    r.home = p("home");
    policy::LoadResult res = policy::load(r);
    std::string diags;
    for (const auto& d : res.diagnostics) diags += d.format() + "\n";
    ASSERT_TRUE(res.ok()) << diags;
    policy_ = res.policy;
    compiled_ = policy::compile(*policy_);
  }
  // Both parts: the plan at the launch, then the walk.
  Result<tracer::ProtectedNames> plan() {
    auto planned = planWriteRecheck({.policy = *policy_,
                                     .landlock = compiled_.landlock,
                                     .landlock_ruleset = true,
                                     .notify_decides_files = true,
                                     .cwd = p("ws")});
    if (!planned) return planned.error();
    return findNamesToBind(*planned);
  }
  // Skips where a mount namespace is out of reach (not root).
  bool mountsPossible() {
    std::string why;
    if (tracer::mountFloorAvailable(&why)) return true;
    std::cout << "[ SKIPPED ] " << why << "\n";
    return false;
  }

  fs::path root_;
  std::shared_ptr<const policy::Policy> policy_;
  policy::CompiledPolicy compiled_;
};

TEST_F(WriteRecheckTest, TheDefaultPresetBindsTheProtectedNamesThatExist) {
  if (!mountsPossible()) GTEST_SKIP() << "needs CAP_SYS_ADMIN";
  load("");
  // A symlink is judged by where it leads: neither bound nor entered (the
  // listing's d_type says so, tracer/protected_names.cpp).
  ASSERT_EQ(::symlink("a.txt", p("ws/src/.env.link").c_str()), 0);
  ASSERT_EQ(::symlink("..", p("ws/src/up").c_str()), 0);
  auto names = plan();
  ASSERT_TRUE(names.ok()) << names.error().message();
  EXPECT_EQ(std::find(names->paths.begin(), names->paths.end(), p("ws/src/.env.link")),
            names->paths.end());
  for (const auto& path : names->paths)
    EXPECT_EQ(path.find("/up/"), std::string::npos) << path << ": reached through a symlink";
  for (const char* rel : {"ws/.env", "ws/.env.local", "ws/.git/config", "ws/.git/hooks"})
    EXPECT_NE(std::find(names->paths.begin(), names->paths.end(), p(rel)), names->paths.end())
        << rel;
  // `.env.*` names every depth (a relative glob is a .gitignore line);
  // src/a.txt is not protected.
  EXPECT_NE(std::find(names->paths.begin(), names->paths.end(), p("ws/src/.env.not-at-the-top")),
            names->paths.end());
  EXPECT_EQ(std::find(names->paths.begin(), names->paths.end(), p("ws/src/a.txt")),
            names->paths.end());
  EXPECT_TRUE(names->unbindable.empty());
  EXPECT_FALSE(names->truncated);
}

TEST_F(WriteRecheckTest, EachConditionItNeedsTurnsItOff) {
  if (!mountsPossible()) GTEST_SKIP() << "needs CAP_SYS_ADMIN";
  auto offBecause = [&](const std::string& needle) {
    auto names = plan();
    EXPECT_FALSE(names.ok()) << "expected off because of: " << needle;
    if (!names.ok()) {
      EXPECT_NE(names.error().message().find(needle), std::string::npos)
          << names.error().message();
    }
  };
  load(R"({"mode": "audit"})");
  offBecause("mode audit");
  load(R"({"profiles": {"git": {"filesystem": {"writableRoots": [{"path": ".git/config"}]}}}})");
  offBecause("profile git");
  // Rotations of an audit file below a writable root appear later.
  load(R"({"audit": {"sinks": [{"type": "file", "path": ")" + p("audit.jsonl") +
       R"(", "maxSizeMb": 1, "maxFiles": 3}]}})");
  offBecause("may appear below a writable root");
  load("");
  ASSERT_EQ(::mkfifo(p("ws/.env.fifo").c_str(), 0600), 0);
  offBecause("not a file or directory");
  ::unlink(p("ws/.env.fifo").c_str());
  {
    const int dir = ::open(p("ws/src").c_str(), O_RDONLY | O_DIRECTORY);  // inherited: no CLOEXEC
    ASSERT_GE(dir, 0);
    offBecause("is a directory");
    ::close(dir);
  }
  auto planned = planWriteRecheck({.policy = *policy_,
                                 .landlock = compiled_.landlock,
                                 .landlock_ruleset = false,
                                 .notify_decides_files = true,
                                 .cwd = p("ws")});
  EXPECT_FALSE(planned.ok());
  EXPECT_TRUE(plan().ok()) << "every condition holds again";
}

// An audit file (no rotation) is open before the walk, so it is bound too;
// one that does not exist then could appear later, unbound.
TEST_F(WriteRecheckTest, AnAuditFileBelowAWritableRootIsBoundOrTurnsItOff) {
  if (!mountsPossible()) GTEST_SKIP() << "needs CAP_SYS_ADMIN";
  const std::string audit = p("ws/audit.jsonl");
  load(R"({"audit": {"sinks": [{"type": "file", "path": ")" + audit + R"("}]}})");
  EXPECT_FALSE(plan().ok());
  std::ofstream(audit) << "";
  auto names = plan();
  ASSERT_TRUE(names.ok()) << names.error().message();
  EXPECT_NE(std::find(names->paths.begin(), names->paths.end(), audit), names->paths.end());
}

TEST_F(WriteRecheckTest, AWalkBeyondItsBudgetOrCancelledSaysSo) {
  policy::PathRule rule;
  ASSERT_TRUE(policy::Glob::compile(p("ws") + "/**/.env", &rule.glob, nullptr, nullptr, true));
  auto all = tracer::findProtectedNames({p("ws")}, p("ws"), {rule});
  EXPECT_FALSE(all.truncated);
  EXPECT_EQ(all.paths, std::vector<std::string>{p("ws/.env")});
  auto cut = tracer::findProtectedNames({p("ws")}, p("ws"), {rule}, 2);
  EXPECT_TRUE(cut.truncated);
  std::atomic<bool> cancel{true};
  EXPECT_TRUE(tracer::findProtectedNames({p("ws")}, p("ws"), {rule}, 1000, &cancel).truncated);
}

}  // namespace
}  // namespace sv::supervisor
