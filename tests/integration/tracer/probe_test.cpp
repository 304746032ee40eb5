// probeHost() and probeHostForSession() on this host, and the SUPERVISE_TEST_DISABLE override.
#include "tracer/probe.h"

#include <algorithm>

#include "test_util.h"
#include "tracer/landlock.h"

namespace sv::tracer {
namespace {

bool hasNote(const HostFeatures& f, const std::string& needle) {
  return std::any_of(f.notes.begin(), f.notes.end(),
                     [&](const std::string& n) { return n.find(needle) != std::string::npos; });
}

TEST(ProbeTest, ReportsSeccompNotifyAndLandlock) {
  HostFeatures f = probeHost();
  if (!f.seccomp_notify)
    GTEST_SKIP() << "needs seccomp-notify: " << ::testing::PrintToString(f.notes);
  EXPECT_TRUE(f.notify_addfd);
  EXPECT_GT(f.landlock_abi, 0) << ::testing::PrintToString(f.notes);
  EXPECT_EQ(f.landlock_abi, landlockAbi());
  if (geteuid() == 0) {
    EXPECT_FALSE(f.cgroup2_mount.empty());
    EXPECT_TRUE(f.cgroup_writable) << ::testing::PrintToString(f.notes);
    EXPECT_TRUE(f.cgroup_kill) << ::testing::PrintToString(f.notes);
  }
}

TEST(ProbeTest, DisableLandlockByEnv) {
  setenv("SUPERVISE_TEST_DISABLE", "bpf, landlock", 1);
  HostFeatures f = probeHost();
  int direct = landlockAbi();
  unsetenv("SUPERVISE_TEST_DISABLE");
  EXPECT_EQ(f.landlock_abi, 0);
  EXPECT_EQ(direct, 0);
  EXPECT_TRUE(hasNote(f, "landlock: unavailable (disabled by SUPERVISE_TEST_DISABLE)"));
  EXPECT_TRUE(hasNote(f, "bpf: unavailable (disabled by SUPERVISE_TEST_DISABLE)"));
}

TEST(ProbeTest, DisableSeccompNotifyAndCgroupByEnv) {
  setenv("SUPERVISE_TEST_DISABLE", "seccomp-notify,cgroup", 1);
  HostFeatures f = probeHost();
  unsetenv("SUPERVISE_TEST_DISABLE");
  EXPECT_FALSE(f.seccomp_notify);
  EXPECT_FALSE(f.notify_addfd);
  EXPECT_TRUE(f.cgroup2_mount.empty());
  EXPECT_FALSE(f.cgroup_writable);
  EXPECT_TRUE(hasNote(f, "seccomp-notify: unavailable (disabled"));
  EXPECT_TRUE(hasNote(f, "cgroup: unavailable (disabled"));
}

// The session's cheap probe must give the same answers as the full one for
// what it claims to know, and honour the same test override.
TEST(ProbeTest, SessionProbeAgreesWithFullProbe) {
  HostFeatures full = probeHost();
  HostFeatures quick = probeHostForSession();
  EXPECT_EQ(quick.seccomp_notify, full.seccomp_notify) << ::testing::PrintToString(quick.notes);
  EXPECT_EQ(quick.landlock_abi, full.landlock_abi);
  EXPECT_EQ(quick.cgroup2_mount, full.cgroup2_mount);
  if (full.seccomp_notify) {
    EXPECT_EQ(quick.notify_addfd, full.notify_addfd);
  }

  setenv("SUPERVISE_TEST_DISABLE", "seccomp-notify,cgroup,landlock", 1);
  HostFeatures off = probeHostForSession();
  unsetenv("SUPERVISE_TEST_DISABLE");
  EXPECT_FALSE(off.seccomp_notify);
  EXPECT_FALSE(off.notify_addfd);
  EXPECT_EQ(off.landlock_abi, 0);
  EXPECT_TRUE(off.cgroup2_mount.empty());
  EXPECT_FALSE(off.cgroup_writable);
  EXPECT_TRUE(hasNote(off, "seccomp-notify: unavailable (disabled"));
}

TEST(ProbeTest, TestDisabledParsesList) {
  setenv("SUPERVISE_TEST_DISABLE", "cgroup,landlockx", 1);
  EXPECT_TRUE(testDisabled("cgroup"));
  EXPECT_FALSE(testDisabled("landlock"));
  unsetenv("SUPERVISE_TEST_DISABLE");
  EXPECT_FALSE(testDisabled("cgroup"));
}

}  // namespace
}  // namespace sv::tracer
