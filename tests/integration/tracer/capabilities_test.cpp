// Capability dropping in a forked root child: privileged calls fail and
// /proc/self/status shows the reduced sets.
#include "tracer/capabilities.h"

#include <fcntl.h>
#include <sched.h>

#include <cstring>

#include "test_util.h"

namespace sv::tracer {
namespace {

using testing::describeStatus;
using testing::runInChild;

// Child side, no allocation: the hex value of `key` in /proc/self/status.
bool statusHex(const char* key, unsigned long long* out) {
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  static char buf[8192];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* p = strstr(buf, key);
  if (!p) return false;
  *out = strtoull(p + strlen(key), nullptr, 16);
  return true;
}

TEST(CapabilitiesTest, DropAllRemovesPrivilege) {
  SV_REQUIRE_ROOT();
  int status = runInChild([] {
    // Own UTS namespace first, so a failed drop could never rename the host.
    if (unshare(CLONE_NEWUTS) != 0) return 10;
    if (sethostname("before", 6) != 0) return 11;  // privileged before the drop
    if (dropCapabilities(0) != 0) return 12;
    if (sethostname("after", 5) == 0 || errno != EPERM) return 13;
    unsigned long long eff = 1, bnd = 1, amb = 1, prm = 1;
    if (!statusHex("CapEff:", &eff) || eff != 0) return 14;
    if (!statusHex("CapPrm:", &prm) || prm != 0) return 15;
    if (!statusHex("CapBnd:", &bnd) || bnd != 0) return 16;
    if (!statusHex("CapAmb:", &amb) || amb != 0) return 17;
    return 0;
  });
  EXPECT_CHILD_EXIT0(status);
}

TEST(CapabilitiesTest, KeepMaskSurvives) {
  SV_REQUIRE_ROOT();
  auto mask = capabilityMask({"CAP_NET_BIND_SERVICE"});
  ASSERT_TRUE(mask.ok());
  uint64_t keep = *mask;
  int status = runInChild([keep] {
    if (dropCapabilities(keep) != 0) return 10;
    unsigned long long eff = 0, bnd = 0;
    if (!statusHex("CapEff:", &eff) || eff != keep) return 11;
    if (!statusHex("CapBnd:", &bnd) || bnd != keep) return 12;
    return 0;
  });
  EXPECT_CHILD_EXIT0(status);
}

TEST(CapabilitiesTest, BoundingSetDropSurvivesExecAsRoot) {
  SV_REQUIRE_ROOT();
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  int status = runInChild([&] {
    if (dropCapabilities(0) != 0) return 10;
    dup2(pipefd[1], 1);
    execl("/bin/grep", "grep", "^CapEff:", "/proc/self/status", nullptr);
    return 11;
  });
  close(pipefd[1]);
  char out[128] = {};
  ssize_t n = read(pipefd[0], out, sizeof(out) - 1);
  close(pipefd[0]);
  EXPECT_CHILD_EXIT0(status);
  ASSERT_GT(n, 0);
  EXPECT_STREQ(out, "CapEff:\t0000000000000000\n");
}

TEST(CapabilitiesTest, MaskFromNames) {
  auto m = capabilityMask({"CAP_CHOWN", "net_bind_service", "Cap_Sys_Admin"});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m, (1ULL << 0) | (1ULL << 10) | (1ULL << 21));
  auto empty = capabilityMask({});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, 0u);
  auto bad = capabilityMask({"CAP_FLY"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, EINVAL);
  EXPECT_NE(bad.error().context.find("CAP_FLY"), std::string::npos);
}

}  // namespace
}  // namespace sv::tracer
