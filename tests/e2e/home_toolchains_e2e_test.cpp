// The default preset on a developer's home (docs/policy.md, "Toolchains,
// caches and secrets"), through the real binary: a fake $HOME with a
// pyenv-style shim tree, an nvm-style node, a cargo/rustup pair and a
// ~/.local/bin tool linked into a venv elsewhere in $HOME (real programs
// symlinked from the system), package caches and credential files. Each tool
// runs, each cache write lands, each credential read and write fails with
// EACCES and is one deny event with its secret:* rule, and the rest of $HOME
// stays unreadable. Then the machine's own environment: `python3` from $PATH
// (a pyenv shim on this host) and /usr/bin/python3.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/common/run_command.h"
#include "tests/common/audit_events.h"
#include "tests/common/host_features.h"

namespace sv::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kSupervise = SV_SUPERVISE_BIN;

void writeFile(const std::string& path, const std::string& text, mode_t mode = 0644) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
  ::chmod(path.c_str(), mode);
}

void symlinkTo(const std::string& target, const std::string& link) {
  fs::create_directories(fs::path(link).parent_path());
  fs::create_symlink(target, link);
}

// The rule ids of the deny events on `path`.
std::vector<std::string> denyRules(const std::vector<json>& events, const std::string& path) {
  std::vector<std::string> out;
  for (const auto& e : events)
    if (e.value("decision", "") == "deny" && e.contains("file") &&
        e["file"].value("path", "") == path && e.value("errno", "") == "EACCES")
      out.push_back(e["rule"].value("id", ""));
  return out;
}

class HomeToolchains : public testing::Test {
 protected:
  void SetUp() override {
    if (std::string missing = missingSessionFeature(kSupervise); !missing.empty()) GTEST_SKIP() << missing;
    // Not under /tmp: that is a writable root of the preset, and the point
    // is a home that nothing but the derived rules opens.
    char tmpl[] = "/sv-home-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr) << std::strerror(errno);
    base_ = tmpl;
    home_ = base_ + "/home";
    ws_ = home_ + "/project";
    fs::create_directories(ws_);
  }
  void TearDown() override {
    std::error_code ec;
    if (!base_.empty()) fs::remove_all(base_, ec);
  }

  // pyenv: shims/python3 runs libexec/pyenv, which reads the version file and
  // runs that version's python3 (a link to the system one), as pyenv does.
  void makePyenv() {
    const std::string root = home_ + "/.pyenv";
    writeFile(root + "/shims/python3",
              "#!/bin/sh\nexec \"" + root + "/libexec/pyenv\" exec python3 \"$@\"\n", 0755);
    writeFile(root + "/libexec/pyenv",
              "#!/bin/sh\nshift; prog=$1; shift\nv=$(cat \"" + root + "/version\")\n"
              "exec \"" + root + "/versions/$v/bin/$prog\" \"$@\"\n",
              0755);
    writeFile(root + "/version", "3.99.0\n");
    symlinkTo("/usr/bin/python3", root + "/versions/3.99.0/bin/python3");
  }
  // nvm: PATH names one version's bin; the node there is the system's.
  void makeNvm() { symlinkTo("/usr/bin/node", home_ + "/.nvm/versions/node/v99.0.0/bin/node"); }
  // cargo in ~/.cargo/bin is a rustup proxy into ~/.rustup.
  void makeCargo() {
    writeFile(home_ + "/.cargo/bin/cargo",
              "#!/bin/sh\nexec \"" + home_ + "/.rustup/toolchains/stable/bin/cargo\" \"$@\"\n",
              0755);
    writeFile(home_ + "/.rustup/toolchains/stable/bin/cargo",
              "#!/bin/sh\necho \"cargo-fake $*\"\n", 0755);
  }
  // ~/.local/bin/tool links into a venv elsewhere in $HOME, whose data the
  // tool reads.
  void makeLocalTool() {
    const std::string venv = home_ + "/apps/tool-venv";
    writeFile(venv + "/bin/tool", "#!/bin/sh\ncat \"" + venv + "/share/data.txt\"\n", 0755);
    writeFile(venv + "/share/data.txt", "tool-data\n");
    symlinkTo(venv + "/bin/tool", home_ + "/.local/bin/tool");
  }

  CommandResult run(const std::string& script, const std::string& audit) {
    CommandOptions o;
    o.cwd = ws_;
    o.env = {"HOME=" + home_,
             "PATH=" + home_ + "/.pyenv/shims:" + home_ + "/.nvm/versions/node/v99.0.0/bin:" +
                 home_ + "/.cargo/bin:" + home_ + "/.local/bin:/usr/bin:/bin",
             "LANG=C.UTF-8"};
    return runCommand({kSupervise, "--audit-file", audit, "--", "sh", "-c", script},
                      base_ + "/out", o);
  }

  std::string base_, home_, ws_;
};

