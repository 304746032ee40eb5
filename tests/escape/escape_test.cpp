// The escape suite: attack programs (tests/escape/escape_*.c) run under the
// real `supervise` binary, every case under both the code-sandbox and the
// strict preset (test names end in code_sandbox / strict).
//
// Each test asserts three things: the attack program reports every attempt
// blocked (exit 0; 66 means one got through and names it on stdout), the
// protected thing is unchanged (.env's bytes, mode, owner, link count, mtime
// and xattrs; an outside process still alive; no packet at the test host),
// and the attempt is in the audit file when it reached user space. Attempts
// answered in the kernel (seccomp ERRNO/KILL, Landlock, missing capability)
// leave no audit line by design; docs/escape.md says which is which.
//
// Network cases run the command inside a network namespace the test creates,
// joined by a veth pair to a second namespace that plays the outside host
// (198.51.100.1); nothing here can reach a real address.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/landlock.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "tests/common/host_features.h"
#include "tests/common/run_command.h"
#include "tracer/bpf/bpf_probes.h"

namespace sv::escape {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kSupervise = SV_SUPERVISE_BIN;
constexpr const char* kProgs = SV_ESCAPE_PROGS_DIR;
constexpr const char* kIp = "/usr/sbin/ip";
constexpr int kBlocked = 0, kEscaped = 66;  // attack.h

using test::slurp;

// An attack program, copied once per test run into /tmp: the build tree may
// lie outside the default preset's readable (and so executable) roots, and
// the attack must be judged, not refused at exec.
// Landlock's scopes (ABI 6) keep signals and abstract unix sockets inside
// the session; where Landlock is missing (the mountns variant, or a kernel
// booted without it in lsm=) nothing does yet: a mount namespace can't
// express either (docs/enforcement.md, "The mount-namespace floor").
using test::withoutLandlock;
constexpr const char* kNoScopesWithoutLandlock =
    "known gap without Landlock: signal and abstract-socket scoping need Landlock ABI 6 (a PID "
    "and a network namespace would be the mount floor's answer; not built)";
// Why the scope cases can't hold here, or "".
std::string missingScopes() {
  if (withoutLandlock()) return kNoScopesWithoutLandlock;
  if (long abi = test::landlockAbi(); abi < 6)
    return "needs Landlock ABI 6 (signal and abstract-socket scopes): this kernel has ABI " +
           std::to_string(abi);
  return "";
}

// The copies' directory, removed when the test process ends: CTest runs each
// case in a process of its own, and a /tmp full of them slows every
// session's walk for protected names below it.
class ProgsDir {
 public:
  ProgsDir() {
    char tmpl[] = "/tmp/sv-escape-progs-XXXXXX";
    if (::mkdtemp(tmpl)) path_ = tmpl;
  }
  ~ProgsDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string prog(const std::string& name) {
  static const ProgsDir dir;
  const std::string copy = (dir.path().empty() ? "/tmp" : dir.path()) + "/" + name;
  std::error_code ec;
  if (!fs::exists(copy, ec)) fs::copy_file(std::string(kProgs) + "/" + name, copy, ec);
  return copy;
}

// The host features the suite needs; "" when all are there. Landlock is not
// one of them: without it the floor is a mount namespace, and the cases that
// need its scopes skip on their own (missingScopes()).
std::string missingFeature() { return test::missingSessionFeature(kSupervise, 0); }

// Everything about .env an attack could change.
std::string fileState(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return "absent";
  char xattrs[1024];
  ssize_t n = ::llistxattr(path.c_str(), xattrs, sizeof xattrs);
  std::ostringstream s;
  s << "content=" << json(slurp(path)).dump() << " mode=" << std::oct << st.st_mode << std::dec
    << " owner=" << st.st_uid << ":" << st.st_gid << " nlink=" << st.st_nlink
    << " ino=" << st.st_ino << " mtime=" << st.st_mtim.tv_sec << "." << st.st_mtim.tv_nsec
    << " xattrs=" << json(std::string(xattrs, n > 0 ? size_t(n) : 0)).dump();
  return s.str();
}

struct Outcome {
  int status = -1;  // exit code, or 128 + signal
  std::string out, err;
  std::vector<json> audit;
  std::string describe() const {
    std::string s = "status=" + std::to_string(status) + "\n--- stdout ---\n" + out +
                    "--- stderr ---\n" + err + "--- audit (non-allow) ---\n";
    for (const auto& e : audit)
      if (e.value("decision", "") != "allow") s += e.dump() + "\n";
    return s;
  }
  // Deny events of `category` whose rule id (if given) and target match.
  int denials(const std::string& category, const std::string& rule = "",
              const std::string& path_part = "") const {
    int n = 0;
    for (const auto& e : audit) {
      if (e.value("decision", "") != "deny" || e.value("category", "") != category) continue;
      if (!rule.empty() && e.value("/rule/id"_json_pointer, std::string()) != rule) continue;
      if (!path_part.empty() &&
          e.value("/file/path"_json_pointer, std::string()).find(path_part) == std::string::npos &&
          e.value("/exec/path"_json_pointer, std::string()).find(path_part) == std::string::npos)
        continue;
      ++n;
    }
    return n;
  }
};

// Runs argv in cwd (optionally inside a network namespace), at most 60 s;
// see tests/common/run_command.h.
Outcome runCommand(const std::vector<std::string>& argv, const std::string& cwd,
                   const std::string& out_base, const std::string& netns = "",
                   int pass_fd = -1) {
  test::CommandOptions options;
  options.cwd = cwd;
  options.netns = netns;
  options.pass_fd = pass_fd;
  const test::CommandResult r = test::runCommand(argv, out_base, options);
  return Outcome{r.status, r.out, (r.timed_out ? "(timed out)\n" : "") + r.err, {}};
}

// A process outside the session (same uid as the command) that the tests
// check is left alone: `cat` copying its stdin pipe into a file.
class Bystander {
 public:
  explicit Bystander(const std::string& sink) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      int out = ::open(sink.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(p[0], 0);
      ::dup2(out, 1);
      ::execl("/bin/cat", "cat", nullptr);
      ::_exit(127);
    }
    ::close(p[0]);
    write_end_ = p[1];
  }
  ~Bystander() {
    if (write_end_ >= 0) ::close(write_end_);
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  bool alive() const { return pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0; }

 private:
  pid_t pid_ = -1;
  int write_end_ = -1;
};

class EscapeTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string missing = missingFeature();
    if (!missing.empty()) GTEST_SKIP() << missing;
    char tmpl[] = "/tmp/sv-escape-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    ws_ = root_ + "/ws";
    ASSERT_EQ(::mkdir(ws_.c_str(), 0755), 0);
    std::ofstream(ws_ + "/.env") << "SECRET=hunter2\n";
    ASSERT_EQ(::chmod((ws_ + "/.env").c_str(), 0600), 0);
    const timespec old[2] = {{1000000000, 0}, {1000000000, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, (ws_ + "/.env").c_str(), old, 0), 0);
    // What the attacks need and strict's read-only workspace won't let them make.
    ASSERT_EQ(::mkdir((ws_ + "/sub").c_str(), 0755), 0);
    ASSERT_EQ(::mkdir((ws_ + "/d").c_str(), 0755), 0);
    std::ofstream(ws_ + "/evil") << "PWNED\n";
    env_before_ = fileState(ws_ + "/.env");
  }
  void TearDown() override {
    // rm, not fs::remove_all: long-path leaves a tree deeper than PATH_MAX.
    if (root_.empty()) return;
    pid_t pid = ::fork();
    if (pid == 0) {
      ::execl("/bin/rm", "rm", "-rf", "--one-file-system", root_.c_str(), nullptr);
      ::_exit(127);
    }
    ::waitpid(pid, nullptr, 0);
  }

