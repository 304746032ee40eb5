// Landlock rulesets enforced in a forked child: read-only and write roots, file
// rules, exec, scopes (ABI 6), every older ABI, skipped missing paths.
#include "tracer/landlock.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <fstream>

#include "test_util.h"

namespace sv::tracer {
namespace {

using testing::describeStatus;
using testing::runInChild;
using testing::TempDir;

void writeFile(const std::string& path, const std::string& content) {
  std::ofstream(path) << content;
}

// Child-side: open() result as 0 (ok) or errno.
int openErr(const std::string& path, int flags) {
  int fd = open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  close(fd);
  return 0;
}

class LandlockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    abi_ = landlockAbi();
    if (abi_ == 0) GTEST_SKIP() << "needs landlock: landlockAbi() == 0";
    ASSERT_FALSE(tmp_.path().empty());
    ro_ = tmp_.path() + "/ro";
    rw_ = tmp_.path() + "/rw";
    outside_ = tmp_.path() + "/outside";
    for (auto* d : {&ro_, &rw_, &outside_}) ASSERT_EQ(mkdir(d->c_str(), 0755), 0);
    writeFile(ro_ + "/f.txt", "ro");
    writeFile(rw_ + "/g.txt", "rw");
    writeFile(outside_ + "/h.txt", "outside");
  }

  int abi_ = 0;
  TempDir tmp_;
  std::string ro_, rw_, outside_;
};

TEST_F(LandlockTest, ReadOnlyRootAllowsReadDeniesWriteAndOutside) {
  policy::LandlockPlan plan;
  plan.rules.push_back({ro_, /*read=*/true, /*write=*/false, /*exec=*/false});
  auto rs = buildLandlockRuleset(plan, abi_);
  ASSERT_TRUE(rs.ok()) << rs.error().message();
  std::string ro_file = ro_ + "/f.txt", ro_new = ro_ + "/new.txt", out = outside_ + "/h.txt";
  int status = runInChild([&] {
    if (restrictSelf(rs->get()) != 0) return 10;
    if (openErr(ro_file, O_RDONLY) != 0) return 11;
    if (openErr(ro_file, O_WRONLY) != EACCES) return 12;
    if (openErr(ro_new, O_WRONLY | O_CREAT) != EACCES) return 13;
    if (openErr(out, O_RDONLY) != EACCES) return 14;
    if (openErr(ro_, O_RDONLY | O_DIRECTORY) != 0) return 15;  // READ_DIR granted
    return 0;
  });
  EXPECT_CHILD_EXIT0(status);
}

TEST_F(LandlockTest, WriteRootAllowsCreateAndDelete) {
  policy::LandlockPlan plan;
  plan.rules.push_back({rw_, true, true, false});
  plan.rules.push_back({ro_, true, false, false});
  auto rs = buildLandlockRuleset(plan, abi_);
  ASSERT_TRUE(rs.ok()) << rs.error().message();
  std::string created = rw_ + "/created.txt", ro_new = ro_ + "/x";
  int status = runInChild([&] {
    if (restrictSelf(rs->get()) != 0) return 10;
    if (openErr(created, O_WRONLY | O_CREAT | O_TRUNC) != 0) return 11;
    if (unlink(created.c_str()) != 0) return 12;
    if (mkdir(ro_new.c_str(), 0755) == 0 || errno != EACCES) return 13;
    return 0;
  });
  EXPECT_CHILD_EXIT0(status);
}

