// Malformed input everywhere, fed to the real `supervise` binary: policy
// files (truncated, huge, endless, deeply nested, invalid UTF-8, NUL bytes,
// wrong shapes), `-o` values, SUPERVISE_* environment overrides and CLI
// arguments. Each must end in a clear one-line error naming the culprit and
// exit status 2, before anything is set up; never a crash, a hang or a
// silent run. No root needed: every case fails before the session starts.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/common/run_command.h"


namespace sv::faults {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSupervise = SV_SUPERVISE_BIN;
constexpr int kPolicyError = 2;

struct BadInput {
  const char* name;
  std::vector<std::string> args;  // "@P" stands for the policy file written from `policy`
  std::string policy;             // content of @P
  std::vector<std::string> env;   // extra NAME=value
  std::string expect;             // must appear on stderr
};

void PrintTo(const BadInput& c, std::ostream* os) { *os << c.name; }

std::string repeat(std::string_view s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

const std::string kRun = "/bin/true";

std::vector<BadInput> cases() {
  return {
      // Policy files.
      {"truncated", {"--policy", "@P", "--", kRun}, R"({"network": {"mode": "loc)", {},
       "syntax error"},
      {"truncated_validate", {"validate", "@P"}, R"({"filesystem": {"denyWrite": [".env")", {},
       "syntax error"},
      {"nested_arrays", {"--policy", "@P", "--", kRun}, repeat("[", 200000), {},
       "nested deeper than 64 levels"},
      {"nested_objects", {"validate", "@P"}, repeat(R"({"a":)", 5000) + "1" + repeat("}", 5000),
       {}, "nested deeper than 64 levels"},
      {"huge", {"--policy", "@P", "--", kRun}, "{" + std::string(2u << 20, ' ') + "}", {},
       "larger than 1 MiB"},
      {"endless", {"--policy", "/dev/zero", "--", kRun}, "", {}, "larger than 1 MiB"},
      {"invalid_utf8", {"--policy", "@P", "--", kRun}, "{\"name\": \"\xff\xfe\"}", {},
       "UTF-8"},
      {"nul_byte", {"validate", "@P"}, std::string("{\"name\": \"a\0b\"}", 15), {},
       "U+0000"},
      {"not_an_object", {"--policy", "@P", "--", kRun}, "[]", {}, "must be a JSON object"},
      {"wrong_type", {"--policy", "@P", "--", kRun}, R"({"network": 5})", {},
       "expected an object"},
      {"duplicate_key", {"validate", "@P"}, R"({"mode": "audit", "mode": "enforce"})", {},
       "duplicate key"},
      {"unknown_key", {"--policy", "@P", "--", kRun}, R"({"netwrok": {}})", {}, "netwrok"},
      {"bad_glob", {"--policy", "@P", "--", kRun}, R"({"filesystem": {"denyWrite": ["[a"]}})", {},
       "bad glob"},
      {"bad_cidr", {"--policy", "@P", "--", kRun},
       R"({"network": {"mode": "allowlist", "allow": ["10.0.0.0/33"]}})", {}, "prefix length 33"},
      {"empty_file", {"--policy", "@P", "--", kRun}, "", {}, "unexpected end of input"},
      {"directory", {"--policy", "/", "--", kRun}, "", {}, "Is a directory"},
      {"missing_file", {"--policy", "/nonexistent/policy.json", "--", kRun}, "", {},
       "No such file or directory"},
      // -o overrides.
      {"override_bad_value", {"-o", "network.mode=bogus", "--", kRun}, "", {}, "bogus"},
      {"override_no_equals", {"-o", "nokey", "--", kRun}, "", {}, "expected key=value"},
      {"override_empty_key", {"-o", "=x", "--", kRun}, "", {}, "expected key=value"},
      {"override_unknown_key", {"-o", "filesystem.nope=1", "--", kRun}, "", {}, "nope"},
      {"override_bad_address", {"-o", "network.allow+=999.1.1.1:80", "--", kRun}, "", {},
       "999.1.1.1"},
      {"override_bad_glob", {"-o", "filesystem.denyWrite+=[", "--", kRun}, "", {}, "bad glob"},
      // SUPERVISE_* environment.
      {"env_network", {"--", kRun}, "", {"SUPERVISE_NETWORK=bogus"}, "SUPERVISE_NETWORK"},
      {"env_mode", {"--", kRun}, "", {"SUPERVISE_MODE=xyz"}, "SUPERVISE_MODE"},
      {"env_preset", {"--", kRun}, "", {"SUPERVISE_PRESET=nope"}, "unknown preset"},
      // CLI arguments.
      {"unknown_flag", {"--bogus", "--", kRun}, "", {}, "--bogus"},
      {"audit_fd_negative", {"--audit-fd", "-1", "--", kRun}, "", {}, "--audit-fd"},
      {"audit_fd_stdio", {"--audit-fd", "1", "--", kRun}, "", {}, "--audit-fd"},
      {"audit_fd_text", {"--audit-fd", "abc", "--", kRun}, "", {}, "abc"},
      {"audit_format", {"--audit-format", "xml", "--", kRun}, "", {}, "xml"},
      {"preset", {"--preset", "nope", "--", kRun}, "", {}, "unknown preset"},
      {"workspace_missing", {"--workspace", "/nonexistent-workspace", "--", kRun}, "", {},
       "workspace /nonexistent-workspace: No such file or directory"},
      {"workspace_file", {"--workspace", "/etc/passwd", "--", kRun}, "", {},
       "not a directory"},
      {"workspace_too_long", {"--workspace", "/" + std::string(5000, 'a'), "--", kRun}, "", {},
       "File name too long"},
      {"no_command", {"--"}, "", {}, "no command given"},
  };
}

class MalformedInput : public testing::TestWithParam<BadInput> {
 protected:
  void SetUp() override {
    if (::access(kSupervise, X_OK) != 0) GTEST_SKIP() << "needs " << kSupervise;
    char tmpl[] = "/tmp/sv-faults-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string dir_;
};

TEST_P(MalformedInput, ClearErrorAndExitTwo) {
  const BadInput& c = GetParam();
  const std::string policy_path = dir_ + "/policy.json";
  std::ofstream(policy_path, std::ios::binary) << c.policy;
  std::vector<std::string> argv{kSupervise};
  for (const auto& a : c.args) argv.push_back(a == "@P" ? policy_path : a);

  // Our own environment without SUPERVISE_* settings but the variant's
  // (--backend under /ptrace), and a config home where discovery finds
  // nothing: only the case's input can be at fault.
  test::CommandOptions options;
  options.cwd = dir_;
  options.timeout = std::chrono::seconds(20);
  std::vector<std::string> overrides{"XDG_CONFIG_HOME=" + dir_};
  overrides.insert(overrides.end(), c.env.begin(), c.env.end());
  options.env = test::superviseEnvironment(overrides);

  const test::CommandResult r = test::runCommand(argv, dir_ + "/run", options);
  EXPECT_FALSE(r.timed_out) << r.describe();
  EXPECT_EQ(r.status, kPolicyError) << r.describe();
  EXPECT_NE(r.err.find(c.expect), std::string::npos)
      << "stderr should name the problem (\"" << c.expect << "\")\n" << r.describe();
  for (const char* crash : {"terminate called", "Assertion", "Segmentation", "AddressSanitizer",
                            "runtime error"})
    EXPECT_EQ(r.err.find(crash), std::string::npos) << r.describe();
}

INSTANTIATE_TEST_SUITE_P(Everywhere, MalformedInput, testing::ValuesIn(cases()),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace sv::faults