TEST_F(HomeToolchains, ToolsRunCachesWriteSecretsStayClosed) {
  if (::access("/usr/bin/node", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/node (tools/setup)";
  makePyenv();
  makeNvm();
  makeCargo();
  makeLocalTool();
  for (const char* cache : {"/.npm", "/.cache/pip", "/.cargo/registry"})
    fs::create_directories(home_ + cache);
  const std::map<std::string, std::string> secrets = {
      {"/.ssh/id_ed25519", "secret:ssh"},
      {"/.aws/credentials", "secret:aws"},
      {"/.npmrc", "secret:npmrc"},
      {"/.cargo/credentials.toml", "secret:cargo"},
  };
  for (const auto& [rel, _] : secrets) writeFile(home_ + rel, "TOKEN\n", 0600);
  writeFile(home_ + "/notes.txt", "private\n");

  std::string script =
      "python3 -c 'print(6*7)' && node -e 'console.log(43)' && cargo --version && tool || exit 9\n"
      "echo c > ~/.npm/entry && echo c > ~/.cache/pip/entry && echo c > ~/.cargo/registry/entry"
      " || exit 8\n";
  for (const auto& [rel, _] : secrets)
    script += "cat ~" + rel + " && exit 7; echo forged >> ~" + rel + " && exit 6\n";
  script += "cat ~/notes.txt && exit 5; exit 0\n";
  const std::string audit = base_ + "/audit.jsonl";
  CommandResult r = run(script, audit);
  ASSERT_FALSE(r.timed_out) << r.describe();
  ASSERT_EQ(r.status, 0) << r.describe();
  EXPECT_EQ(r.out, "42\n43\ncargo-fake --version\ntool-data\n") << r.describe();

  for (const char* cache : {"/.npm/entry", "/.cache/pip/entry", "/.cargo/registry/entry"})
    EXPECT_EQ(slurp(home_ + cache), "c\n") << cache;
  const auto events = readAuditEvents(audit);
  for (const auto& [rel, rule] : secrets) {
    SCOPED_TRACE(rel);
    EXPECT_EQ(slurp(home_ + rel), "TOKEN\n");
    // One denied read (Landlock: outside every root) and one denied write
    // (user-notify), both under the secret's rule.
    EXPECT_EQ(denyRules(events, home_ + rel), (std::vector<std::string>{rule, rule}));
    EXPECT_NE(r.err.find("(rule " + rule + ": "), std::string::npos) << r.describe();
  }
  EXPECT_EQ(denyRules(events, home_ + "/notes.txt"),
            (std::vector<std::string>{"default-deny-read"}));

  // The start event names the derived rules.
  ASSERT_FALSE(events.empty());
  const json& roots = events.front()["session"]["policy"]["filesystem"]["readableRoots"];
  std::map<std::string, std::string> ids;
  for (const auto& r : roots) ids[r.value("id", "")] = r.value("pattern", "");
  EXPECT_EQ(ids["toolchain:pyenv"], home_ + "/.pyenv");
  EXPECT_EQ(ids["toolchain:nvm"], home_ + "/.nvm");
  EXPECT_EQ(ids["toolchain:rustup"], home_ + "/.rustup");
  EXPECT_EQ(ids["toolchain:cargo"], home_ + "/.cargo/bin");
  EXPECT_EQ(ids["toolchain:local-bin"], home_ + "/.local/bin");
  EXPECT_EQ(ids["toolchain:path:" + home_ + "/apps/tool-venv"], home_ + "/apps/tool-venv");
}

// With the parts turned off, the same tools fail as before: the rules, not
// something else, are what opens them.
TEST_F(HomeToolchains, TurnedOffTheToolchainsAreClosedAgain) {
  makePyenv();
  fs::create_directories(home_ + "/.npm");
  const std::string audit = base_ + "/audit.jsonl";
  CommandOptions o;
  o.cwd = ws_;
  o.env = {"HOME=" + home_, "PATH=" + home_ + "/.pyenv/shims:/usr/bin:/bin"};
  CommandResult r = runCommand({kSupervise, "-o", "filesystem.toolchains=false", "-o",
                                "filesystem.caches=false", "--audit-file", audit, "--", "sh", "-c",
                                "~/.pyenv/shims/python3 -c 'print(1)' && exit 9; "
                                "echo c > ~/.npm/x && exit 8; "
                                "exit 0"},
                               base_ + "/out", o);
  ASSERT_EQ(r.status, 0) << r.describe();
  EXPECT_FALSE(fs::exists(home_ + "/.npm/x"));
  EXPECT_NE(r.err.find("denied exec of " + home_ + "/.pyenv/shims/python3 (rule default-deny-exec"),
            std::string::npos)
      << r.describe();
}

// This machine's own environment: python3 on PATH (a pyenv shim under /root
// here) and the system's python3, both under the default preset.
TEST(HomeToolchainsRealEnvironment, Python3FromPathAndFromTheSystem) {
  if (std::string missing = missingSessionFeature(kSupervise); !missing.empty()) GTEST_SKIP() << missing;
  char tmpl[] = "/tmp/sv-home-real-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  int ran = 0;
  for (std::string python : {std::string("python3"), std::string("/usr/bin/python3")}) {
    SCOPED_TRACE(python);
    if (python.front() == '/' && ::access(python.c_str(), X_OK) != 0) continue;
    CommandResult which = runCommand({"/bin/sh", "-c", "command -v " + python}, dir + "/which");
    if (which.status != 0) continue;  // not on this machine's PATH
    CommandOptions o;
    o.cwd = dir;
    CommandResult r =
        runCommand({kSupervise, "--", python, "-c", "print(6*7)"}, dir + "/out", o);
    EXPECT_EQ(r.status, 0) << which.out << r.describe();
    EXPECT_EQ(r.out, "42\n") << r.describe();
    ++ran;
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (ran == 0) GTEST_SKIP() << "no python3 on PATH or in /usr/bin";
}

}  // namespace
}  // namespace sv::test