TEST_F(LandlockTest, FileRuleGrantsOnlyThatFile) {
  // A file rule with write must not carry directory-only rights (EINVAL).
  policy::LandlockPlan plan;
  plan.rules.push_back({rw_ + "/g.txt", true, true, false});
  auto rs = buildLandlockRuleset(plan, abi_);
  ASSERT_TRUE(rs.ok()) << rs.error().message();
  std::string g = rw_ + "/g.txt", sibling = rw_ + "/other.txt", ro_file = ro_ + "/f.txt";
  int status = runInChild([&] {
    if (restrictSelf(rs->get()) != 0) return 10;
    if (openErr(g, O_RDWR) != 0) return 11;
    if (openErr(sibling, O_WRONLY | O_CREAT) != EACCES) return 12;
    if (openErr(ro_file, O_RDONLY) != EACCES) return 13;
    return 0;
  });
  EXPECT_CHILD_EXIT0(status);
}

TEST_F(LandlockTest, MissingPathsAreSkippedAndReported) {
  policy::LandlockPlan plan;
  std::string missing = tmp_.path() + "/does-not-exist";
  plan.rules.push_back({missing, true, false, false});
  plan.rules.push_back({ro_, true, false, false});
  std::vector<std::string> skipped;
  auto rs = buildLandlockRuleset(plan, abi_, &skipped);
  ASSERT_TRUE(rs.ok()) << rs.error().message();
  EXPECT_EQ(skipped, std::vector<std::string>{missing});
}

TEST_F(LandlockTest, ExecNeedsExecRight) {
  policy::LandlockPlan plan;
  plan.rules.push_back({"/", /*read=*/true, false, /*exec=*/false});
  auto no_exec = buildLandlockRuleset(plan, abi_);
  ASSERT_TRUE(no_exec.ok()) << no_exec.error().message();
  plan.rules[0].exec = true;
  auto with_exec = buildLandlockRuleset(plan, abi_);
  ASSERT_TRUE(with_exec.ok()) << with_exec.error().message();
  auto tryExec = [](int ruleset) {
    return runInChild([ruleset] {
      if (restrictSelf(ruleset) != 0) return 10;
      execl("/bin/true", "true", nullptr);
      return errno == EACCES ? 20 : 21;
    });
  };
  int denied = tryExec(no_exec->get());
  EXPECT_TRUE(WIFEXITED(denied) && WEXITSTATUS(denied) == 20) << describeStatus(denied);
  int allowed = tryExec(with_exec->get());
  EXPECT_CHILD_EXIT0(allowed);
}

TEST_F(LandlockTest, SignalScopeBlocksSignalsOutsideTheDomain) {
  if (abi_ < 6) GTEST_SKIP() << "needs landlock ABI 6 (scopes): abi=" << abi_;
  policy::LandlockPlan plan;
  plan.rules.push_back({"/", true, false, false});
  plan.scope_signal = true;
  auto scoped = buildLandlockRuleset(plan, abi_);
  ASSERT_TRUE(scoped.ok()) << scoped.error().message();
  plan.scope_signal = false;
  auto unscoped = buildLandlockRuleset(plan, abi_);
  ASSERT_TRUE(unscoped.ok()) << unscoped.error().message();
  auto signalParent = [](int ruleset) {
    return runInChild([ruleset] {
      if (restrictSelf(ruleset) != 0) return 10;
      if (kill(getppid(), 0) == 0) return 0;  // signal 0: permission check only
      return errno == EPERM ? 20 : 21;
    });
  };
  int blocked = signalParent(scoped->get());
  EXPECT_TRUE(WIFEXITED(blocked) && WEXITSTATUS(blocked) == 20) << describeStatus(blocked);
  int allowed = signalParent(unscoped->get());
  EXPECT_CHILD_EXIT0(allowed);
}