  Outcome runExecRace(const std::string& mode, int rounds);

  // supervise --preset P [sv_args] --audit-file F -- cmd, in the workspace.
  Outcome supervise(const std::vector<std::string>& sv_args, const std::vector<std::string>& cmd,
                    const std::string& netns = "") {
    const std::string base = root_ + "/run" + std::to_string(++runs_);
    std::vector<std::string> argv{kSupervise, "--preset", preset_, "--audit-file", base + ".audit"};
    argv.insert(argv.end(), sv_args.begin(), sv_args.end());
    argv.push_back("--");
    argv.insert(argv.end(), cmd.begin(), cmd.end());
    Outcome o = runCommand(argv, ws_, base, netns, pass_fd_);
    std::ifstream audit(base + ".audit");
    for (std::string line; std::getline(audit, line);) {
      json e = json::parse(line, nullptr, false);
      EXPECT_FALSE(e.is_discarded()) << "audit line is not JSON: " << line;
      if (!e.is_discarded()) o.audit.push_back(std::move(e));
    }
    return o;
  }

  // True when every "ESCAPED" line of the attack names one of `known`: the
  // test then skips as a known escape (docs/escape.md), and any other
  // escape still fails it.
  static bool onlyKnownEscapes(const Outcome& o, std::initializer_list<const char*> known) {
    if (o.status != kEscaped) return false;
    std::istringstream lines(o.out);
    for (std::string line; std::getline(lines, line);) {
      if (!line.starts_with("ESCAPED")) continue;
      bool listed = false;
      for (const char* k : known) listed = listed || line.find(k) != std::string::npos;
      if (!listed) return false;
    }
    return true;
  }

  void expectEnvUnchanged() {
    EXPECT_EQ(fileState(ws_ + "/.env"), env_before_) << ".env was changed";
  }

  bool strict() const { return preset_ == "strict"; }

  std::string preset_ = "code-sandbox";
  std::string root_, ws_, env_before_;
  int runs_ = 0;
  int pass_fd_ = -1;  // given to every command run as fd 3 (see FdReceivedOverAnInheritedSocket)
};

// A case run once per preset: the parameter is the preset's name.
class PresetEscape : public EscapeTest, public testing::WithParamInterface<const char*> {
 protected:
  void SetUp() override {
    preset_ = GetParam();
    EscapeTest::SetUp();
  }
};

const char* const kPresets[] = {"code-sandbox", "strict"};

std::string presetTestName(const testing::TestParamInfo<const char*>& info) {
  std::string n = info.param;
  for (char& ch : n)
    if (ch == '-') ch = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Presets, PresetEscape, testing::ValuesIn(kPresets), presetTestName);

// ---------------------------------------------------------------------------
// Filesystem: routes to a protected file other than a plain open for write.

struct FsCase {
  const char* name;    // escape_fs CASE
  const char* preset;  // code-sandbox or strict
  // The audit must hold at least one deny of a path containing this (null:
  // every attempt is answered in the kernel, so no audit line is expected).
  const char* audited_path;
};

void PrintTo(const FsCase& c, std::ostream* os) { *os << c.preset << " " << c.name; }

class FsEscape : public EscapeTest, public testing::WithParamInterface<FsCase> {};

