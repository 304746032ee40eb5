// Session cgroups on the real hierarchy: create, move a child in (clone3
// CLONE_INTO_CGROUP and cgroup.procs), kill, populated, cleanup.
#include "tracer/cgroup.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "test_util.h"
#include "tracer/mountinfo.h"

namespace sv::tracer {
namespace {

using testing::describeStatus;

class CgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SV_REQUIRE_ROOT();
    auto mount = findCgroup2Mount();
    if (!mount) GTEST_SKIP() << "needs cgroup2: " << mount.error().message();
  }
  std::string name() { return "sv-test-" + std::to_string(getpid()) + "-" + std::to_string(n_++); }
  int n_ = 0;
};

bool exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

std::string cgroupOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return "";
}

int waitStatus(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

TEST_F(CgroupTest, MountIsFromMountinfo) {
  auto mount = findCgroup2Mount();
  ASSERT_TRUE(mount.ok());
  EXPECT_TRUE(exists(*mount + "/cgroup.controllers")) << *mount;
}

TEST_F(CgroupTest, CloneIntoCgroupKillAndCleanup) {
  std::string dir;
  {
    auto cg = SessionCgroup::create(name());
    ASSERT_TRUE(cg.ok()) << cg.error().message();
    dir = cg->path();
    ASSERT_TRUE(exists(dir));
    auto empty = cg->populated();
    ASSERT_TRUE(empty.ok()) << empty.error().message();
    EXPECT_FALSE(*empty);

    clone_args args{};
    args.flags = CLONE_INTO_CGROUP;
    args.exit_signal = SIGCHLD;
    args.cgroup = static_cast<uint64_t>(cg->dirFd());
    long pid = syscall(SYS_clone3, &args, sizeof(args));
    ASSERT_GE(pid, 0) << std::strerror(errno);
    if (pid == 0) {
      for (;;) pause();
    }
    auto pop = cg->populated();
    ASSERT_TRUE(pop.ok());
    EXPECT_TRUE(*pop);
    EXPECT_EQ(dir.substr(dir.size() - cgroupOf(pid).size()), cgroupOf(pid));

    ASSERT_TRUE(cg->kill().ok());
    int status = waitStatus(static_cast<pid_t>(pid));
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << describeStatus(status);
    pop = cg->populated();
    ASSERT_TRUE(pop.ok());
    EXPECT_FALSE(*pop);
  }
  EXPECT_FALSE(exists(dir)) << "destructor must rmdir " << dir;
}

TEST_F(CgroupTest, AddProcessAndDestructorKillsSurvivors) {
  std::string dir;
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    for (;;) pause();
  }
  {
    auto cg = SessionCgroup::create(name());
    ASSERT_TRUE(cg.ok()) << cg.error().message();
    dir = cg->path();
    ASSERT_TRUE(cg->addProcess(pid).ok());
    auto pop = cg->populated();
    ASSERT_TRUE(pop.ok());
    EXPECT_TRUE(*pop);
  }  // destructor: kill, wait for empty, rmdir
  int status = waitStatus(pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << describeStatus(status);
  EXPECT_FALSE(exists(dir));
}

TEST_F(CgroupTest, PidByPidFallbackKillsAForkingTree) {
  auto cg = SessionCgroup::create(name());
  ASSERT_TRUE(cg.ok()) << cg.error().message();
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Starts forking only once it is in the cgroup; every child lands there too.
    // Its own process group, so the test can always clean up; no inherited
    // stdout/stderr, so a straggler can't hold ctest's output pipe open.
    setpgid(0, 0);
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    close(go[1]);
    char byte;
    if (read(go[0], &byte, 1) != 1) _exit(1);
    for (;;) {
      pid_t c = fork();
      if (c == 0) {
        for (;;) pause();
      }
      usleep(1000);
    }
  }
  close(go[0]);
  // Whatever the outcome, nothing of the forking tree outlives the test.
  struct GroupKiller {
    pid_t pgid;
    ~GroupKiller() { kill(-pgid, SIGKILL); }
  } killer{pid};
  Status added = cg->addProcess(pid);
  if (!added.ok()) kill(pid, SIGKILL);
  ASSERT_TRUE(added.ok()) << added.error().message();
  ASSERT_EQ(write(go[1], "g", 1), 1);
  close(go[1]);
  usleep(20000);  // let it fork a few
  ASSERT_TRUE(cg->killEachProcess().ok());
  int status = waitStatus(pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << describeStatus(status);
  bool emptied = false;
  for (int i = 0; i < 100 && !emptied; ++i) {
    auto pop = cg->populated();
    ASSERT_TRUE(pop.ok());
    emptied = !*pop;
    if (!emptied) usleep(10000);
  }
  EXPECT_TRUE(emptied);
}

TEST_F(CgroupTest, PidsMaxWorksOrSaysWhy) {
  auto cg = SessionCgroup::create(name());
  ASSERT_TRUE(cg.ok()) << cg.error().message();
  Status st = cg->setPidsMax(64);
  if (!st.ok()) {
    EXPECT_EQ(st.error().code, ENOTSUP) << st.error().message();
    EXPECT_NE(st.error().context.find("pids controller"), std::string::npos);
  } else {
    std::ifstream in(cg->path() + "/pids.max");
    std::string v;
    in >> v;
    EXPECT_EQ(v, "64");
  }
}

TEST_F(CgroupTest, RejectsBadNames) {
  EXPECT_FALSE(SessionCgroup::create("a/b").ok());
  EXPECT_FALSE(SessionCgroup::create("..").ok());
  EXPECT_FALSE(SessionCgroup::create("").ok());
}

// The flags a mount of cgroup2 must repeat: the hierarchy-wide ones, as the
// first cgroup2 line shows them (mountinfo text, no kernel needed).
TEST(Cgroup2RootFlagsTest, KeepsOnlyTheHierarchyWideFlags) {
  const std::string systemd =
      "25 1 0:22 / /sys rw,nosuid - sysfs sysfs rw\n"
      "30 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
      "rw,nsdelegate,memory_recursiveprot\n"
      "31 25 0:27 / /run/x rw - cgroup2 cgroup2 rw,favordynmods\n";
  EXPECT_EQ(cgroup2RootFlags(systemd), "nsdelegate,memory_recursiveprot");
  EXPECT_EQ(
      cgroup2RootFlags("41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"),
      "");
  EXPECT_EQ(cgroup2RootFlags("25 1 0:22 / /sys rw - sysfs sysfs rw\n"), "");
}

TEST(MountEntryTest, ParsesAndUnescapesTheFields) {
  const std::string text =
      "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
      "39 31 0:36 /sub /mnt/with\\040space rw,relatime shared:9 master:2 - cgroup cgroup "
      "rw,pids\n";
  auto e = findMountEntry(text, "cgroup",
                          [](const MountEntry& m) { return m.super_options == "rw,pids"; });
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->root, "/sub");
  EXPECT_EQ(e->mount_point, "/mnt/with space");
  EXPECT_EQ(e->fstype, "cgroup");
  EXPECT_FALSE(findMountEntry(text, "cgroup2").has_value());
}

TEST(CgroupOverrideTest, DisabledByEnv) {
  setenv("SUPERVISE_TEST_DISABLE", "cgroup", 1);
  auto mount = findCgroup2Mount();
  unsetenv("SUPERVISE_TEST_DISABLE");
  ASSERT_FALSE(mount.ok());
  EXPECT_NE(mount.error().context.find("SUPERVISE_TEST_DISABLE"), std::string::npos);
}

}  // namespace
}  // namespace sv::tracer
