// openFollowingSymlinks(): the kernel follows plain symlinks for the exec
// fast path, but never a magic link, and never hands back a procfs object
// (whose "self" would have named the supervisor, not the target).
#include "supervisor/notify/target_path.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "test_util.h"

namespace sv::supervisor {
namespace {

using tracer::testing::TempDir;

class FollowingSymlinks : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    std::ofstream(dir_.path() + "/file") << "x";
    ASSERT_EQ(::symlink("file", (dir_.path() + "/link").c_str()), 0);
    ASSERT_EQ(::symlink("link", (dir_.path() + "/link2").c_str()), 0);
    ASSERT_EQ(::symlink("/dev/stdout", (dir_.path() + "/to-stdout").c_str()), 0);
    ASSERT_EQ(::symlink("/proc/self/status", (dir_.path() + "/to-status").c_str()), 0);
    ASSERT_EQ(::symlink("/proc/self/root/etc", (dir_.path() + "/to-root").c_str()), 0);
  }
  std::string at(const char* name) const { return dir_.path() + "/" + name; }

  TempDir dir_;
};

TEST_F(FollowingSymlinks, FollowsAChainToTheFile) {
  const int fd = openFollowingSymlinks(at("link2"), true);
  ASSERT_GE(fd, 0) << -fd;
  UniqueFd owned(fd);
  auto real = fdPath(fd);
  ASSERT_TRUE(real);
  char resolved[PATH_MAX];
  ASSERT_NE(::realpath(at("file").c_str(), resolved), nullptr);
  EXPECT_EQ(*real, resolved);
}

TEST_F(FollowingSymlinks, LastLinkItselfWithoutFollowFinal) {
  const int fd = openFollowingSymlinks(at("link"), false);
  ASSERT_GE(fd, 0) << -fd;
  UniqueFd owned(fd);
  struct stat st;
  ASSERT_EQ(::fstatat(fd, "", &st, AT_EMPTY_PATH), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
}

TEST_F(FollowingSymlinks, MagicLinksAreRefused) {
  EXPECT_EQ(openFollowingSymlinks(at("to-stdout"), true), -ELOOP);
  EXPECT_EQ(openFollowingSymlinks(at("to-root"), true), -ELOOP);
  EXPECT_EQ(openFollowingSymlinks("/proc/self/exe", true), -ELOOP);
}

TEST_F(FollowingSymlinks, ProcfsObjectsAreRefused) {
  EXPECT_EQ(openFollowingSymlinks(at("to-status"), true), -EXDEV);
  EXPECT_EQ(openFollowingSymlinks("/proc/self/status", true), -EXDEV);
}

TEST_F(FollowingSymlinks, MissingIsAnError) {
  EXPECT_EQ(openFollowingSymlinks(at("absent"), true), -ENOENT);
  EXPECT_EQ(openFollowingSymlinks("/", true), -EINVAL);  // the root itself: the walk has it
}

}  // namespace
}  // namespace sv::supervisor