// The chain of 30 directories of 200 bytes that long-path descends (built
// unsupervised: its absolute path is longer than PATH_MAX).
void makeDeepChain(const std::string& top) {
  const std::string name(200, 'd');
  int dir = ::open(top.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  for (int i = 0; i < 30 && dir >= 0; ++i) {
    ::mkdirat(dir, name.c_str(), 0755);
    int next = ::openat(dir, name.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    ::close(dir);
    dir = next;
  }
  ASSERT_GE(dir, 0) << "deep chain: " << std::strerror(errno);
  ::close(dir);
}

TEST_P(FsEscape, ProtectedFileUnchanged) {
  const FsCase& c = GetParam();
  if (std::string(c.name) == "long-path") makeDeepChain(ws_);
  preset_ = c.preset;
  Outcome o = supervise({}, {prog("escape_fs"), c.name});
  EXPECT_EQ(slurp(ws_ + "/.env"), "SECRET=hunter2\n") << "the content changed";
  EXPECT_EQ(o.status, kBlocked) << o.describe();
  expectEnvUnchanged();
  if (c.audited_path) {
    EXPECT_GE(o.denials("file", "", c.audited_path), 1) << o.describe();
  }
}

// name, preset, audited path
const FsCase kFsCases[] = {
    {"hardlink", "code-sandbox", "/.env"},
    {"rename-onto", "code-sandbox", "/.env"},
    {"opath-reopen", "code-sandbox", "/.env"},
    {"proc-root", "code-sandbox", "/.env"},
    {"dotdot", "code-sandbox", "/.env"},
    {"long-path", "code-sandbox", "/.env"},
    {"non-utf8", "code-sandbox", "/.env."},
    {"openat2", "code-sandbox", "/.env"},
    {"vfork", "code-sandbox", "/.env"},
    {"fd-metadata", "code-sandbox", "/.env"},
    {"hardlink", "strict", "/.env"},
    {"rename-onto", "strict", "/.env"},
    {"opath-reopen", "strict", "/.env"},
    {"proc-root", "strict", "/.env"},
    {"dotdot", "strict", "/.env"},
    {"long-path", "strict", "/.env"},
    {"non-utf8", "strict", "/.env."},
    {"openat2", "strict", "/.env"},
    {"vfork", "strict", "/.env"},
    {"fd-metadata", "strict", "/.env"},
};

INSTANTIATE_TEST_SUITE_P(Escape, FsEscape, testing::ValuesIn(kFsCases),
                         [](const testing::TestParamInfo<FsCase>& info) {
                           std::string n = std::string(info.param.preset) + "_" + info.param.name;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

// A deny-read file read under another name (escape_fs read-names): no
// route reads it, no new name for it exists afterwards, and each refusal is
// in the audit with the read rule.
TEST_F(EscapeTest, ADenyReadFileIsNotReadUnderAnotherName) {
  std::ofstream(ws_ + "/secret.txt") << "TOP-SECRET\n";
  std::ofstream(ws_ + "/notes.txt") << "notes\n";
  ASSERT_EQ(::mkdir((ws_ + "/vault").c_str(), 0755), 0);
  std::ofstream(ws_ + "/vault/key") << "TOP-SECRET-KEY\n";
  std::ofstream(root_ + "/policy.json") << R"({"version": 1, "filesystem": {"denyRead": [
      {"path": "**/secret.txt", "id": "no-secret", "reason": "test secret"},
      {"path": "./vault/**", "id": "no-vault"}]}})";
  Outcome o = supervise({"--policy", root_ + "/policy.json"}, {prog("escape_fs"), "read-names"});
  EXPECT_EQ(o.status, kBlocked) << o.describe();
  EXPECT_EQ(o.out.find("TOP-SECRET"), std::string::npos) << o.describe();
  for (const char* name : {"copy", "copy2", "moved", "opened"})
    EXPECT_FALSE(fs::exists(ws_ + "/" + name)) << name << " exists\n" << o.describe();
  EXPECT_EQ(slurp(ws_ + "/secret.txt"), "TOP-SECRET\n");
  EXPECT_EQ(slurp(ws_ + "/notes.txt"), "notes\n");
  // Reopens, the link and the rename and exchange of secret.txt; vault's move.
  EXPECT_GE(o.denials("file", "no-secret", "/secret.txt"), 5) << o.describe();
  EXPECT_GE(o.denials("file", "no-vault", "/vault"), 2) << o.describe();
}

// Non-UTF-8 names reach the audit intact: the exact bytes in path_b64 (and
// an allowed create of such a name works: code-sandbox, a writable workspace).
TEST_F(EscapeTest, NonUtf8NameIsAuditedWithExactBytes) {
  Outcome o = supervise({}, {prog("escape_fs"), "non-utf8"});
  EXPECT_EQ(o.status, kBlocked) << o.describe();
  bool found = false;
  for (const auto& e : o.audit)
    if (e.value("decision", "") == "deny" && e.contains("file") && e["file"].contains("path_b64"))
      found = true;
  EXPECT_TRUE(found) << "no deny event with file.path_b64\n" << o.describe();
  EXPECT_TRUE(fs::exists(ws_ + "/ok-\xff\xfe.txt")) << "the allowed non-UTF-8 create failed";
  EXPECT_FALSE(fs::exists(ws_ + "/.env.\xff\xfe"));
}

// Moving a directory renames every path below it: `.git` moved away,
// written under its new name and moved back; the workspace (and its parent)
// moved from the writable /tmp and .env written there; RENAME_EXCHANGE of a
// directory holding a protected file with one that holds none, both ways,
// and with one whose unprotected "config" would become .git/config; a
// mode-0 directory holding a .env (the walk runs with the command's
// credentials and must refuse what it cannot list). Every
// backend judges the moved tree under both names (the notify handler's walk;
// under bpf-lsm the renames stay notified for it, docs/enforcement.md,
// "Directory moves"), so each move fails with EACCES and leaves a deny
// event of the handler's, enforced_by seccomp (ptrace under ptrace).
TEST_P(PresetEscape, DirectoryMovesOfProtectedPaths) {
  ASSERT_EQ(::mkdir((ws_ + "/.git").c_str(), 0755), 0);
  std::ofstream(ws_ + "/.git/config") << "[core]\n\tbare = false\n";
  ASSERT_EQ(::mkdir((ws_ + "/empty").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((ws_ + "/fake").c_str(), 0755), 0);
  std::ofstream(ws_ + "/fake/config") << "PWNED\n";
  ASSERT_EQ(::mkdir((ws_ + "/locked").c_str(), 0755), 0);
  std::ofstream(ws_ + "/locked/.env") << "LOCKED=1\n";
  ASSERT_EQ(::chmod((ws_ + "/locked").c_str(), 0), 0);
  const std::string config_before = fileState(ws_ + "/.git/config");
  const std::string locked_before = fileState(ws_ + "/locked/.env");

  Outcome o = supervise({}, {prog("escape_fs"), "dir-move"});
  EXPECT_EQ(o.status, kBlocked) << o.describe();
  expectEnvUnchanged();
  EXPECT_EQ(fileState(ws_ + "/.git/config"), config_before) << ".git/config was changed";
  EXPECT_TRUE(fs::exists(ws_ + "/fake/config")) << "fake/config left its directory";
  EXPECT_FALSE(fs::exists(ws_ + "2")) << "the workspace was moved";
  EXPECT_FALSE(fs::exists(root_ + "2")) << "the workspace's parent was moved";
  EXPECT_EQ(fileState(ws_ + "/locked/.env"), locked_before) << "locked/.env was changed";
  ::chmod((ws_ + "/locked").c_str(), 0755);
  for (const char* what :
       {"rename(.git, g)", "rename(workspace, workspace2)", "rename(workspace's parent, parent2)",
        "renameat2(.git, empty, RENAME_EXCHANGE)", "renameat2(empty, .git, RENAME_EXCHANGE)",
        "renameat2(fake, .git, RENAME_EXCHANGE)", "rename(locked, l2)"})
    EXPECT_NE(o.out.find(std::string("blocked ") + what), std::string::npos)
        << what << " was not refused\n" << o.describe();
  std::istringstream lines(o.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("blocked")) {
      EXPECT_NE(line.find("errno=13"), std::string::npos) << line;
    }
  }

  const std::string by = test::seccompStopDecider();
  int renames = 0;
  for (const auto& e : o.audit) {
    if (e.value("decision", "") != "deny" || e.value("operation", "") != "rename") continue;
    ++renames;
    EXPECT_EQ(e.value("enforced_by", ""), by) << e.dump();
    EXPECT_EQ(e.value("errno", ""), "EACCES") << e.dump();
  }
  EXPECT_GE(renames, 7) << "one deny event per refused move\n" << o.describe();
  if (!strict()) {
    // code-sandbox: the names pass (all under writable roots); the tree's
    // protected files are the reason, or a directory the walk cannot list.
    EXPECT_GE(o.denials("file", "deny-write-git-config", "/ws/.git/config"), 4) << o.describe();
    EXPECT_GE(o.denials("file", "deny-write-env", "/ws/.env"), 1) << o.describe();
    EXPECT_GE(o.denials("file", "rename-unreadable-directory", "/ws/locked"), 1) << o.describe();
  }
}

