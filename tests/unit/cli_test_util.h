// Shared by the CLI unit tests: a fixture that runs each test in its own
// temporary working directory (config discovery and relative paths start
// there) and runs `supervise <args>` in-process with only the subcommands a
// test registers, capturing stdout, stderr and the exit code.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "supervisor/cli/commands.h"

namespace sv::supervisor {

using Registrar = void (*)(CLI::App&, CommandContext&);

class CliFixture : public ::testing::Test {
 protected:
  explicit CliFixture(std::vector<Registrar> registrars) : registrars_(std::move(registrars)) {}

  void SetUp() override {
    old_ = std::filesystem::current_path();
    dir_ = std::filesystem::temp_directory_path() / ("sv-cli-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    std::filesystem::current_path(dir_);
    for (const char* v : {"SUPERVISE_MODE", "SUPERVISE_NETWORK", "SUPERVISE_PRESET"}) ::unsetenv(v);
    // Config discovery must not find the developer's own policy.
    ::setenv("XDG_CONFIG_HOME", dir_.c_str(), 1);
  }
  void TearDown() override {
    std::filesystem::current_path(old_);
    std::filesystem::remove_all(dir_);
  }

  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }

  // `supervise <args>`: the exit code; a CLI11 parse error is the usage code.
  int run(const std::vector<std::string>& args, std::string* out = nullptr,
          std::string* err = nullptr) {
    CLI::App app{"test", "supervise"};
    app.require_subcommand(1);
    CommandContext ctx;
    for (Registrar r : registrars_) r(app, ctx);
    std::vector<const char*> argv = {"supervise"};
    for (const auto& a : args) argv.push_back(a.c_str());
    testing::internal::CaptureStdout();
    testing::internal::CaptureStderr();
    int rc;
    try {
      app.parse(static_cast<int>(argv.size()), argv.data());
      rc = ctx.exit_code;
    } catch (const CLI::ParseError&) {
      rc = kUsageExitCode;
    }
    std::string o = testing::internal::GetCapturedStdout();
    std::string e = testing::internal::GetCapturedStderr();
    if (out) *out = o;
    if (err) *err = e;
    return rc;
  }

  std::vector<Registrar> registrars_;
  std::filesystem::path old_, dir_;
};

}  // namespace sv::supervisor