TEST_F(LandlockTest, AbstractUnixScopeBlocksConnectOutsideTheDomain) {
  if (abi_ < 6) GTEST_SKIP() << "needs landlock ABI 6 (scopes): abi=" << abi_;
  UniqueFd server(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(server);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string name = "sv-landlock-test-" + std::to_string(getpid());
  std::memcpy(addr.sun_path + 1, name.data(), name.size());  // abstract: leading NUL
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  ASSERT_EQ(bind(server.get(), reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(listen(server.get(), 4), 0);
  policy::LandlockPlan plan;
  plan.rules.push_back({"/", true, false, false});
  for (bool scoped : {true, false}) {
    plan.scope_abstract_unix = scoped;
    auto rs = buildLandlockRuleset(plan, abi_);
    ASSERT_TRUE(rs.ok()) << rs.error().message();
    int status = runInChild([&] {
      if (restrictSelf(rs->get()) != 0) return 10;
      int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (s < 0) return 11;
      if (connect(s, reinterpret_cast<sockaddr*>(&addr), len) == 0) return 0;
      return errno == EPERM ? 20 : 21;
    });
    if (scoped) {
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 20) << describeStatus(status);
    } else {
      EXPECT_CHILD_EXIT0(status);
    }
  }
}

// A plan that leaves paths to another backend (the BPF LSM) restricts no
// file access, at every ABI, and keeps its scopes where the kernel has them.
TEST_F(LandlockTest, PathsLeftToAnotherBackendRestrictNoFileAccess) {
  policy::LandlockPlan plan;
  plan.paths = false;
  plan.rules.push_back({ro_, true, false, false});  // ignored
  for (int abi = 1; abi <= abi_; ++abi) {
    auto rs = buildLandlockRuleset(plan, abi);
    ASSERT_TRUE(rs.ok()) << "abi " << abi << ": " << rs.error().message();
    int status = runInChild([&] {
      if (restrictSelf(rs->get()) != 0) return 10;
      if (openErr(ro_ + "/f.txt", O_WRONLY) != 0) return 11;
      if (openErr(outside_ + "/new.txt", O_WRONLY | O_CREAT) != 0) return 12;
      // ABI 1 refuses every cross-directory rename in a domain that handles
      // file access (no REFER right yet): the fallback's known limit.
      if (abi >= 2 && rename((outside_ + "/new.txt").c_str(), (rw_ + "/moved.txt").c_str()) != 0)
        return 13;
      if (abi >= 6 && kill(getppid(), 0) == 0) return 14;  // the signal scope stays
      return 0;
    });
    EXPECT_CHILD_EXIT0(status) << "abi " << abi;
    unlink((rw_ + "/moved.txt").c_str());
    unlink((outside_ + "/new.txt").c_str());
  }
}

TEST_F(LandlockTest, EveryAbiUpToTheKernelsBuildsAWorkingRuleset) {
  // Older ABIs pass a shorter ruleset attr and fewer rights: each must work on
  // this kernel, as it would on a kernel that only knows that ABI.
  std::string g = rw_ + "/g.txt", out = outside_ + "/h.txt";
  for (int abi = 1; abi <= abi_; ++abi) {
    policy::LandlockPlan plan;
    plan.rules.push_back({rw_, true, true, true});
    plan.rules.push_back({ro_ + "/f.txt", true, true, false});
    auto rs = buildLandlockRuleset(plan, abi);
    ASSERT_TRUE(rs.ok()) << "abi " << abi << ": " << rs.error().message();
    int status = runInChild([&] {
      if (restrictSelf(rs->get()) != 0) return 10;
      if (openErr(g, O_RDWR) != 0) return 11;
      if (openErr(out, O_RDONLY) != EACCES) return 12;
      return 0;
    });
    EXPECT_CHILD_EXIT0(status) << "abi " << abi;
  }
}

TEST_F(LandlockTest, HandledRightsGrowWithAbi) {
  EXPECT_EQ(landlockHandledFs(0), 0u);
  EXPECT_LT(landlockHandledFs(1), landlockHandledFs(2));
  EXPECT_LT(landlockHandledFs(2), landlockHandledFs(3));
  EXPECT_EQ(landlockHandledFs(3), landlockHandledFs(4));  // ABI 4 is net only: not handled
  EXPECT_LT(landlockHandledFs(4), landlockHandledFs(5));
}

}  // namespace
}  // namespace sv::tracer