// /proc/PID/fd/N of a process outside the session: the command may not
// reopen another process's pipe (the supervisor, which opens on its behalf,
// could). The bystander's output must not receive anything.
TEST_P(PresetEscape, ForeignProcessFdReopenForWrite) {
  const std::string sink = root_ + "/bystander.out";
  Bystander cat(sink);
  ASSERT_TRUE(cat.alive());
  Outcome o = supervise({}, {prog("escape_fs"), "foreign-fd", std::to_string(cat.pid())});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(slurp(sink).find("PWNED"), std::string::npos) << "wrote into an outside pipe";
  EXPECT_EQ(o.status, kBlocked) << o.describe();
}

// ---------------------------------------------------------------------------
// exec of a binary the policy forbids.

// The symlink and the #! script escape_exec runs `bin` through, made here
// because strict's read-only workspace won't let the attack make them.
void stageExecRoutes(const std::string& ws, const std::string& bin) {
  ASSERT_EQ(::symlink(bin.c_str(), (ws + "/innocent").c_str()), 0);
  std::ofstream(ws + "/script.sh") << "#!" << bin << "\n";
  ASSERT_EQ(::chmod((ws + "/script.sh").c_str(), 0755), 0);
}

// The presets never execute from /dev/shm (writable, so the classic
// drop-and-run spot): Landlock EXECUTE is not granted there and the engine
// denies it. The #! route is stopped by Landlock alone (the kernel opens the
// interpreter itself: no syscall for the supervisor to see).
TEST_P(PresetEscape, ExecFromDevShmByEveryRoute) {
  char tmpl[] = "/dev/shm/sv-escape-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, bin = dir + "/tool";
  fs::copy_file("/bin/echo", bin);
  ::chmod(bin.c_str(), 0755);
  stageExecRoutes(ws_, bin);
  Outcome o = supervise({}, {prog("escape_exec"), bin});
  fs::remove_all(dir);
  EXPECT_EQ(o.status, kBlocked) << o.describe();
  EXPECT_EQ(o.out.find("RAN-DENIED"), std::string::npos) << o.describe();
  EXPECT_GE(o.denials("exec", "", "/tool"), 1) << o.describe();
}

// exec.deny inside an executable root: the engine is the only layer that
// knows (Landlock executes the whole workspace).
TEST_P(PresetEscape, ExecDenyGlobByEveryRoute) {
  fs::copy_file("/bin/echo", ws_ + "/denied-tool");
  stageExecRoutes(ws_, ws_ + "/denied-tool");
  std::ofstream(root_ + "/policy.json")
      << R"({"version": 1, "exec": {"deny": [{"path": "./denied-tool", "id": "no-tool"}]}})";
  Outcome o =
      supervise({"--policy", root_ + "/policy.json"}, {prog("escape_exec"), ws_ + "/denied-tool"});
  EXPECT_GE(o.denials("exec", "no-tool"), 1) << o.describe();
  EXPECT_EQ(o.out.find("RAN-DENIED"), std::string::npos) << o.describe();
  EXPECT_EQ(o.status, kBlocked) << o.describe();
}

// Races an exec.deny'd name against an allowed one of the same length in
// `mode` ("race": execve's path; "loader-race": the loader's program
// argument) for `rounds` rounds: every round the kernel would run the denied
// name must die before it prints a byte. Returns the outcome for the caller's
// own checks. SV_ESCAPE_RACE_ROUNDS caps `rounds` (a TCG guest runs an exec
// in about a second).
Outcome EscapeTest::runExecRace(const std::string& mode, int rounds) {
  if (const char* cap = std::getenv("SV_ESCAPE_RACE_ROUNDS"); cap && std::atoi(cap) > 0)
    rounds = std::min(rounds, std::atoi(cap));
  fs::copy_file("/bin/true", ws_ + "/tool-allowd");
  fs::copy_file("/bin/echo", ws_ + "/tool-denied");
  std::ofstream(root_ + "/policy.json")
      << R"({"version": 1, "exec": {"deny": [{"path": "./tool-denied", "id": "no-tool"}]}})";
  Outcome o = supervise({"--quiet", "--policy", root_ + "/policy.json"},
                        {prog("escape_exec"), mode, "./tool-allowd", "./tool-denied",
                         std::to_string(rounds)});
  const size_t done = o.out.find("race rounds=" + std::to_string(rounds) + " done");
  EXPECT_NE(done, std::string::npos) << o.describe();
  EXPECT_GE(o.denials("exec", "no-tool"), 1) << "the race never hit the denied name";
  EXPECT_EQ(o.out.find("RAN-DENIED"), std::string::npos) << o.describe();
  EXPECT_EQ(o.status, kBlocked) << o.describe();
  if (done != std::string::npos)
    std::printf("%s (%s): %s", mode.c_str(), preset_.c_str(), o.out.substr(done).c_str());
  return o;
}

// A thread flips execve's path between an allowed and an exec.deny'd name
// after the supervisor read it: the kernel re-reads it on CONTINUE. The
// in-kernel re-check at sched_process_exec must SIGKILL every round where the
// kernel exec'd the swapped-in name, before it prints a byte.
TEST_P(PresetEscape, ExecPathRaceAgainstExecDeny) {
  Outcome o = runExecRace("race", 1000);
  // Every round the kernel lost is a kill event from the re-check; how many
  // there are depends on scheduling, so it is reported, not required.
  int killed = 0;
  if (const size_t at = o.out.find("killed="); at != std::string::npos)
    std::sscanf(o.out.c_str() + at, "killed=%d", &killed);
  EXPECT_EQ(o.denials("exec", "exec-recheck"), killed) << o.describe();
  RecordProperty("rounds_killed_by_recheck", killed);
}

