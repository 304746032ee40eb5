// supervise in a pid namespace of its own (`unshare --pid --fork`, a
// container's): the in-kernel exec re-check knows only the kernel's global
// pids, so it can't serve there (docs/enforcement.md, "The in-kernel exec
// re-check"). A policy with exec rules needs it: supervise refuses to start
// (125) and says why, where it used to run and kill every exec as never
// approved. Without exec rules the command runs, without the re-check.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/common/host_features.h"
#include "tests/common/run_command.h"

namespace sv {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSupervise = SV_SUPERVISE_BIN;
constexpr const char* kUnshare = "/usr/bin/unshare";

class PidNamespace : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = test::missingSessionFeature(kSupervise, 0); !why.empty())
      GTEST_SKIP() << why;
    if (::access(kUnshare, X_OK) != 0) GTEST_SKIP() << "needs " << kUnshare << " (util-linux)";
    dir_ = fs::temp_directory_path() / ("sv-pidns-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  // supervise [options] -- sh -c 'exit 3', as pid 1 of a new pid namespace.
  test::CommandResult runInNewPidNamespace(const std::vector<std::string>& options) {
    std::vector<std::string> argv = {kUnshare, "--pid", "--fork", "--mount-proc", kSupervise, "-q"};
    argv.insert(argv.end(), options.begin(), options.end());
    for (const char* a : {"--", "/bin/sh", "-c", "exit 3"}) argv.push_back(a);
    test::CommandOptions run;
    run.cwd = dir_.string();
    run.env = test::superviseEnvironment();
    return test::runCommand(argv, (dir_ / "run").string(), run);
  }

  fs::path dir_;
};

TEST_F(PidNamespace, WithExecRulesSuperviseRefusesToStartAndSaysWhy) {
  const std::string policy = (dir_ / "policy.json").string();
  std::ofstream(policy) << R"({"version": 1, "exec": {"deny": [{"path": "/usr/bin/touch",
      "id": "no-touch", "reason": "not here"}]}})";
  const test::CommandResult r = runInNewPidNamespace({"--policy", policy});
  EXPECT_EQ(r.status, 125) << r.describe();
  EXPECT_NE(r.err.find("run supervise in the initial pid namespace"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("killed exec"), std::string::npos) << r.err;
}

TEST_F(PidNamespace, WithoutExecRulesTheCommandRuns) {
  const test::CommandResult r = runInNewPidNamespace({});
  EXPECT_EQ(r.status, 3) << r.describe();
  EXPECT_EQ(r.err.find("killed exec"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sv
