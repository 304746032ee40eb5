// The seccomp filter in a forked child: denied syscalls, clone3 → ENOSYS,
// user namespaces, personality, and foreign ABIs killing the process.
#include "tracer/seccomp/seccomp_filter.h"

#include <asm/unistd.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/openat2.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "test_util.h"
#include "tests/common/host_features.h"

namespace sv::tracer {
namespace {

using testing::describeStatus;
using testing::runInChild;

// Installs the filter for `plan` in a child (listener closed: a notified
// syscall would fail with ENOSYS) and runs fn there.
template <typename Fn>
int runFiltered(const policy::SeccompPlan& plan, Fn&& fn) {
  auto prog = buildSeccompFilter(plan);
  if (!prog.ok()) {
    ADD_FAILURE() << prog.error().message();
    return -1;
  }
  return runInChild([&] {
    int listener = installSeccompFilter(*prog);
    if (listener < 0) return 100;
    close(listener);
    return fn();
  });
}

int errnoOf(long rc) { return rc == -1 ? errno : 0; }

TEST(SeccompFilterTest, BuildsNonEmptyProgram) {
  auto prog = buildSeccompFilter({});
  ASSERT_TRUE(prog.ok()) << prog.error().message();
  EXPECT_GT(prog->size(), 10u);
}

TEST(SeccompFilterTest, DeniedSyscallsFailWithEperm) {
  int status = runFiltered({}, [] {
    if (errnoOf(ptrace(PTRACE_TRACEME, 0, nullptr, nullptr)) != EPERM) return 1;
    io_uring_params params{};
    if (errnoOf(syscall(__NR_io_uring_setup, 1, &params)) != EPERM) return 2;
    if (errnoOf(syscall(__NR_bpf, 0, nullptr, 0)) != EPERM) return 3;
    if (errnoOf(syscall(__NR_mount, "none", "/mnt", "tmpfs", 0, nullptr)) != EPERM) return 4;
    if (errnoOf(syscall(__NR_unshare, CLONE_NEWUSER)) != EPERM) return 5;
    if (errnoOf(syscall(__NR_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)) != EPERM) return 6;
    if (errnoOf(syscall(__NR_sethostname, "x", 1)) != EPERM) return 7;
    if (errnoOf(syscall(__NR_personality, READ_IMPLIES_EXEC)) != EPERM) return 8;
    if (syscall(__NR_personality, 0xffffffffUL) < 0) return 9;  // query stays allowed
    if (syscall(__NR_personality, PER_LINUX) < 0) return 10;
    if (getpid() <= 0) return 11;  // ordinary syscalls allowed
    return 0;
  });
  EXPECT_CHILD_EXIT0(status);
}

TEST(SeccompFilterTest, Clone3FailsWithEnosys) {
  int status = runFiltered({}, [] {
    char args[88] = {};  // struct clone_args, version 2 size
    return errnoOf(syscall(__NR_clone3, args, sizeof(args))) == ENOSYS ? 0 : 1;
  });
  EXPECT_CHILD_EXIT0(status);
}

TEST(SeccompFilterTest, UserNamespacesAllowedWhenPlanSaysSo) {
  SV_REQUIRE_ROOT();  // unprivileged userns may be disabled by sysctl
  policy::SeccompPlan plan;
  plan.allow_user_namespaces = true;
  int status = runFiltered(plan, [] { return syscall(__NR_unshare, CLONE_NEWUSER) == 0 ? 0 : 1; });
  EXPECT_CHILD_EXIT0(status);
}

TEST(SeccompFilterTest, X32SyscallKillsProcess) {
  int status = runFiltered({}, [] {
    syscall(0x40000000 | 39);  // __X32_SYSCALL_BIT | getpid
    return 1;
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << describeStatus(status);
  EXPECT_EQ(WTERMSIG(status), SIGSYS);
}

// The library's own behaviour, without our arch guard: documents that
// libseccomp 2.5.4 sends x32 numbers to the bad-arch action by itself.
TEST(SeccompFilterTest, LibseccompAloneKillsX32) {
  int status = runInChild([] {
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx) return 2;
    if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) != 0) return 3;
    if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), __NR_bpf, 0) != 0) return 4;
    if (seccomp_load(ctx) != 0) return 5;
    syscall(0x40000000 | 39);
    return 1;
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << describeStatus(status);
  EXPECT_EQ(WTERMSIG(status), SIGSYS);
}

