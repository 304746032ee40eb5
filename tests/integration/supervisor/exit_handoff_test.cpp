// handOffLastReferences(): the fds named outlive our own close of them
// until our exit, and no longer; nothing else of our fd table is held (a
// caller waiting for EOF on our stdout gets it at our exit).
#include "supervisor/session/exit_handoff.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "supervisor/session/clone_shared_vm.h"

namespace sv::supervisor {
namespace {

// Whether the read end `fd` sees its last writer gone within `ms`.
bool hangsUpWithin(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, ms) == 1 && (p.revents & POLLHUP);
}

TEST(ExitHandoff, TheFdsNamedAreDroppedAtOurExitAndNothingElseIsHeld) {
  if constexpr (!kCanShareVm)
    GTEST_SKIP() << "no child may share our memory in this build (sanitizers): "
                    "nothing is handed off";
  int kept[2], other[2], go[2];
  ASSERT_EQ(::pipe(kept), 0);
  ASSERT_EQ(::pipe(other), 0);
  ASSERT_EQ(::pipe(go), 0);
  // The process that hands off and exits: it holds the write ends of `kept`
  // and `other` (our stdout, say), and waits for a byte on `go`.
  const pid_t exiting = ::fork();
  ASSERT_GE(exiting, 0);
  if (exiting == 0) {
    ::close(kept[0]);
    ::close(other[0]);
    ::close(go[1]);
    handOffLastReferences({&kept[1], 1});
    ::close(kept[1]);  // not the last reference: the child holds one
    char byte;
    (void)::read(go[0], &byte, 1);
    ::_exit(0);
  }
  ::close(kept[1]);
  ::close(other[1]);
  ::close(go[0]);
  EXPECT_FALSE(hangsUpWithin(kept[0], 300)) << "the handed-off fd went before its process exited";
  EXPECT_FALSE(hangsUpWithin(other[0], 0)) << "the process itself still holds it";
  ASSERT_EQ(::write(go[1], "x", 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(exiting, &status, 0), exiting);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(hangsUpWithin(other[0], 5000)) << "an fd not handed off is held past the exit";
  EXPECT_TRUE(hangsUpWithin(kept[0], 5000)) << "the handed-off fd outlived the exit";
  for (int fd : {kept[0], other[0], go[1]}) ::close(fd);
}

}  // namespace
}  // namespace sv::supervisor