// A tree that may write and run files brings its own copy of a denied
// binary: an exec.deny list names paths and cannot stop it (the copy, a copy
// of the loader running it). An exec.allow list can: writable roots are not
// executable then, by any route (docs/policy.md, "What an exec deny list
// cannot stop").
TEST_F(EscapeTest, ByoCopyIsStoppedByAnAllowListOnly) {
  preset_ = "code-sandbox";
  const std::string loader = fs::canonical("/lib64/ld-linux-x86-64.so.2").string();
  fs::copy_file("/usr/bin/echo", ws_ + "/mycopy");
  fs::copy_file(loader, ws_ + "/myld");
  ::chmod((ws_ + "/myld").c_str(), 0755);
  std::ofstream(root_ + "/deny.json") << R"({"version": 1, "exec": {"deny": [
      {"path": "/usr/bin/echo", "id": "no-echo", "reason": "echo is denied"}]}})";
  // The deny list holds for the path, and by the loader...
  Outcome direct = supervise({"--policy", root_ + "/deny.json"}, {"/usr/bin/echo", "RAN-DENIED"});
  EXPECT_NE(direct.status, 0) << direct.describe();
  EXPECT_GE(direct.denials("exec", "no-echo"), 1) << direct.describe();
  Outcome loaded =
      supervise({"--policy", root_ + "/deny.json"}, {loader, "/usr/bin/echo", "RAN-DENIED"});
  EXPECT_EQ(loaded.out.find("RAN-DENIED"), std::string::npos) << loaded.describe();
  EXPECT_GE(loaded.denials("exec", "no-echo"), 1) << loaded.describe();
  // ...but not for a copy: the documented limit of a deny list.
  Outcome copy = supervise({"--policy", root_ + "/deny.json"}, {ws_ + "/mycopy", "RAN-COPY"});
  EXPECT_EQ(copy.out, "RAN-COPY\n") << copy.describe();

  // An allow list: nothing written in the workspace runs, by any route.
  if (withoutLandlock())
    GTEST_SKIP() << "known gap of the mount floor: an exec.allow directory nested in a writable "
                    "root (the attack program's, under /tmp) is not mounted executable, so the "
                    "allowed program itself is refused (fails closed; docs/enforcement.md)";
  const std::string progs = fs::path(prog("escape_exec")).parent_path().string();
  std::ofstream(root_ + "/allow.json")
      << R"({"version": 1, "exec": {"allow": ["/usr/bin/**", "/bin/**", "/usr/lib/**", ")"
      << progs << R"(/**"]}})";
  Outcome routes =
      supervise({"--policy", root_ + "/allow.json"}, {prog("escape_exec"), ws_ + "/mycopy"});
  EXPECT_EQ(routes.status, kBlocked) << routes.describe();
  EXPECT_EQ(routes.out.find("RAN-DENIED"), std::string::npos) << routes.describe();
  Outcome own_loader = supervise({"--policy", root_ + "/allow.json"},
                                 {"/bin/sh", "-c", ws_ + "/myld " + ws_ + "/mycopy RAN-DENIED"});
  EXPECT_NE(own_loader.status, 0) << own_loader.describe();
  EXPECT_EQ(own_loader.out.find("RAN-DENIED"), std::string::npos) << own_loader.describe();
  Outcome system_loader =
      supervise({"--policy", root_ + "/allow.json"}, {loader, ws_ + "/mycopy", "RAN-DENIED"});
  EXPECT_NE(system_loader.status, 0) << system_loader.describe();
  EXPECT_EQ(system_loader.out.find("RAN-DENIED"), std::string::npos) << system_loader.describe();
  // Allowed programs still run, the loader's included.
  Outcome fine = supervise({"--policy", root_ + "/allow.json"}, {loader, "/usr/bin/echo", "ok"});
  EXPECT_EQ(fine.out, "ok\n") << fine.describe();
}

// A binfmt_misc handler whose interpreter is a denied program: for a file
// the exec rules allow by its path, the kernel runs the interpreter itself.
// The notify handler does not judge binfmt_misc interpreters
// (docs/enforcement.md): the exec re-check kills the exec instead (fail
// closed) and the denied program never runs. The handler is host-wide for
// the test's few seconds: a name and extension of its own, removed at the end.
TEST_F(EscapeTest, BinfmtMiscHandlerNamingADeniedProgramNeverRunsIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (a binfmt_misc registration)";
  // Mounted where systemd mounts it on most hosts, and left mounted: the
  // same test under another backend may be running beside this one.
  const std::string binfmt = "/proc/sys/fs/binfmt_misc";
  if (!fs::exists(binfmt + "/register") &&
      ::mount("binfmt_misc", binfmt.c_str(), "binfmt_misc", 0, nullptr) != 0 && errno != EBUSY)
    GTEST_SKIP() << "binfmt_misc cannot be mounted here: " << std::strerror(errno);
  const std::string name = "svescape" + std::to_string(::getpid());
  struct Registration {
    std::string entry;
    ~Registration() { std::ofstream(entry) << "-1"; }  // removes the handler
  } registration{binfmt + "/" + name};
  // :name:E::extension::interpreter:flags — files named *.<name> run echo.
  std::ofstream(binfmt + "/register") << ":" << name << ":E::" << name << "::/usr/bin/echo:";
  ASSERT_TRUE(fs::exists(registration.entry)) << "the handler was not registered";
  const std::string file = ws_ + "/payload." + name;
  std::ofstream(file) << "not a program\n";
  ::chmod(file.c_str(), 0755);
  // Natively the handler runs echo, which prints the file's name.
  auto native = runCommand({file}, ws_, root_ + "/native");
  ASSERT_NE(native.out.find(file), std::string::npos) << native.describe();

  std::ofstream(root_ + "/deny.json") << R"({"version": 1, "exec": {"deny": [
      {"path": "/usr/bin/echo", "id": "no-echo", "reason": "echo is denied"}]}})";
  Outcome o = supervise({"--policy", root_ + "/deny.json"}, {file});
  EXPECT_EQ(o.out.find(file), std::string::npos) << "the denied interpreter ran\n" << o.describe();
  // Killed by the re-check (the session ran: it is not a refusal to start).
  EXPECT_EQ(o.status, 128 + SIGKILL) << o.describe();
  EXPECT_GE(o.denials("exec", "exec-recheck"), 1) << o.describe();
}

// The dynamic loader run as a program names the program it maps in argv:
// a thread flips that argument between an allowed and an exec.deny'd name
// after the supervisor read it. The whole argv is pinned by the exec
// re-check (bpf: a hash of the new image's argv area; ptrace: its cmdline
// at the exec stop): every round that loaded the swapped argv dies before
// the loader runs, and the denied program never prints.
TEST_P(PresetEscape, LoaderArgumentRaceAgainstExecDeny) { runExecRace("loader-race", 300); }

// ---------------------------------------------------------------------------
// Process, ABI and privilege cases: all answered in the kernel.

// (preset, escape_proc case)
class ProcEscape : public EscapeTest,
                   public testing::WithParamInterface<std::tuple<const char*, const char*>> {};

TEST_P(ProcEscape, Blocked) {
  preset_ = std::get<0>(GetParam());
  Outcome o = supervise({}, {prog("escape_proc"), std::get<1>(GetParam())});
  EXPECT_EQ(o.status, kBlocked) << o.describe();
  EXPECT_EQ(o.out.find("ESCAPED"), std::string::npos) << o.describe();
  expectEnvUnchanged();
}

INSTANTIATE_TEST_SUITE_P(
    Escape, ProcEscape,
    testing::Combine(testing::ValuesIn(kPresets),
                     testing::Values("io-uring", "namespaces", "ptrace", "handles")),
    [](const testing::TestParamInfo<ProcEscape::ParamType>& info) {
      std::string n = std::string(std::get<0>(info.param)) + "_" + std::get<1>(info.param);
      for (char& ch : n)
        if (ch == '-') ch = '_';
      return n;
    });

// The foreign-ABI children die by SIGSYS, the seccomp filter's kill (int
// 0x80 by SIGSEGV where the host has no i386 syscall entry at all).
TEST_P(PresetEscape, ForeignAbiIsKilledBySeccomp) {
  Outcome o = supervise({}, {prog("escape_proc"), "foreign-abi"});
  EXPECT_EQ(o.status, kBlocked) << o.describe();
  const char* int80 = sv::test::int80RunsSyscalls() ? "int 0x80 (i386 getpid) signal=31"
                                                     : "int 0x80 (i386 getpid) signal=11";
  EXPECT_NE(o.out.find(int80), std::string::npos) << o.describe();
  EXPECT_NE(o.out.find("x32 getpid signal=31"), std::string::npos) << o.describe();
}

// The supervisor and an outside process of the same uid can't be signalled
// (Landlock signal scoping); the outside one is still alive afterwards.
TEST_P(PresetEscape, SignalsOutsideTheSession) {
  if (std::string why = missingScopes(); !why.empty()) GTEST_SKIP() << why;
  Bystander outside(root_ + "/bystander.out");
  Outcome o = supervise({}, {prog("escape_proc"), "signals", std::to_string(outside.pid())});
  EXPECT_EQ(o.status, kBlocked) << o.describe();
  EXPECT_TRUE(outside.alive()) << "the outside process was killed";
}

// A command started as root keeps no capability. Run in a network namespace
// of its own, so a netlink change that did get through would harm nothing.
TEST_P(PresetEscape, RootCommandHasNoCapabilities) {
  if (::access(kIp, X_OK) != 0) GTEST_SKIP() << "needs iproute2: no " << kIp;
  const std::string ns = "sv-esc-caps-" + std::to_string(::getpid());
  std::ofstream(ws_ + "/owned.txt");  // the chown target (strict can't create it)
  ASSERT_EQ(runCommand({kIp, "netns", "add", ns}, root_, root_ + "/ip").status, 0);
  Outcome o = supervise({}, {prog("escape_proc"), "capabilities"}, "/run/netns/" + ns);
  runCommand({kIp, "netns", "del", ns}, root_, root_ + "/ip");
  EXPECT_EQ(o.status, kBlocked) << o.describe();
  struct stat st;
  if (::stat((ws_ + "/owned.txt").c_str(), &st) == 0) {
    EXPECT_EQ(st.st_uid, 0u);
  }
  EXPECT_FALSE(fs::exists(ws_ + "/mem"));
}

// A command that is not root runs a set-user-ID-root binary: no_new_privs
// makes the kernel ignore the bit, so its euid stays. The policy keeps
// CAP_SETUID/CAP_SETGID only so the command can become nobody itself.
TEST_P(PresetEscape, SetuidBinaryGivesANonRootCommandNothing) {
  const fs::path progs = fs::path(prog("escape_exec")).parent_path();
  const std::string suid = (progs / "escape_exec-suid").string();
  std::error_code ec;
  fs::copy_file(prog("escape_exec"), suid, fs::copy_options::overwrite_existing, ec);
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_EQ(::chown(suid.c_str(), 0, 0), 0);
  ASSERT_EQ(::chmod(suid.c_str(), 04755), 0);
  ASSERT_EQ(::chmod(progs.c_str(), 0755), 0);  // nobody must reach it
  // Control: unsupervised, the same steps end with euid 0.
  Outcome control = runCommand({prog("escape_exec"), "setuid-nonroot", suid}, "/",
                               root_ + "/control");
  ASSERT_EQ(control.status, kEscaped) << "control: the set-user-ID bit works here\n"
                                      << control.describe();
  Outcome o = supervise({"-o", R"(capabilities.keep=["CAP_SETUID","CAP_SETGID"])"},
                        {prog("escape_exec"), "setuid-nonroot", suid});
  EXPECT_EQ(o.status, kBlocked) << o.describe();
  EXPECT_NE(o.out.find("euid=65534"), std::string::npos) << o.describe();
}

// The caller hands the command a socket (fd 3) and, over it, a read-only fd
// of .env: what the caller gives is the caller's choice, but the command
// must not turn it into write access (reopen through /proc, metadata,
// truncation, a hard link to the file).
TEST_P(PresetEscape, FdReceivedOverAnInheritedSocket) {
  auto offer = [this](int sock) {
    int env = ::open((ws_ + "/.env").c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(env, 0);
    char data = 'x';
    iovec iov{&data, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &env, sizeof env);
    ASSERT_EQ(::sendmsg(sock, &msg, 0), 1);
    ::close(env);
  };
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  pass_fd_ = pair[1];
  // Control: unsupervised, a received read-only fd reopens for write.
  offer(pair[0]);
  Outcome control = runCommand({prog("escape_fs"), "received-fd"}, ws_, root_ + "/control", "",
                               pass_fd_);
  ASSERT_EQ(control.status, kEscaped) << "control run\n" << control.describe();
  std::ofstream(ws_ + "/.env", std::ios::trunc) << "SECRET=hunter2\n";  // the control wrote it
  fs::remove(ws_ + "/stolen");
  ASSERT_EQ(::chmod((ws_ + "/.env").c_str(), 0600), 0);
  const timespec old[2] = {{1000000000, 0}, {1000000000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, (ws_ + "/.env").c_str(), old, 0), 0);
  env_before_ = fileState(ws_ + "/.env");

  offer(pair[0]);
  Outcome o = supervise({}, {prog("escape_fs"), "received-fd"});
  ::close(pair[0]);
  ::close(pair[1]);
  pass_fd_ = -1;
  EXPECT_EQ(o.status, kBlocked) << o.describe();
  expectEnvUnchanged();
  EXPECT_GE(o.denials("file", "", "/.env"), 1) << o.describe();
}

// A fork bomb is bounded by pids.max: the session cgroup's, or on hybrid hosts the
// session's v1 pids cgroup (read, not bombed).
TEST_P(PresetEscape, ForkBombIsBoundedByPidsMax) {
  Outcome o = supervise({}, {prog("escape_proc"), "pids-limit"});
  if (o.status == kEscaped && o.out.find("no pids limit") != std::string::npos)
    GTEST_SKIP() << "known gap on this host: no pids controller for the session (not delegated "
                    "to its cgroup2 parent, no v1 pids hierarchy): "
                 << o.out;
  EXPECT_EQ(o.status, kBlocked) << o.describe();
  // The bomb itself ran into the limit: fork failed with EAGAIN below 4096.
  std::printf("%s", o.out.c_str());
  EXPECT_NE(o.out.find("blocked fork bomb after"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("errno=11"), std::string::npos) << o.out;
}

// ---------------------------------------------------------------------------
// Network.

// Two namespaces joined by a veth pair: the command's side (198.51.100.2)
// and a test host (198.51.100.1) with a TCP and a UDP listener. No default
// route: nothing can leave the pair.
class NetEscape : public PresetEscape {
 protected:
  void SetUp() override {
    PresetEscape::SetUp();
    if (IsSkipped()) return;
    if (::access(kIp, X_OK) != 0) GTEST_SKIP() << "needs iproute2: no " << kIp;
    const std::string id = std::to_string(::getpid());
    side_ = "sv-esc-" + id;
    host_ = "sv-esc-" + id + "-h";
    const std::string va = "svx" + id + "a", vh = "svx" + id + "h";
    for (const auto& step : std::vector<std::vector<std::string>>{
             {"netns", "add", side_},
             {"netns", "add", host_},
             {"link", "add", va, "type", "veth", "peer", "name", vh},
             {"link", "set", va, "netns", side_},
             {"link", "set", vh, "netns", host_},
             {"-n", side_, "addr", "add", "198.51.100.2/24", "dev", va},
             {"-n", side_, "link", "set", va, "up"},
             {"-n", side_, "link", "set", "lo", "up"},
             {"-n", host_, "addr", "add", "198.51.100.1/24", "dev", vh},
             {"-n", host_, "link", "set", vh, "up"}}) {
      std::vector<std::string> argv{kIp};
      argv.insert(argv.end(), step.begin(), step.end());
      Outcome r = runCommand(argv, root_, root_ + "/ip");
      ASSERT_EQ(r.status, 0) << r.describe();
    }
    // The listeners live in the host namespace: setns is per thread, so do
    // it in a helper thread and keep the sockets.
    std::thread([this] {
      int nfd = ::open(("/run/netns/" + host_).c_str(), O_RDONLY | O_CLOEXEC);
      if (nfd < 0 || ::setns(nfd, CLONE_NEWNET) != 0) return;
      ::close(nfd);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(4242);
      ::inet_pton(AF_INET, "198.51.100.1", &a.sin_addr);
      tcp_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      udp_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      int one = 1;
      ::setsockopt(tcp_, IPPROTO_TCP, 23 /* TCP_FASTOPEN */, &one, sizeof one);
      if (::bind(tcp_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(tcp_, 8) != 0 ||
          ::bind(udp_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
        tcp_ = -1;
    }).join();
    ASSERT_GE(tcp_, 0) << "test host listeners";
  }
  void TearDown() override {
    if (tcp_ >= 0) ::close(tcp_);
    if (udp_ >= 0) ::close(udp_);
    for (const auto& ns : {side_, host_})
      if (!ns.empty()) runCommand({kIp, "netns", "del", ns}, root_, root_ + "/ip");
    EscapeTest::TearDown();
  }

  // Everything that reached the test host: accepted connections and datagrams.
  std::string received() {
    std::string got;
    char buf[256];
    for (int c; (c = ::accept4(tcp_, nullptr, nullptr, SOCK_CLOEXEC)) >= 0; ::close(c)) {
      got += "[tcp connection]";
      pollfd p{c, POLLIN, 0};
      if (::poll(&p, 1, 200) > 0) {
        ssize_t n = ::read(c, buf, sizeof buf);
        if (n > 0) got.append(buf, size_t(n));
      }
    }
    for (ssize_t n; (n = ::recv(udp_, buf, sizeof buf, 0)) >= 0;) got.append(buf, size_t(n));
    return got;
  }

  // Control: the test host is reachable unsupervised, so a failure is the policy's.
  void controlReachable() {
    Outcome r = runCommand({prog("escape_net"), "udp", "198.51.100.1", "4242"}, ws_,
                           root_ + "/control", "/run/netns/" + side_);
    ASSERT_EQ(r.status, kEscaped) << "control run could not reach the test host\n" << r.describe();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_NE(received().find("PWNED1"), std::string::npos);
  }

  // code-sandbox lets the attack make its sockets (and connect UDP to
  // loopback), so every variant is tried and its send or connect denied;
  // strict (network.mode none) refuses each socket already, one denial each.
  void expectNetworkDenials(const Outcome& o, int sandbox_min, int strict_sockets) {
    if (strict()) {
      EXPECT_GE(o.denials("network"), strict_sockets) << o.describe();
      return;
    }
    EXPECT_EQ(o.out.find("not tried"), std::string::npos) << o.describe();
    EXPECT_GE(o.denials("network"), sandbox_min) << o.describe();
  }

  std::string side_, host_;
  int tcp_ = -1, udp_ = -1;
};

