// TargetUmask (supervisor/notify/target_umask.h): the command's start umask
// while its tree sets no other, each thread's own from then on.
#include "supervisor/notify/target_umask.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sv::supervisor {
namespace {

// This thread's umask is `mask` while one lives.
class UmaskOf {
 public:
  explicit UmaskOf(mode_t mask) : old_(::umask(mask)) {}
  ~UmaskOf() { ::umask(old_); }

 private:
  mode_t old_;
};

constexpr pid_t kNoSuchThread = 4194304 + 1;  // above the kernel's PID_MAX_LIMIT

TEST(TargetUmask, UnwatchedEachCreateReadsItsThreads) {
  UmaskOf mine(067);
  TargetUmask umask;
  EXPECT_EQ(umask.of(::gettid()), 067u);
  EXPECT_EQ(umask.of(kNoSuchThread), 022u);
}

TEST(TargetUmask, WatchedTheStartUmaskHoldsUntilTheTreeSetsAnother) {
  UmaskOf mine(077);
  TargetUmask umask;
  umask.watchFrom(027);
  EXPECT_EQ(umask.of(::gettid()), 027u) << "read although the tree set no other umask";
  umask.sawSet(01027);  // the kernel keeps the permission bits only: the same mask
  EXPECT_EQ(umask.of(::gettid()), 027u);
  umask.sawSet(022);
  EXPECT_EQ(umask.of(::gettid()), 077u) << "the start umask after the tree set another";
  umask.sawSet(027);  // back to the start in one process says nothing of the others
  EXPECT_EQ(umask.of(::gettid()), 077u);
  EXPECT_EQ(umask.of(kNoSuchThread), 022u);
}

}  // namespace
}  // namespace sv::supervisor
