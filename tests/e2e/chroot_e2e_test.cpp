// supervise itself run chrooted: a `mount --rbind / R; chroot R` in a private
// mount namespace (as tools/vm/guest-init runs its jobs), on each floor and
// backend. Under the mount floor the command's namespace names our root R
// (docs/enforcement.md, "The mount-namespace floor"): readlink of its cwd
// says "R/tmp/.../ws". The supervisor must judge and emulate the names the
// command sees ("/tmp/.../ws/.env"), whichever way the path reaches it:
//  - relative to the cwd (the lexical fast path),
//  - through ".." (the component walk),
//  - relative to a dirfd (python3's dir_fd=).
// Each write is allowed or denied as without the chroot, lands in the right
// file, and its event names the file (and the process's cwd) without R.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/common/audit_events.h"
#include "tests/common/host_features.h"
#include "tests/common/run_command.h"

namespace sv::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kSupervise = SV_SUPERVISE_BIN;

struct Variant {
  const char* name;
  std::vector<std::string> env;  // SUPERVISE_* overrides
  bool needs_landlock;
};

const Variant kVariants[] = {
    {"landlock", {"SUPERVISE_BACKEND=host", "SUPERVISE_TEST_DISABLE="}, true},
    {"mountns", {"SUPERVISE_BACKEND=host", "SUPERVISE_TEST_DISABLE=landlock"}, false},
    {"ptrace_landlock", {"SUPERVISE_BACKEND=ptrace", "SUPERVISE_TEST_DISABLE="}, true},
    {"ptrace_mountns", {"SUPERVISE_BACKEND=ptrace", "SUPERVISE_TEST_DISABLE=landlock"}, false},
};

// Three writes that must land, three that must be refused, one line each:
// "RC <name> <exit status>".
constexpr const char* kScript = R"(
echo ok > out.txt; echo "RC out $?"
echo PWNED > .env; echo "RC env $?"
cd sub && { echo ok > ../up.txt; echo "RC up $?"; echo PWNED > ../.env.local; echo "RC envlocal $?"; cd ..; }
python3 -c '
import os, sys
d = os.open(".", os.O_RDONLY)
for name in ("dirfd.txt", ".env.production"):
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=d)
        os.write(fd, b"ok\n"); print("RC", name, 0)
    except OSError as e:
        print("RC", name, e.errno)
'
)";

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

class Chrooted : public testing::TestWithParam<Variant> {
 protected:
  void SetUp() override {
    if (std::string why = missingSessionFeature(kSupervise, 0); !why.empty()) GTEST_SKIP() << why;
    if (GetParam().needs_landlock && landlockAbi() == 0)
      GTEST_SKIP() << "needs Landlock: the kernel has none (not built, or not in lsm=)";
    for (const char* tool : {"/usr/bin/unshare", "/usr/sbin/chroot"})
      if (::access(tool, X_OK) != 0) GTEST_SKIP() << "needs " << tool;
    char tmpl[] = "/tmp/sv-chroot-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ws_ = dir_ + "/ws";
    new_root_ = dir_ + "/root";
    fs::create_directories(ws_ + "/sub");
    fs::create_directories(new_root_);
    for (const char* secret : {".env", ".env.local"}) writeFile(ws_ + "/" + secret, "SECRET\n");
  }
  void TearDown() override {
    if (dir_.empty()) return;
    // The rbind of / went with its namespace, so R is an empty directory
    // here. Were it not (a leak), a recursive remove would walk the whole
    // tree through it: then leave everything where it is.
    if (::rmdir(new_root_.c_str()) != 0) {
      ADD_FAILURE() << "not removing " << dir_ << ": " << new_root_ << " is not an empty directory";
      return;
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  static void writeFile(const std::string& path, const std::string& text) {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr) << path;
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }

  // supervise, chrooted at new_root_ (which shows the whole tree at the same
  // paths), with ws_ as its cwd, runs kScript; its audit goes to audit_.
  CommandResult run() {
    const std::string inner = "cd " + shellQuote(ws_) + " && exec " + shellQuote(kSupervise) +
                              " --audit-file " + shellQuote(audit_) + " -- bash -c " +
                              shellQuote(kScript);
    const std::string outer = "mount --rbind / " + shellQuote(new_root_) + " && exec chroot " +
                              shellQuote(new_root_) + " sh -c " + shellQuote(inner);
    CommandOptions options;
    options.env = superviseEnvironment(GetParam().env);
    return runCommand({"/usr/bin/unshare", "--mount", "--propagation", "private", "sh", "-c", outer},
                      dir_ + "/run", options);
  }

  std::string dir_, ws_, new_root_;
  std::string audit_ = "";
};

TEST_P(Chrooted, JudgesAndWritesTheNamesTheCommandSees) {
  audit_ = dir_ + "/audit.jsonl";
  const CommandResult r = run();
  ASSERT_EQ(r.status, 0) << r.describe();
  for (const char* ok : {"RC out 0\n", "RC up 0\n", "RC dirfd.txt 0\n"})
    EXPECT_NE(r.out.find(ok), std::string::npos) << ok << r.describe();
  for (const char* refused : {"RC env 1\n", "RC envlocal 1\n", "RC .env.production 13\n"})
    EXPECT_NE(r.out.find(refused), std::string::npos) << refused << r.describe();
  EXPECT_EQ(slurp(ws_ + "/out.txt"), "ok\n");
  EXPECT_EQ(slurp(ws_ + "/up.txt"), "ok\n");
  EXPECT_EQ(slurp(ws_ + "/dirfd.txt"), "ok\n");
  EXPECT_EQ(slurp(ws_ + "/.env"), "SECRET\n");
  EXPECT_EQ(slurp(ws_ + "/.env.local"), "SECRET\n");
  EXPECT_FALSE(fs::exists(ws_ + "/.env.production"));
  EXPECT_FALSE(fs::exists(new_root_ + ws_)) << "the chroot's bind leaked into our namespace";

  // Every refusal is an event naming the file the command named.
  std::vector<std::string> denied;
  const auto events = readAuditEvents(audit_);
  for (const auto& e : events) {
    const std::string dump = e.dump();
    EXPECT_EQ(dump.find(new_root_), std::string::npos) << "names the chroot: " << dump;
    if (e.value("decision", "") != "deny" || e.value("category", "") != "file") continue;
    denied.push_back(e["file"].value("path", ""));
    // ws or ws/sub: a process's cwd is cached for a while (ProcessCache).
    const std::string cwd = e["process"].value("cwd", "");
    EXPECT_TRUE(cwd == ws_ || cwd == ws_ + "/sub") << dump;
  }
  std::sort(denied.begin(), denied.end());
  EXPECT_EQ(denied, (std::vector<std::string>{ws_ + "/.env", ws_ + "/.env.local",
                                              ws_ + "/.env.production"}))
      << r.describe();
}

INSTANTIATE_TEST_SUITE_P(Floors, Chrooted, testing::ValuesIn(kVariants),
                         [](const testing::TestParamInfo<Variant>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace sv::test
