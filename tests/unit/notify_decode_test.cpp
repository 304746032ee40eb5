// decodeCall() (supervisor/notify/notify_decode.h): the user-notify decoder knows
// every syscall the seccomp plan can send it, reads each argument from the
// register the kernel does, and takes only the low half of an int argument.
#include "supervisor/notify/notify_decode.h"

#include <gtest/gtest.h>
#include <algorithm>
#include <linux/audit.h>
#include <sys/syscall.h>

#include "tracer/seccomp/seccomp_filter.h"

namespace sv::supervisor {
namespace {

seccomp_data request(int nr, std::initializer_list<uint64_t> args = {}) {
  seccomp_data d{};
  d.nr = nr;
  d.arch = AUDIT_ARCH_X86_64;
  int i = 0;
  for (uint64_t a : args) d.args[i++] = a;
  return d;
}

// Garbage in the upper half of a register holding an int.
constexpr uint64_t kHigh = 0xdead'beef'0000'0000ULL;

TEST(NotifyDecode, EverySyscallThePlanNotifiesIsDecoded) {
  policy::SeccompPlan all;
  all.notify_write_opens = all.notify_read_opens = all.notify_exec = true;
  all.notify_links_renames_and_attrs = true;
  all.notify_socket_families = true;
  const std::vector<int> nrs = tracer::notifiedSyscalls(all);
  EXPECT_EQ(nrs.size(), 42u) << "a syscall joined or left the plan: check decodeCall()";
  for (int nr : nrs) {
    const DecodedCall d = decodeCall(request(nr));
    EXPECT_NE(d.kind, CallKind::Unsupported) << "syscall " << nr << " is notified but unknown";
    EXPECT_STRNE(d.name, "") << nr;
  }
}

TEST(NotifyDecode, SocketArgumentsAreTheLowHalves) {
  const DecodedCall d = decodeCall(request(SYS_socket, {kHigh | 40, kHigh | 0x80001, kHigh | 9}));
  EXPECT_EQ(d.kind, CallKind::Socket);
  EXPECT_STREQ(d.name, "socket");
  EXPECT_EQ(d.family, 40);
  EXPECT_EQ(d.sock_type, 0x80001);
  EXPECT_EQ(d.protocol, 9);
  EXPECT_STREQ(decodeCall(request(SYS_socketpair, {1, 1, 0})).name, "socketpair");
}

// umask(2) is watched wherever creates are notified, never alone.
TEST(NotifyDecode, UmaskIsNotifiedWithTheCreatesAndCarriesItsMask) {
  policy::SeccompPlan plan;
  plan.notify_write_opens = false;
  plan.notify_links_renames_and_attrs = plan.notify_read_opens = true;
  auto nrs = tracer::notifiedSyscalls(plan);
  EXPECT_EQ(std::count(nrs.begin(), nrs.end(), SYS_umask), 0);
  plan.notify_write_opens = true;
  nrs = tracer::notifiedSyscalls(plan);
  EXPECT_EQ(std::count(nrs.begin(), nrs.end(), SYS_umask), 1);
  const DecodedCall d = decodeCall(request(SYS_umask, {kHigh | 027}));
  EXPECT_EQ(d.kind, CallKind::Umask);
  EXPECT_STREQ(d.name, "umask");
  EXPECT_EQ(d.mode, 027u);
}

TEST(NotifyDecode, OtherSyscallsAreUnsupported) {
  for (int nr : {SYS_read, SYS_write, SYS_ioctl, SYS_connect, SYS_stat, -1, 0x40000000 | 2}) {
    const DecodedCall d = decodeCall(request(nr));
    EXPECT_EQ(d.kind, CallKind::Unsupported) << nr;
    EXPECT_STREQ(d.name, "") << nr;
  }
}

TEST(NotifyDecode, IntArgumentsAreTheLowHalfOfTheirRegister) {
  const uint32_t cwd = static_cast<uint32_t>(AT_FDCWD);
  DecodedCall d = decodeCall(request(SYS_openat, {kHigh | cwd, 0x1000, kHigh | O_WRONLY, kHigh | 0644}));
  EXPECT_EQ(d.kind, CallKind::Open);
  EXPECT_EQ(d.dirfd, AT_FDCWD);
  EXPECT_EQ(d.path, 0x1000u);
  EXPECT_EQ(d.flags, O_WRONLY);
  EXPECT_EQ(d.mode, 0644u);
  d = decodeCall(request(SYS_fchown, {kHigh | 7, kHigh | 0xffffffffULL, kHigh | 5}));
  EXPECT_EQ(d.kind, CallKind::Chown);
  EXPECT_EQ(d.dirfd, 7);
  EXPECT_EQ(d.path, 0u);  // the fd itself
  EXPECT_EQ(d.uid, static_cast<uid_t>(-1));
  EXPECT_EQ(d.gid, 5u);
}

TEST(NotifyDecode, ArgumentPositions) {
  DecodedCall d = decodeCall(request(SYS_renameat2, {3, 0x10, 4, 0x20, RENAME_EXCHANGE}));
  EXPECT_EQ(d.kind, CallKind::Rename);
  EXPECT_EQ(d.dirfd, 3);
  EXPECT_EQ(d.path, 0x10u);
  EXPECT_EQ(d.dirfd2, 4);
  EXPECT_EQ(d.path2, 0x20u);
  EXPECT_EQ(d.flags, RENAME_EXCHANGE);

  d = decodeCall(request(SYS_symlinkat, {0x10, 9, 0x20}));
  EXPECT_EQ(d.kind, CallKind::Symlink);
  EXPECT_EQ(d.path, 0x10u);  // the target text
  EXPECT_EQ(d.dirfd2, 9);
  EXPECT_EQ(d.path2, 0x20u);

  d = decodeCall(request(SYS_execveat, {5, 0x10, 0x20, 0x30, AT_EMPTY_PATH}));
  EXPECT_EQ(d.kind, CallKind::Exec);
  EXPECT_EQ(d.dirfd, 5);
  EXPECT_EQ(d.arg, 0x20u);  // argv
  EXPECT_EQ(d.flags, AT_EMPTY_PATH);

  d = decodeCall(request(SYS_openat2, {5, 0x10, 0x20, 24}));
  EXPECT_EQ(d.kind, CallKind::Openat2);
  EXPECT_EQ(d.arg, 0x20u);  // struct open_how
  EXPECT_EQ(d.size, 24u);

  d = decodeCall(request(SYS_creat, {0x10, 0600}));
  EXPECT_EQ(d.flags, O_CREAT | O_WRONLY | O_TRUNC);
  EXPECT_EQ(d.mode, 0600u);

  d = decodeCall(request(SYS_rmdir, {0x10}));
  EXPECT_EQ(d.kind, CallKind::Remove);
  EXPECT_EQ(d.flags, AT_REMOVEDIR);

  d = decodeCall(request(SYS_lremovexattr, {0x10, 0x20}));
  EXPECT_EQ(d.kind, CallKind::Xattr);
  EXPECT_FALSE(d.follow);
  EXPECT_TRUE(d.remove);
  EXPECT_EQ(d.arg, 0x20u);  // the attribute's name
}

}  // namespace
}  // namespace sv::supervisor
