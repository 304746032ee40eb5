// The filters compiled into supervise are the ones buildSeccompFilter()
// makes now, for every plan, and a plan's index names that plan.
#include "tracer/seccomp/seccomp_programs.h"

#include <gtest/gtest.h>

#include <sched.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tracer/seccomp/seccomp_filter.h"

namespace sv::tracer {
namespace {

TEST(SeccompPrograms, IndexNamesEachPlanOnce) {
  for (size_t i = 0; i < kSeccompPlanCount; ++i) EXPECT_EQ(seccompPlanIndex(seccompPlanAt(i)), i);
  policy::SeccompPlan plan;
  plan.notify_write_opens = false;
  plan.allow_user_namespaces = true;
  EXPECT_EQ(seccompPlanAt(seccompPlanIndex(plan)).allow_user_namespaces, true);
  EXPECT_EQ(seccompPlanAt(seccompPlanIndex(plan)).notify_write_opens, false);
}

TEST(SeccompPrograms, MatchTheBuilder) {
  for (size_t i = 0; i < kSeccompPlanCount; ++i) {
    const policy::SeccompPlan plan = seccompPlanAt(i);
    auto built = buildSeccompFilter(plan);
    ASSERT_TRUE(built) << built.error().message();
    const std::vector<sock_filter> prebuilt = prebuiltSeccompFilter(plan);
    ASSERT_EQ(prebuilt.size(), built->size()) << "plan " << i;
    EXPECT_EQ(std::memcmp(prebuilt.data(), built->data(), prebuilt.size() * sizeof(sock_filter)), 0)
        << "plan " << i;
  }
}

// The refusal log filters too, and each refuses what the plan's filter
// refuses (EPERM) and lets the rest through, clone3 included: its ENOSYS is
// the main filter's fallback signal to glibc, not a refusal to log.
TEST(SeccompPrograms, RefusalLogFiltersMatchTheBuilderAndRefuseOnlyRefusals) {
  for (bool userns : {false, true}) {
    policy::SeccompPlan plan;
    plan.allow_user_namespaces = userns;
    auto built = buildRefusalLogFilter(plan);
    ASSERT_TRUE(built) << built.error().message();
    const std::vector<sock_filter> prebuilt = prebuiltRefusalLogFilter(plan);
    ASSERT_EQ(prebuilt.size(), built->size());
    EXPECT_EQ(std::memcmp(prebuilt.data(), built->data(), prebuilt.size() * sizeof(sock_filter)), 0);
  }
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(10);
    if (installSeccompLogFilter(prebuiltRefusalLogFilter(policy::SeccompPlan{})) != 0) _exit(11);
    errno = 0;
    if (::syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0) != -1 || errno != EPERM) _exit(12);
    if (::syscall(SYS_unshare, CLONE_NEWUSER) != -1 || errno != EPERM) _exit(13);
    if (::getpid() <= 0) _exit(14);
    // clone3 with a too-small struct: EINVAL from the kernel, not ENOSYS/EPERM from a filter.
    if (::syscall(SYS_clone3, nullptr, 0) != -1 || errno != EINVAL) _exit(15);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace sv::tracer
