// RealPaths against realpath(3) on a tree of links made for the test: the
// same answers, whatever the order names are asked in.
#include "supervisor/cli/real_paths.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace sv::supervisor {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> libcRealPath(const std::string& p) {
  char* real = ::realpath(p.c_str(), nullptr);
  if (!real) return std::nullopt;
  std::string out = real;
  ::free(real);
  return out;
}

class RealPathsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sv-realpaths-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    fs::create_directories(root_ + "/home/.cargo/bin");
    fs::create_directories(root_ + "/opt/tool/bin");
    fs::create_directories(root_ + "/elsewhere/dir");
    touch("/home/.cargo/bin/rustup");
    touch("/opt/tool/bin/tool");
    touch("/elsewhere/y");
    link("rustup", "/home/.cargo/bin/cargo");                // same directory
    link("../../../opt/tool/bin/tool", "/home/.cargo/bin/rel");  // up and over
    link(root_ + "/opt/tool", "/home/tool-link");             // absolute, to a directory
    link(root_ + "/elsewhere/dir", "/home/sub");              // ".." after it leaves /elsewhere
    link("sub/../y", "/home/dotdot");                         // the kernel's "..", not the text's
    link("chain2", "/home/chain1");
    link("cargo-link/cargo", "/home/chain2");
    link(".cargo/bin", "/home/cargo-link");
    link("loop-b", "/home/loop-a");
    link("loop-a", "/home/loop-b");
    link("missing", "/home/dangling");
    touch("/home/file");
  }
  void TearDown() override { fs::remove_all(root_); }

  void touch(const std::string& rel) { std::ofstream(root_ + rel).put('x'); }
  void link(const std::string& target, const std::string& rel) {
    fs::create_symlink(target, root_ + rel);
  }

  std::string root_;
};

TEST_F(RealPathsTest, AnswersAsRealpathDoes) {
  const std::vector<std::string> names = {
      "/home/.cargo/bin/cargo", "/home/.cargo/bin/rel", "/home/tool-link/bin/tool",
      "/home/dotdot",           "/home/chain1",         "/home/loop-a",
      "/home/dangling",         "/home/file/x",         "/home/./sub/../y",
      "/home/.cargo/bin/rustup", "/home/nothing",       "/home/tool-link",
      "/home/sub/..",           "/home/.cargo/bin/../bin/cargo"};
  RealPaths known;
  for (int pass = 0; pass < 2; ++pass)  // the second from what the first remembered
    for (const std::string& name : names)
      EXPECT_EQ(known.of(root_ + name), libcRealPath(root_ + name)) << name << " pass " << pass;
  EXPECT_EQ(known.of(root_ + "/home/dotdot"), root_ + "/elsewhere/y");
  EXPECT_EQ(known.of(root_ + "/home/loop-a"), std::nullopt);
  EXPECT_EQ(known.of("relative/path"), std::nullopt);
  EXPECT_EQ(known.of("/"), "/");
}

}  // namespace
}  // namespace sv::supervisor