TEST(SeccompFilterTest, Int80KillsProcess) {
  if (!sv::test::int80RunsSyscalls())
    GTEST_SKIP() << "int 0x80 raises SIGSEGV here without any filter (no IA32 syscall entry)";
  int status = runFiltered({}, [] {
    long ret = 20;  // i386 getpid
    asm volatile("int $0x80" : "+a"(ret) : : "memory");
    return 1;
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << describeStatus(status);
  EXPECT_EQ(WTERMSIG(status), SIGSYS);
}

TEST(SeccompFilterTest, WithoutListenerNotifiedSyscallsFailButReadsWork) {
  // With the listener closed, a USER_NOTIF syscall fails with ENOSYS: this pins
  // which calls are notified without needing a supervisor.
  int status = runFiltered({}, [] {
    int fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 1;  // read-only open is not notified
    close(fd);
    struct stat st;
    if (stat("/etc/hostname", &st) != 0) return 2;  // stat family never notified
    if (errnoOf(open("/tmp/sv-never-created", O_WRONLY | O_CREAT, 0644)) != ENOSYS) return 3;
    if (errnoOf(mkdir("/tmp/sv-never-created-dir", 0755)) != ENOSYS) return 4;
    if (errnoOf(unlink("/tmp/sv-never-created")) != ENOSYS) return 5;
    if (errnoOf(syscall(452, AT_FDCWD, "/tmp", 0755, 0)) != ENOSYS) return 6;  // fchmodat2
    if (errnoOf(open("/tmp/sv-never", O_RDONLY | O_CREAT, 0644)) != ENOSYS) return 7;
    if (errnoOf(open("/tmp/sv-never", O_RDONLY | O_TRUNC)) != ENOSYS) return 8;
    if (errnoOf(open("/tmp", O_TMPFILE | O_WRONLY, 0600)) != ENOSYS) return 9;
    if (errnoOf(openat(AT_FDCWD, "/tmp/sv-never", O_RDWR)) != ENOSYS) return 10;
    open_how how{};
    how.flags = O_RDONLY;
    if (errnoOf(syscall(__NR_openat2, AT_FDCWD, "/etc/hostname", &how, sizeof(how))) != ENOSYS) {
      return 11;  // openat2 always notified: its flags are in memory
    }
    if (errnoOf(rename("/tmp/sv-a", "/tmp/sv-b")) != ENOSYS) return 12;
    if (errnoOf(chmod("/tmp/sv-never", 0600)) != ENOSYS) return 13;
    if (errnoOf(execl("/bin/true", "true", nullptr)) != ENOSYS) return 14;  // notify_exec
    return 0;
  });
  EXPECT_CHILD_EXIT0(status);
}

TEST(SeccompFilterTest, ExecNotNotifiedWhenPlanSaysSo) {
  policy::SeccompPlan plan;
  plan.notify_exec = false;
  int status = runFiltered(plan, [] {
    execl("/bin/true", "true", nullptr);
    return 1;
  });
  EXPECT_CHILD_EXIT0(status);
}

TEST(SeccompFilterTest, NotifyReadOpensCoversReadOnlyOpen) {
  policy::SeccompPlan plan;
  plan.notify_read_opens = true;
  int status = runFiltered(
      plan, [] { return errnoOf(open("/etc/hostname", O_RDONLY | O_CLOEXEC)) == ENOSYS ? 0 : 1; });
  EXPECT_CHILD_EXIT0(status);
}

// O_PATH opens stay in the kernel whatever else the flags say (the kernel
// drops them); O_TMPFILE beside O_PATH still creates a file and is notified.
TEST(SeccompFilterTest, OPathOpensAreNeverNotified) {
  for (bool read_opens : {true, false}) {
    policy::SeccompPlan plan;
    plan.notify_read_opens = read_opens;
    plan.notify_write_opens = true;
    int status = runFiltered(plan, [] {
      for (int extra : {0, O_WRONLY, O_RDWR, O_CREAT | O_TRUNC, O_NOFOLLOW | O_DIRECTORY}) {
        int fd = open("/tmp", O_PATH | O_CLOEXEC | extra, 0600);
        if (fd < 0) return 10 + extra % 10;
        close(fd);
        fd = openat(AT_FDCWD, "/tmp", O_PATH | O_CLOEXEC | extra, 0600);
        if (fd < 0) return 20 + extra % 10;
        close(fd);
      }
      if (errnoOf(open("/tmp", O_TMPFILE | O_PATH | O_RDWR | O_CLOEXEC, 0600)) != ENOSYS)
        return 30;
      if (errnoOf(openat(AT_FDCWD, "/tmp", O_TMPFILE | O_PATH | O_RDWR | O_CLOEXEC, 0600)) !=
          ENOSYS)
        return 31;
      if (errnoOf(openat(AT_FDCWD, "/tmp/x", O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) != ENOSYS)
        return 32;
      return 0;
    });
    EXPECT_CHILD_EXIT0(status) << "notify_read_opens=" << read_opens;
  }
}

}  // namespace
}  // namespace sv::tracer
