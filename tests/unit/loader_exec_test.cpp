// isDynamicLoader and loaderProgramOf (supervisor/notify/loader_exec.h): which
// binaries are the dynamic loader, and which argument it will run.
#include "supervisor/notify/loader_exec.h"

#include <gtest/gtest.h>

namespace sv::supervisor {
namespace {

TEST(LoaderExec, KnowsTheLoadersByName) {
  for (const char* p : {"/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "/lib/ld-linux.so.2",
                        "/lib/ld-linux-aarch64.so.1", "/lib/ld-musl-x86_64.so.1", "/etc/ld.so",
                        "/lib64/ld64.so.2"})
    EXPECT_TRUE(isDynamicLoader(p)) << p;
  for (const char* p : {"/usr/bin/ld", "/usr/bin/ld.gold", "/usr/bin/ldd", "/usr/lib/libld.so",
                        "/usr/bin/ld-helper", "/ws/old-build"})
    EXPECT_FALSE(isDynamicLoader(p)) << p;
}

TEST(LoaderExec, FindsTheProgramPastTheOptions) {
  using V = std::vector<std::string>;
  EXPECT_EQ(loaderProgramOf(V{"ld.so", "./tool", "--help"}).index, 1u);
  EXPECT_EQ(loaderProgramOf(V{"ld.so", "--library-path", "/x", "--preload", "a.so", "--argv0",
                              "git", "/usr/bin/git", "status"})
                .index,
            7u);
  EXPECT_EQ(loaderProgramOf(V{"ld.so", "--verify", "/bin/true"}).index, 2u);
  EXPECT_EQ(loaderProgramOf(V{"ld.so", "--list", "--inhibit-cache", "/bin/true"}).index, 3u);
  // None: the loader only prints, or the option's value is missing.
  EXPECT_EQ(loaderProgramOf(V{"ld.so", "--help"}).index, 0u);
  EXPECT_EQ(loaderProgramOf(V{"ld.so"}).index, 0u);
  EXPECT_EQ(loaderProgramOf(V{"ld.so", "--library-path"}).index, 0u);
  EXPECT_TRUE(loaderProgramOf(V{"ld.so", "--help"}).error.empty());
}

TEST(LoaderExec, RefusesWhatItCannotBeSureOf) {
  using V = std::vector<std::string>;
  // No slash: glibc searches its library path for the name.
  auto bare = loaderProgramOf(V{"ld.so", "--library-path", "/ws", "tool"});
  EXPECT_NE(bare.error.find("name the program by a path (./tool)"), std::string::npos) << bare.error;
  auto unknown = loaderProgramOf(V{"ld.so", "--frobnicate", "./tool"});
  EXPECT_NE(unknown.error.find("--frobnicate"), std::string::npos) << unknown.error;
  // The value of an option is never taken for the program.
  EXPECT_EQ(loaderProgramOf(V{"ld.so", "--argv0", "./decoy", "./tool"}).index, 3u);
}

}  // namespace
}  // namespace sv::supervisor