INSTANTIATE_TEST_SUITE_P(Presets, NetEscape, testing::ValuesIn(kPresets), presetTestName);

TEST_P(NetEscape, UdpWithoutConnectAndMappedV6) {
  controlReachable();
  Outcome o =
      supervise({}, {prog("escape_net"), "udp", "198.51.100.1", "4242"}, "/run/netns/" + side_);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(received(), "") << "the test host saw traffic";
  EXPECT_EQ(o.status, kBlocked) << o.describe();
  expectNetworkDenials(o, 4, 3);
}

TEST_P(NetEscape, TcpConnectMappedV6AndFastOpen) {
  Outcome o =
      supervise({}, {prog("escape_net"), "tcp", "198.51.100.1", "4242"}, "/run/netns/" + side_);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(received(), "") << "the test host saw traffic";
  EXPECT_EQ(o.status, kBlocked) << o.describe();
  expectNetworkDenials(o, 2, 3);
}

// A thread flips the address connect() reads between the attack's own
// loopback listener and the test host, 20,000 rounds: the cgroup programs
// judge the kernel's copy of the address, so no round reaches the host, and
// every refused round is in the audit stream.
TEST_P(NetEscape, ConnectAddressRace) {
  Outcome o = supervise({}, {prog("escape_net"), "connect-race", "198.51.100.1", "4242"},
                        "/run/netns/" + side_);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(received(), "") << "the test host saw traffic";
  EXPECT_EQ(o.status, kBlocked) << o.status << "\n" << o.out << o.err;
  if (strict()) {
    EXPECT_GE(o.denials("network"), 1);  // the listener's socket, refused
    return;
  }
  int loopback = -1, denied = -1;
  const size_t at = o.out.find("connect race: ");
  ASSERT_NE(at, std::string::npos) << o.out;
  ASSERT_EQ(std::sscanf(o.out.c_str() + at, "connect race: %d rounds to loopback, %d denied",
                        &loopback, &denied),
            2)
      << o.out;
  std::printf("%s", o.out.c_str() + at);
  // Both outcomes happened, so the two addresses really raced.
  EXPECT_GT(loopback, 0) << o.out;
  EXPECT_GT(denied, 0) << o.out;
  // Every refusal is in the audit stream, or counted as lost on stderr (a
  // slow supervisor, e.g. a sanitizer build or a TCG guest, lets the
  // kernel's ring fill; the lost records are allowed connects and refusals
  // alike): "audit: N network decision record(s) lost" from the cgroup
  // programs, "audit: N bpf-lsm decision record(s) lost" from the LSM.
  long lost = 0;
  for (size_t said = 0; (said = o.err.find(" decision record(s) lost", said)) != std::string::npos;
       ++said) {
    const size_t line = o.err.rfind("audit: ", said);
    if (line != std::string::npos) lost += std::strtol(o.err.c_str() + line + 7, nullptr, 10);
  }
  EXPECT_LE(o.denials("network"), denied) << o.err;
  EXPECT_GE(o.denials("network") + lost, denied) << o.err;
  EXPECT_GT(o.denials("network"), 0);
}

// A unix listener outside the session, bound by this (unsupervised) test.
class UnixListener {
 public:
  UnixListener(const std::string& name, bool abstract) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path + (abstract ? 1 : 0), name.data(), name.size());
    socklen_t len = socklen_t(offsetof(sockaddr_un, sun_path) + name.size() + 1);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd_, 4) != 0) fd_ = -1;
  }
  ~UnixListener() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  bool accepted() {
    int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) return false;
    ::close(c);
    return true;
  }

 private:
  int fd_ = -1;
};

// Abstract unix sockets: Landlock's abstract-socket scoping (in the kernel).
TEST_P(PresetEscape, AbstractUnixSocketOutsideTheSession) {
  if (std::string why = missingScopes(); !why.empty()) GTEST_SKIP() << why;
  const std::string name = "sv-escape-" + std::to_string(::getpid());
  UnixListener listener(name, /*abstract=*/true);
  ASSERT_TRUE(listener.ok());
  Outcome o = supervise({}, {prog("escape_net"), "abstract", name});
  EXPECT_EQ(o.status, kBlocked) << o.describe();
  EXPECT_FALSE(listener.accepted()) << "a connection reached the outside listener";
}

// Pathname unix sockets in a readable root (/run holds the host's service
// sockets: dbus, docker, systemd) that the policy never granted: the cgroup
// connect_unix program refuses a socket path outside the writable roots
// (kernel 6.7+; docs/network.md).
TEST_P(PresetEscape, PathnameUnixSocketOutsideTheSession) {
  const std::string path = "/run/sv-escape-" + std::to_string(::getpid()) + ".sock";
  UnixListener listener(path, /*abstract=*/false);
  ASSERT_TRUE(listener.ok());
  Outcome o = supervise({}, {prog("escape_net"), "unix", path});
  ::unlink(path.c_str());
  bool got = listener.accepted();
  std::string detail;
  if (o.status == kEscaped && got && !tracer::probeCgroupUnixHooks(&detail))
    GTEST_SKIP() << "known escape on this kernel: pathname unix sockets are judged by the "
                    "cgroup connect_unix hook, which is missing: "
                 << detail;
  EXPECT_EQ(o.status, kBlocked) << o.describe();
  EXPECT_FALSE(got);
  bool audited = false;
  for (const auto& e : o.audit)
    if (e.value("category", "") == "network" && e.value("decision", "") == "deny" &&
        e["network"].value("unix_path", "") == path)
      audited = true;
  EXPECT_TRUE(audited) << o.describe();
}

// The same socket through a symlink the tree could make in its workspace:
// on the host backend the hook judges the path string, not the file it
// resolves to, so this one still gets through (a documented gap,
// docs/network.md and docs/escape.md; bpf-lsm judges the peer socket:
// LsmSession.UnixSocketsAreJudgedOnThePeerNotThePath, in the VM).
TEST_P(PresetEscape, PathnameUnixSocketThroughASymlinkInTheWorkspace) {
  const std::string path = "/run/sv-escape-link-" + std::to_string(::getpid()) + ".sock";
  UnixListener listener(path, /*abstract=*/false);
  ASSERT_TRUE(listener.ok());
  const std::string link = ws_ + "/service.sock";
  ASSERT_EQ(::symlink(path.c_str(), link.c_str()), 0);
  Outcome o = supervise({}, {prog("escape_net"), "unix", link});
  ::unlink(path.c_str());
  bool got = listener.accepted();
  if (o.status == kEscaped && got)
    GTEST_SKIP() << "known escape on the host backend: a symlink inside a writable root to a "
                    "unix socket outside is followed (the cgroup hook sees only the path "
                    "string; bpf-lsm judges the socket reached): "
                 << o.out;
  EXPECT_EQ(o.status, kBlocked) << o.describe();
  EXPECT_FALSE(got);
}

}  // namespace
}  // namespace sv::escape
