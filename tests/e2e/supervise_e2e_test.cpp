// End-to-end acceptance suite for `supervise -- cmd` on this host.
//
// Every test runs the real build/supervise binary on real programs, in a fresh
// temp workspace (/tmp/sv-e2e-XXXXXX/ws, the supervised command's cwd and so
// the default workspace), and asserts exit codes, errno text, file contents
// and the JSONL audit file — never just "it ran". What each test proves:
//
//  1 Workload.*         ordinary work in a git repo is not broken by the default
//                       code-sandbox preset: cat, ls, git status, a shell
//                       redirect into the workspace, node all exit 0 with the
//                       right output; the audit has session start/end events.
//  2 ProtectedRoutes/*  .env, .env.local, .git/config, .git/hooks/pre-commit
//                       cannot be changed by any route (>, >>, truncate,
//                       python r+/os.truncate, rename onto/away, hard link,
//                       write through a symlink, reopen via /proc/self/fd,
//                       rm, chmod, chown, touch, /proc/self/root|cwd and ../
//                       paths, dirfd-relative opens, sed -i, RENAME_EXCHANGE,
//                       replacing it with a symlink): each attempt fails, the file's
//                       content/mode/mtime/link count are unchanged, the audit
//                       has a deny event with the right rule id and stderr the
//                       "supervise: denied ... (rule ID" line.
//    Protected.DenialLineAndAuditEventShape  the exact stderr line and the
//                       fields of the deny event (errno, rule, file, process).
//    Protected.RenamingAnAncestorDirectoryKeepsProtection  moving .git/,
//                       .git/hooks/ or the workspace itself away, writing the
//                       file under the new name and moving it back fails.
//    Protected.NewFilesMatchingGlobs  files created after start that match a
//                       deny glob at any depth are denied too (and absent).
//  3 Outside.*          reads outside the readable roots and writes outside the
//                       writable roots fail with EACCES and leave nothing; a
//                       symlink from the workspace doesn't escape; a binary
//                       outside can't be executed (126).
//  4 Race.*             a multi-threaded TOCTOU attack (tests/testprogs) that
//                       flips the path between ok.txt and .env while opening /
//                       renaming never changes .env; nor does swapping the
//                       opened name between a file and a symlink to .env.
//  5 ExitCodes.*        the command's status, 128+N on signal, 127 not found,
//                       126 not executable, 2 for a bad policy / unknown flag.
//  6 Signals.*          SIGTERM to supervise reaches the command (its trap's
//                       exit status comes back).
//  7 Signals.KillNine   SIGKILL of supervise takes the whole tree down within
//                       2 s, and nothing in it can write .env meanwhile.
//  8 FailClosed/*       with a required mechanism reported missing
//                       (SUPERVISE_TEST_DISABLE), the command never runs: 125.
//  9 AuditMode.*        -o mode=audit lets the write happen and records a
//                       would-deny event for the rule.
// 10 Network.*          loopback TCP works; a non-loopback connect (to a test
//                       host in a network namespace we create, never a real
//                       address) is denied and audited.
//
// Tests skip (GTEST_SKIP with the probe result) when not root or when Landlock,
// seccomp user-notify or cgroup v2 are missing. Commands are run with
// fork/exec; their stdout/stderr go to files rather than pipes because a
// backgrounded grandchild (or supervise's watchdog) inheriting a pipe would
// keep it open and hang the reader.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/landlock.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/common/host_features.h"
#include "tests/common/run_command.h"
#include "tracer/bpf/bpf_probes.h"

extern char** environ;

namespace sv::e2e {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kSupervise = SV_SUPERVISE_BIN;
constexpr const char* kTestProgs = SV_TESTPROGS_DIR;
constexpr int kDefaultTimeoutMs = 20000;

// ---------------------------------------------------------------------------
// Small file helpers (test-side, unsupervised).

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeFile(const std::string& path, const std::string& content, mode_t mode = 0644) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
  ::chmod(path.c_str(), mode);
}

bool exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

// Everything about a protected file an attack could change.
struct FileState {
  bool present = false;
  std::string content;
  mode_t mode = 0;
  nlink_t nlink = 0;
  ino_t ino = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  int64_t mtime_ns = 0;

  static FileState of(const std::string& path) {
    FileState s;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) return s;
    s.present = true;
    s.content = readFile(path);
    s.mode = st.st_mode;
    s.nlink = st.st_nlink;
    s.ino = st.st_ino;
    s.uid = st.st_uid;
    s.gid = st.st_gid;
    s.mtime_ns = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    return s;
  }
  bool operator==(const FileState&) const = default;
};

std::ostream& operator<<(std::ostream& os, const FileState& s) {
  if (!s.present) return os << "{absent}";
  char mode[16];
  std::snprintf(mode, sizeof mode, "%o", unsigned(s.mode));
  return os << "{content=" << json(s.content).dump() << " mode=" << mode << " nlink=" << s.nlink
            << " ino=" << s.ino << " owner=" << s.uid << ":" << s.gid << " mtime_ns=" << s.mtime_ns
            << "}";
}

// ---------------------------------------------------------------------------
// Host probes.

// Landlock is not required: as root, without it the session's floor is a
// private mount namespace (the mountns variant, or a kernel booted without
// landlock in lsm=; tools/vm, vm_6.12_no_landlock).
std::string probeMissing() { return sv::test::missingSessionFeature(kSupervise, 0); }

// ---------------------------------------------------------------------------
// Running commands.

struct RunOptions {
  std::string cwd;
  std::vector<std::string> env;  // extra NAME=value entries
  std::string netns;             // a netns file (/run/netns/X) to enter before exec
  int timeout_ms = kDefaultTimeoutMs;
  int umask = -1;                // supervise's umask (-1: the test's)
};

struct RunResult {
  int status = -1;  // exit code, or 128+signal
  bool timed_out = false;
  std::string out, err;
  std::string describe() const {
    return "status=" + std::to_string(status) + (timed_out ? " (TIMED OUT)" : "") +
           "\n--- stdout ---\n" + out + "\n--- stderr ---\n" + err;
  }
};

class Child {
 public:
  Child(const std::vector<std::string>& argv, const RunOptions& options, std::string out_path,
        std::string err_path)
      : out_path_(std::move(out_path)), err_path_(std::move(err_path)) {
    // Everything the child needs is built before fork: after fork only
    // async-signal-safe calls (listener threads may be running).
    const std::vector<std::string> env = test::superviseEnvironment(options.env);
    std::vector<char*> cargv, cenv;
    for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
    cenv.push_back(nullptr);
    const char* cwd = options.cwd.empty() ? nullptr : options.cwd.c_str();
    const char* netns = options.netns.empty() ? nullptr : options.netns.c_str();
    const int mask = options.umask;
    pid_ = ::fork();
    if (pid_ == 0) {
      if (mask >= 0) ::umask(static_cast<mode_t>(mask));
      if (netns) {
        int fd = ::open(netns, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) ::_exit(121);
      }
      if (cwd && ::chdir(cwd) != 0) ::_exit(122);
      int in = ::open("/dev/null", O_RDONLY);
      int out = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int err = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (in < 0 || out < 0 || err < 0) ::_exit(123);
      ::dup2(in, 0);
      ::dup2(out, 1);
      ::dup2(err, 2);
      ::close_range(3, ~0U, 0);
      ::signal(SIGPIPE, SIG_DFL);
      ::execvpe(cargv[0], cargv.data(), cenv.data());
      ::_exit(errno == ENOENT ? 127 : 126);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  pid_t pid() const { return pid_; }

  RunResult wait(int timeout_ms = kDefaultTimeoutMs) {
    RunResult r;
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    int status = 0;
    for (;;) {
      pid_t got = ::waitpid(pid_, &status, WNOHANG);
      if (got == pid_) break;
      if (got < 0 && errno != EINTR) break;
      if (Clock::now() > deadline) {
        r.timed_out = true;
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
    reaped_ = true;
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = readFile(out_path_);
    r.err = readFile(err_path_);
    return r;
  }

 private:
  std::string out_path_, err_path_;
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// ---------------------------------------------------------------------------
// Audit file.

std::vector<json> readAudit(const std::string& path) {
  std::vector<json> events;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      ADD_FAILURE() << "audit line is not JSON: " << line;
      continue;
    }
    events.push_back(std::move(j));
  }
  return events;
}

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string ruleId(const json& e) {
  auto it = e.find("rule");
  return it != e.end() && it->is_object() ? str(*it, "id") : "";
}

bool hasDecision(const std::vector<json>& events, const std::string& decision,
                 const std::string& rule_id, const std::string& category = "") {
  for (const auto& e : events)
    if (str(e, "decision") == decision && ruleId(e) == rule_id &&
        (category.empty() || str(e, "category") == category))
      return true;
  return false;
}

std::string dumpEvents(const std::vector<json>& events) {
  std::string out;
  for (const auto& e : events) {
    if (str(e, "decision") == "allow") continue;  // the interesting ones only
    out += e.dump() + "\n";
  }
  return out.empty() ? "(no non-allow events; " + std::to_string(events.size()) + " in total)\n"
                     : out;
}

// ---------------------------------------------------------------------------
// Fixture: a temp root (/tmp/sv-e2e-XXXXXX) with ws/ as the workspace and the
// outputs and audit files beside it, outside the workspace.

class E2eTest : public testing::Test {
 protected:
  // A shell line that waits (up to 10 s) until `path` is a read-only mount
  // in the command's namespace, which the session makes once the command
  // runs (write_recheck.h), then prints that mount's line.
  // The variants where write opens are never re-checked by the kernel: the
  // ptrace backend, the mount floor (no Landlock).
  static std::string noWriteRecheck() {
    const char* backend = std::getenv("SUPERVISE_BACKEND");
    const char* disabled = std::getenv("SUPERVISE_TEST_DISABLE");
    if (backend && std::string(backend) == "ptrace")
      return "the ptrace backend emulates every open";
    if (disabled && std::string(disabled).find("landlock") != std::string::npos)
      return "without Landlock no write open is left to the kernel";
    return {};
  }
  static std::string untilBound(const std::string& path) {
    const std::string line = "grep -F ' " + path + " ro,' /proc/self/mountinfo";
    return "for i in $(seq 200); do " + line + " >/dev/null && break; sleep 0.05; done; " + line;
  }

  void SetUp() override {
    std::string missing = probeMissing();
    if (!missing.empty()) GTEST_SKIP() << missing;
    char tmpl[] = "/tmp/sv-e2e-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr) << std::strerror(errno);
    root_ = tmpl;
    ws_ = root_ + "/ws";
    ASSERT_EQ(::mkdir(ws_.c_str(), 0755), 0);
  }
  void TearDown() override {
    std::error_code ec;
    if (!root_.empty()) fs::remove_all(root_, ec);
  }

  std::string ws(const std::string& rel) const { return ws_ + "/" + rel; }

  // Runs argv unsupervised (fixture setup: git, ip).
  RunResult plain(const std::vector<std::string>& argv, RunOptions options = {}) {
    if (options.cwd.empty()) options.cwd = ws_;
    Child child(argv, options, nextPath("out"), nextPath("err"));
    return child.wait(options.timeout_ms);
  }

  std::vector<std::string> superviseArgv(const std::vector<std::string>& sv_args,
                                         const std::vector<std::string>& cmd) {
    audit_ = nextPath("audit.jsonl");
    std::vector<std::string> argv{kSupervise, "--audit-file", audit_};
    argv.insert(argv.end(), sv_args.begin(), sv_args.end());
    argv.push_back("--");
    argv.insert(argv.end(), cmd.begin(), cmd.end());
    return argv;
  }

  RunResult supervise(const std::vector<std::string>& sv_args, const std::vector<std::string>& cmd,
                      RunOptions options = {}) {
    if (options.cwd.empty()) options.cwd = ws_;
    Child child(superviseArgv(sv_args, cmd), options, nextPath("out"), nextPath("err"));
    return child.wait(options.timeout_ms);
  }

  RunResult bash(const std::string& script, RunOptions options = {}) {
    return supervise({}, {"bash", "-c", script}, std::move(options));
  }

  std::unique_ptr<Child> startSupervised(const std::vector<std::string>& cmd) {
    RunOptions options;
    options.cwd = ws_;
    return std::make_unique<Child>(superviseArgv({}, cmd), options, nextPath("out"),
                                   nextPath("err"));
  }

  std::vector<json> audit() const { return readAudit(audit_); }

  std::string nextPath(const std::string& suffix) {
    return root_ + "/run-" + std::to_string(++counter_) + "." + suffix;
  }

  bool waitForFile(const std::string& path, int timeout_ms) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (Clock::now() < deadline) {
      if (exists(path)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  // A git repo with a committed file and the four protected files, each with
  // a fixed old mtime so that `touch` is visible.
  void makeRepo() {
    for (const auto& argv : std::vector<std::vector<std::string>>{
             {"git", "init", "-q"},
             {"git", "config", "user.email", "e2e@example.invalid"},
             {"git", "config", "user.name", "sv e2e"}}) {
      auto r = plain(argv);
      ASSERT_EQ(r.status, 0) << r.describe();
    }
    writeFile(ws("README"), "hello from the e2e test\n");
    writeFile(ws("src.txt"), "committed\n");
    for (const auto& argv : std::vector<std::vector<std::string>>{
             {"git", "add", "README", "src.txt"}, {"git", "commit", "-q", "-m", "init"}}) {
      auto r = plain(argv);
      ASSERT_EQ(r.status, 0) << r.describe();
    }
    writeFile(ws(".env"), "SECRET=hunter2\n", 0600);
    writeFile(ws(".env.local"), "LOCAL_SECRET=1\n", 0600);
    writeFile(ws(".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n", 0755);
    const timespec old[2] = {{1000000000, 0}, {1000000000, 0}};
    for (const char* f : {".env", ".env.local", ".git/config", ".git/hooks/pre-commit"})
      ASSERT_EQ(::utimensat(AT_FDCWD, ws(f).c_str(), old, 0), 0) << f;
  }

  std::string root_, ws_, audit_;
  int counter_ = 0;
};

// ---------------------------------------------------------------------------
// 1. Ordinary work is not broken.

class Workload : public E2eTest {};

TEST_F(Workload, EverydayCommandsInAGitRepoSucceed) {
  makeRepo();

  auto cat = supervise({}, {"cat", "README"});
  EXPECT_EQ(cat.status, 0) << cat.describe();
  EXPECT_EQ(cat.out, "hello from the e2e test\n");
  auto events = audit();
  bool start = false, end = false;
  for (const auto& e : events) {
    if (str(e, "category") != "session") continue;
    start |= str(e, "operation") == "start";
    if (str(e, "operation") == "end") {
      end = true;
      EXPECT_EQ(e["session"]["exit"]["code"], 0) << e.dump();
    }
    EXPECT_EQ(e["schema_version"].is_null(), false) << e.dump();
  }
  EXPECT_TRUE(start && end) << "session start/end events missing:\n" << readFile(audit_);

  auto ls = supervise({}, {"ls"});
  EXPECT_EQ(ls.status, 0) << ls.describe();
  EXPECT_TRUE(contains(ls.out, "README") && contains(ls.out, "src.txt")) << ls.describe();

  auto git = supervise({}, {"git", "status"});
  EXPECT_EQ(git.status, 0) << git.describe();
  EXPECT_TRUE(contains(git.out, "On branch")) << git.describe();

  auto redirect = bash("echo hi > out.txt");
  EXPECT_EQ(redirect.status, 0) << redirect.describe();
  EXPECT_EQ(readFile(ws("out.txt")), "hi\n");

  auto node = supervise({}, {"node", "-e", "const n = 40; console.log(n + 2)"});
  EXPECT_EQ(node.status, 0) << node.describe();
  EXPECT_EQ(node.out, "42\n") << node.describe();
}

// ---------------------------------------------------------------------------
// 2. Protected files, by every route.

struct ProtectedFile {
  const char* path;
  const char* rule;
};
constexpr ProtectedFile kProtected[] = {
    {".env", "deny-write-env"},
    {".env.local", "deny-write-env-variants"},
    {".git/config", "deny-write-git-config"},
    {".git/hooks/pre-commit", "deny-write-git-hooks"},
};

struct Route {
  const char* name;
  // bash, run in a subshell once per protected file with $F the file and $T a
  // fresh scratch name in the workspace; its status must be non-zero.
  const char* script;
};
// Test names carry the route's name, not the struct's bytes (pointers).
void PrintTo(const Route& route, std::ostream* os) { *os << route.name; }

const Route kRoutes[] = {
    {"RedirectTruncate", R"(echo PWNED > "$F")"},
    {"RedirectAppend", R"(echo PWNED >> "$F")"},
    {"TruncateCommand", R"(truncate -s0 "$F")"},
    {"PythonOpenReadWrite",
     R"(/usr/bin/python3 -c 'import sys
f = open(sys.argv[1], "r+")
f.write("PWNED")
f.close()' "$F")"},
    {"PythonOsTruncate",
     R"(/usr/bin/python3 -c 'import os, sys; os.truncate(sys.argv[1], 0)' "$F")"},
    {"RenameOnto", R"(echo PWNED > "$T" && mv -f "$T" "$F")"},
    {"RenameAway", R"(mv -f "$F" "$T")"},
    {"HardLinkThenWrite", R"(ln "$F" "$T" && echo PWNED >> "$T")"},
    {"WriteThroughSymlink", R"(ln -s "$PWD/$F" "$T"; echo PWNED > "$T")"},
    {"ReopenViaProcFd", R"(exec 3<"$F"; echo PWNED > /proc/self/fd/3)"},
    {"Remove", R"(rm -f "$F")"},
    {"Chmod", R"(chmod 777 "$F")"},
    {"Touch", R"(touch "$F")"},
    {"Chown", R"(chown 1:1 "$F")"},
    {"ViaProcSelfRoot", R"(echo PWNED >> "/proc/self/root$PWD/$F")"},
    {"ViaProcSelfCwd", R"(echo PWNED >> "/proc/self/cwd/$F")"},
    {"ViaDotDot", R"(echo PWNED >> "../$(basename "$PWD")/$F")"},
    {"DirfdRelative",
     R"(/usr/bin/python3 -c 'import os, sys
d, b = os.path.split(sys.argv[1])
dfd = os.open(d or ".", os.O_RDONLY | os.O_DIRECTORY)
os.write(os.open(b, os.O_WRONLY | os.O_APPEND, dir_fd=dfd), b"PWNED")' "$F")"},
    {"SedInPlace", R"(sed -i s/=/=PWNED/ "$F")"},
    {"RenameExchange",
     R"(echo PWNED > "$T" && /usr/bin/python3 -c 'import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), 2) != 0:
    sys.exit("renameat2(RENAME_EXCHANGE): " + os.strerror(ctypes.get_errno()))' "$T" "$F")"},
    {"ReplaceWithSymlink", R"(ln -sfn /dev/null "$F")"},
};

class ProtectedRoutes : public E2eTest, public testing::WithParamInterface<Route> {};

TEST_P(ProtectedRoutes, EveryAttemptFailsAndIsAudited) {
  const Route& route = GetParam();
  makeRepo();
  if (HasFatalFailure()) return;
  std::vector<FileState> before;
  for (const auto& p : kProtected) before.push_back(FileState::of(ws(p.path)));

  std::string script = "i=0\nfor F in";
  for (const auto& p : kProtected) script += std::string(" ") + p.path;
  script += "; do\n  i=$((i+1)); T=e2e-scratch-$i\n  ( " + std::string(route.script) +
            " )\n  echo \"RC $F $?\"\ndone\n";
  auto r = bash(script);
  ASSERT_FALSE(r.timed_out) << r.describe();
  ASSERT_EQ(r.status, 0) << "the driver script itself failed\n" << r.describe();
  auto events = audit();

  for (size_t i = 0; i < std::size(kProtected); ++i) {
    const auto& p = kProtected[i];
    SCOPED_TRACE(std::string(route.name) + " on " + p.path);
    std::smatch m;
    const std::regex rc_re(std::string("RC ") +
                           std::regex_replace(p.path, std::regex(R"([.])"), R"(\.)") + " ([0-9]+)");
    ASSERT_TRUE(std::regex_search(r.out, m, rc_re)) << r.describe();
    EXPECT_NE(m[1].str(), "0") << "the attempt succeeded\n" << r.describe();
    EXPECT_EQ(FileState::of(ws(p.path)), before[i]) << "the protected file changed\n"
                                                    << r.describe();
    EXPECT_TRUE(hasDecision(events, "deny", p.rule)) << "no deny event with rule " << p.rule << "\n"
                                                     << dumpEvents(events);
    EXPECT_TRUE(contains(r.err, std::string("(rule ") + p.rule)) << "no denial line on stderr\n"
                                                                 << r.describe();
    if (std::string(route.name) == "HardLinkThenWrite") {
      EXPECT_FALSE(exists(ws("e2e-scratch-" + std::to_string(i + 1))))
          << "a hard link to the protected file was created";
    }
  }
  EXPECT_TRUE(contains(r.err, "supervise: denied ")) << r.describe();
  EXPECT_TRUE(contains(r.err, "Permission denied")) << "expected EACCES\n" << r.describe();
}

INSTANTIATE_TEST_SUITE_P(AllRoutes, ProtectedRoutes, testing::ValuesIn(kRoutes),
                         [](const testing::TestParamInfo<Route>& info) {
                           return std::string(info.param.name);
                         });

class Protected : public E2eTest {};

TEST_F(Protected, DenialLineAndAuditEventShape) {
  writeFile(ws(".env"), "SECRET=hunter2\n", 0600);
  auto r = bash("echo PWNED > .env");
  EXPECT_EQ(r.status, 1) << r.describe();
  EXPECT_EQ(readFile(ws(".env")), "SECRET=hunter2\n");
  EXPECT_TRUE(contains(r.err, "supervise: denied write to .env (rule deny-write-env: "))
      << r.describe();
  EXPECT_TRUE(contains(r.err, ".env: Permission denied")) << r.describe();
  const json* deny = nullptr;
  uint64_t last_seq = 0;
  bool seq_increasing = true;
  const auto events = audit();
  for (const auto& e : events) {
    const uint64_t seq = e.value("seq", uint64_t{0});
    if (seq <= last_seq && last_seq != 0) seq_increasing = false;
    last_seq = seq;
    EXPECT_EQ(e.value("session_id", ""), events.front().value("session_id", "")) << e.dump();
    // (file: bash started without $SHELL asks nscd for it, a unix-socket denial)
    if (!deny && str(e, "decision") == "deny" && str(e, "category") == "file") deny = &e;
  }
  EXPECT_TRUE(seq_increasing) << readFile(audit_);
  ASSERT_NE(deny, nullptr) << readFile(audit_);
  const json& e = *deny;
  EXPECT_EQ(e.value("errno", ""), "EACCES") << e.dump();
  EXPECT_EQ(ruleId(e), "deny-write-env") << e.dump();
  EXPECT_FALSE(e["rule"].value("reason", "").empty()) << e.dump();
  EXPECT_FALSE(str(e, "enforced_by").empty()) << e.dump();
  EXPECT_FALSE(str(e, "time").empty()) << e.dump();
  EXPECT_TRUE(e.contains("syscall") && e["syscall"].value("name", "") != "") << e.dump();
  EXPECT_EQ(e["file"].value("path", ""), ws(".env")) << e.dump();
  ASSERT_TRUE(e.contains("process")) << e.dump();
  EXPECT_GT(e["process"].value("pid", 0), 0) << e.dump();
  EXPECT_EQ(e["process"].value("cwd", ""), ws_) << e.dump();
}

// Rename a directory above a protected file, write the file under its new
// path (which no deny glob names), rename the directory back. Either the
// rename of an ancestor is denied or the protection follows the file; the
// protected file must end up unchanged.
TEST_F(Protected, RenamingAnAncestorDirectoryKeepsProtection) {
  makeRepo();
  if (HasFatalFailure()) return;
  const auto config = FileState::of(ws(".git/config"));
  const auto hook = FileState::of(ws(".git/hooks/pre-commit"));
  const auto env = FileState::of(ws(".env"));
  auto r = bash(
      "mv .git .git-moved && { echo PWNED >> .git-moved/config; mv .git-moved .git; }\n"
      "mv .git/hooks .git/hooks-moved && { echo PWNED >> .git/hooks-moved/pre-commit;"
      " mv .git/hooks-moved .git/hooks; }\n"
      "ws=$(basename \"$PWD\"); cd .. && mv \"$ws\" \"$ws-moved\" &&"
      " { echo PWNED >> \"$ws-moved/.env\"; mv \"$ws-moved\" \"$ws\"; }\n"
      "exit 0\n");
  EXPECT_EQ(r.status, 0) << r.describe();
  EXPECT_EQ(FileState::of(ws(".git/config")).content, config.content)
      << "written through a renamed .git/\n"
      << r.describe();
  EXPECT_EQ(FileState::of(ws(".git/hooks/pre-commit")).content, hook.content)
      << "written through a renamed .git/hooks/\n"
      << r.describe();
  EXPECT_EQ(FileState::of(ws(".env")).content, env.content)
      << "written through a renamed workspace\n"
      << r.describe();
}

TEST_F(Protected, NewFilesMatchingGlobsAreDenied) {
  makeRepo();
  // The hooks directory itself is made outside: `.git/hooks/**` also matches
  // the directory (`**` matches zero components), so a supervised mkdir of it
  // is denied by design; what is tested here is new *files*.
  ASSERT_TRUE(fs::create_directories(ws("sub/.git/hooks")));
  auto r = bash(
      "mkdir -p sub/.git || exit 99\n"
      "echo ok > sub/ok.txt; echo \"RC sub/ok.txt $?\"\n"
      "echo x > sub/.env; echo \"RC sub/.env $?\"\n"
      "echo x > sub/.git/hooks/x; echo \"RC sub/.git/hooks/x $?\"\n"
      "echo x > sub/.git/config; echo \"RC sub/.git/config $?\"\n"
      "echo x > .env.production; echo \"RC .env.production $?\"\n");
  ASSERT_EQ(r.status, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "RC sub/ok.txt 0\n")) << r.describe();
  EXPECT_EQ(readFile(ws("sub/ok.txt")), "ok\n");
  auto events = audit();
  const std::pair<const char*, const char*> denied[] = {
      {"sub/.env", "deny-write-env"},
      {"sub/.git/hooks/x", "deny-write-git-hooks"},
      {"sub/.git/config", "deny-write-git-config"},
      {".env.production", "deny-write-env-variants"}};
  for (const auto& [path, rule] : denied) {
    SCOPED_TRACE(path);
    EXPECT_TRUE(contains(r.out, std::string("RC ") + path + " 1\n")) << r.describe();
    EXPECT_FALSE(exists(ws(path))) << "created despite the deny rule";
    EXPECT_TRUE(hasDecision(events, "deny", rule)) << dumpEvents(events);
    EXPECT_TRUE(contains(r.err, std::string("(rule ") + rule)) << r.describe();
  }
}

// ---------------------------------------------------------------------------
// 3. Outside the roots.

class Outside : public E2eTest {
 protected:
  void SetUp() override {
    E2eTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    char tmpl[] = "/sv-e2e-outside-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr) << std::strerror(errno);
    outside_ = tmpl;
    writeFile(outside_ + "/secret.txt", "outside-secret\n");
    suffix_ = std::to_string(::getpid());
  }
  void TearDown() override {
    std::error_code ec;
    if (!outside_.empty()) fs::remove_all(outside_, ec);
    ::unlink(("/etc/sv-e2e-x-" + suffix_).c_str());
    ::unlink(("/usr/local/sv-e2e-x-" + suffix_).c_str());
    E2eTest::TearDown();
  }
  std::string outside_, suffix_;
};

TEST_F(Outside, ReadOutsideReadableRootsFails) {
  auto r = supervise({}, {"cat", outside_ + "/secret.txt"});
  EXPECT_NE(r.status, 0) << r.describe();
  // Landlock refuses it (EACCES); on the mount-namespace floor (no Landlock
  // here, or the /mountns variant) what no root names is absent
  // (docs/enforcement.md, "The mount-namespace floor").
  EXPECT_TRUE(contains(r.err, test::withoutLandlock() ? "No such file or directory"
                                                      : "Permission denied"))
      << r.describe();
  EXPECT_FALSE(contains(r.out, "outside-secret")) << r.describe();
}

TEST_F(Outside, WriteOutsideWritableRootsFails) {
  for (const std::string& path :
       {"/etc/sv-e2e-x-" + suffix_, "/usr/local/sv-e2e-x-" + suffix_, outside_ + "/new.txt"}) {
    SCOPED_TRACE(path);
    auto r = supervise({}, {"touch", path});
    EXPECT_NE(r.status, 0) << r.describe();
    EXPECT_TRUE(contains(r.err, "Permission denied")) << r.describe();
    EXPECT_FALSE(exists(path));
  }
  // Nor can the existing file outside be modified.
  auto r = bash("echo PWNED >> " + outside_ + "/secret.txt");
  EXPECT_NE(r.status, 0) << r.describe();
  EXPECT_EQ(readFile(outside_ + "/secret.txt"), "outside-secret\n");
}

TEST_F(Outside, SymlinkInWorkspaceDoesNotEscape) {
  ASSERT_EQ(::symlink((outside_ + "/secret.txt").c_str(), ws("link").c_str()), 0);
  auto r = bash("cat link; echo \"RC read $?\"; echo PWNED >> link; echo \"RC write $?\"");
  EXPECT_EQ(r.status, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "RC read 1")) << r.describe();
  EXPECT_TRUE(contains(r.out, "RC write 1")) << r.describe();
  EXPECT_FALSE(contains(r.out, "outside-secret")) << r.describe();
  EXPECT_EQ(readFile(outside_ + "/secret.txt"), "outside-secret\n");
}

TEST_F(Outside, ExecOutsideReadableRootsFails) {
  std::error_code ec;
  fs::copy_file("/usr/bin/true", outside_ + "/true", ec);
  ASSERT_FALSE(ec) << ec.message();
  ::chmod((outside_ + "/true").c_str(), 0755);
  auto r = supervise({}, {outside_ + "/true"});
  EXPECT_EQ(r.status, 126) << r.describe();
}

// ---------------------------------------------------------------------------
// 4. TOCTOU races from a multi-threaded target.

class Race : public E2eTest {
 protected:
  void TearDown() override {
    if (tmpfs_) ::umount2(ws_.c_str(), MNT_DETACH);
    E2eTest::TearDown();
  }
  // rename() over an existing file on ext4 flushes the data (auto_da_alloc),
  // ~2 ms each: the rename races run on a tmpfs workspace to stay fast.
  void mountTmpfsWorkspace() {
    ASSERT_EQ(::mount("tmpfs", ws_.c_str(), "tmpfs", 0, "size=32m,mode=0755"), 0)
        << "mount tmpfs: " << std::strerror(errno);
    tmpfs_ = true;
  }
  bool tmpfs_ = false;
  // The test program must live inside the readable roots: copy it into the
  // workspace (the build dir is outside them).
  std::string installProg(const std::string& name) {
    std::error_code ec;
    fs::copy_file(std::string(kTestProgs) + "/" + name, ws(name),
                  fs::copy_options::overwrite_existing, ec);
    EXPECT_FALSE(ec) << ec.message();
    ::chmod(ws(name).c_str(), 0755);
    return "./" + name;
  }
  // What every race must end with: it ran to its end, .env is as it was,
  // and both sides of the race (`done`, "failed") happened, so the result
  // means something.
  void expectRaceLost(const RunResult& r, const FileState& before,
                      const std::string& done = "opened") {
    ASSERT_FALSE(r.timed_out) << r.describe();
    EXPECT_EQ(r.status, 0) << r.describe();
    EXPECT_EQ(FileState::of(ws(".env")), before) << ".env changed: the race was won\n"
                                                 << r.describe();
    EXPECT_GT(count(r.out, done), 0) << r.describe();
    EXPECT_GT(count(r.out, "failed"), 0) << r.describe();
  }
  // race_open in `mode` once .env is bound (the command waits for it),
  // expected to leave .env as it was.
  RunResult raceOnceBound(const std::string& mode, const char* iterations) {
    writeFile(ws(".env"), "SECRET=hunter2\n", 0600);
    const auto before = FileState::of(ws(".env"));
    RunOptions options;
    options.timeout_ms = 60000;
    const std::string prog = installProg("race_open");
    auto r = supervise({"--quiet"},
                       {"bash", "-c",
                        untilBound(ws(".env")) + "; exec " + prog + " " + iterations + " " + mode},
                       options);
    std::cout << "[ race_open " << mode << " ] " << r.out;
    expectRaceLost(r, before);
    return r;
  }
  static long count(const std::string& out, const std::string& key) {
    std::smatch m;
    if (!std::regex_search(out, m, std::regex(key + "=([0-9]+)"))) return -1;
    return std::stol(m[1].str());
  }
};

#ifdef SV_SANITIZED
constexpr const char* kOpenIterations = "10000";  // sanitized supervisor: ~10x slower
#else
constexpr const char* kOpenIterations = "100000";
#endif

TEST_F(Race, OpenPathFlipNeverWritesEnv) {
  writeFile(ws(".env"), "SECRET=hunter2\n", 0600);
  const auto before = FileState::of(ws(".env"));
  RunOptions options;
  options.timeout_ms = 60000;
  const auto t0 = Clock::now();
  auto r = supervise({"--quiet"}, {installProg("race_open"), kOpenIterations}, options);
  const auto secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::cout << "[ race_open ] " << r.out << "              " << secs << " s\n";
  expectRaceLost(r, before);
  if (HasFatalFailure()) return;
  EXPECT_EQ(count(r.out, "other_errno"), 0) << "denials must be EACCES/EPERM\n" << r.describe();
}

// Fewer than the open race: each iteration is a create plus a rename, both
// supervised, and the whole suite must stay within a minute on 2 cores.
#ifdef SV_SANITIZED
constexpr const char* kRenameIterations = "1000";
#else
constexpr const char* kRenameIterations = "10000";
#endif

TEST_F(Race, RenamePathFlipNeverReplacesOrMovesEnv) {
  mountTmpfsWorkspace();
  if (HasFatalFailure()) return;
  const std::string prog = installProg("race_rename");
  for (const char* mode : {"onto", "away"}) {
    SCOPED_TRACE(mode);
    writeFile(ws(".env"), "SECRET=hunter2\n", 0600);
    const auto before = FileState::of(ws(".env"));
    RunOptions options;
    options.timeout_ms = 60000;
    const auto t0 = Clock::now();
    auto r = supervise({"--quiet"}, {prog, mode, kRenameIterations}, options);
    const auto secs = std::chrono::duration<double>(Clock::now() - t0).count();
    std::cout << "[ race_rename " << mode << " ] " << r.out << "              " << secs << " s\n";
    expectRaceLost(r, before, "renamed");
    if (HasFatalFailure()) return;
  }
}

// As many opens as the open race: issue 9 asks for 100k iterations of the
// rename loop swapping the symlink (12-19 s on the 2-core VM).
TEST_F(Race, SymlinkSwapNeverWritesEnv) {
  mountTmpfsWorkspace();
  if (HasFatalFailure()) return;
  writeFile(ws(".env"), "SECRET=hunter2\n", 0600);
  const auto before = FileState::of(ws(".env"));
  RunOptions options;
  options.timeout_ms = 60000;
  const auto t0 = Clock::now();
  auto r = supervise({"--quiet"}, {installProg("race_symlink"), kOpenIterations}, options);
  const auto secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::cout << "[ race_symlink ] " << r.out << "              " << secs << " s\n";
  expectRaceLost(r, before);
}

// The open race on a file that exists, opened without O_CREAT: where the
// session binds the protected names read-only (docs/enforcement.md, "Write
// opens the kernel re-checks") the supervisor lets the kernel perform an
// allowed one, and a swap after the decision reaches .env only through its
// read-only mount.
TEST_F(Race, ExistingPathFlipNeverWritesEnv) {
  if (const std::string why = noWriteRecheck(); !why.empty()) GTEST_SKIP() << why;
  const RunResult r = raceOnceBound("existing", kOpenIterations);
  if (HasFatalFailure()) return;
  EXPECT_TRUE(contains(r.out, ws(".env") + " ro,")) << "the kernel did not re-check\n"
                                                     << r.describe();
  EXPECT_EQ(count(r.out, "other_errno"), 0) << "denials must be EACCES or EROFS\n" << r.describe();
}

// The same race on unlink: the kernel removes an allowed name itself where
// it re-checks, and a swap after the decision meets .env as a mount point.
// Each iteration is a create and an unlink, both supervised: fewer of them.
#ifdef SV_SANITIZED
constexpr const char* kUnlinkIterations = "3000";
#else
constexpr const char* kUnlinkIterations = "30000";
#endif

TEST_F(Race, UnlinkPathFlipNeverRemovesEnv) {
  if (const std::string why = noWriteRecheck(); !why.empty()) GTEST_SKIP() << why;
  const RunResult r = raceOnceBound("unlink", kUnlinkIterations);
  if (HasFatalFailure()) return;
  EXPECT_EQ(count(r.out, "other_errno"), 0) << "denials must be EACCES or EBUSY\n" << r.describe();
}

// .env opened for reading before the session binds it, then reached again
// through /proc/self/fd/N (a symlink "x" to it) by a path swapped after an
// allowed decision: that reopen lands on the mount the fd was opened on,
// past the bind. The session finds the held fd after binding and keeps
// every write open emulated (write_recheck.h, nothingHeldPastTheBinds).
TEST_F(Race, AProtectedFileHeldFromBeforeTheBindsIsNotReopenedPastThem) {
  if (const std::string why = noWriteRecheck(); !why.empty()) GTEST_SKIP() << why;
  writeFile(ws(".env"), "SECRET=hunter2\n", 0600);
  const auto before = FileState::of(ws(".env"));
  RunOptions options;
  options.timeout_ms = 60000;
  options.env = {"SUPERVISE_TEST_WRITE_RECHECK="};  // bound while the command runs
  const std::string prog = installProg("race_open");
  auto r = supervise({"--quiet"}, {prog, kOpenIterations, "held"}, options);
  std::cout << "[ race_open held ] " << r.out;
  expectRaceLost(r, before);
}

// ---------------------------------------------------------------------------
// 4b. Write opens the kernel re-checks.

class WriteRecheck : public E2eTest {
 protected:
  void SetUp() override {
    if (const std::string why = noWriteRecheck(); !why.empty()) GTEST_SKIP() << why;
    E2eTest::SetUp();
  }
  // Writes an existing file and tries .env, both without O_CREAT, after
  // printing the command's mounts below the workspace.
  RunResult writeBoth(std::vector<std::string> sv_args = {}) {
    const std::string script =
        untilBound(ws(".env")) + " >/dev/null\n"
        "grep -F ' " + ws_ + "/' /proc/self/mountinfo\n"
        "python3 -c '\n"
        "import errno, os\n"
        "fd = os.open(\"src.txt\", os.O_WRONLY | os.O_APPEND)\n"
        "os.write(fd, b\"x\")\n"
        "try:\n"
        "    os.open(\".env\", os.O_WRONLY)\n"
        "    print(\"env opened\")\n"
        "except OSError as e:\n"
        "    print(\"env\", errno.errorcode[e.errno])\n"
        "'";
    RunOptions options;
    options.env = {"SUPERVISE_TEST_WRITE_RECHECK="};  // made while the command runs
    return supervise(sv_args, {"bash", "-c", script}, options);
  }
};

// The protected names that exist are read-only mounts in the command's own
// namespace and nowhere else; what is decided and recorded is what it was
// when every write open was emulated.
TEST_F(WriteRecheck, ProtectedNamesAreReadOnlyMountsOfTheCommandAlone) {
  makeRepo();
  if (HasFatalFailure()) return;
  auto r = writeBoth();
  EXPECT_EQ(r.status, 0) << r.describe();
  for (const char* name : {".env", ".env.local", ".git/config", ".git/hooks"})
    EXPECT_TRUE(contains(r.out, " " + ws(name) + " ro,")) << name << "\n" << r.describe();
  EXPECT_FALSE(contains(r.out, ws("src.txt"))) << r.describe();
  EXPECT_FALSE(contains(readFile("/proc/self/mountinfo"), ws_)) << "a bind reached the host";
  EXPECT_EQ(readFile(ws("src.txt")), "committed\nx");
  EXPECT_TRUE(contains(r.out, "env EACCES")) << r.describe();
  EXPECT_EQ(readFile(ws(".env")), "SECRET=hunter2\n");
  EXPECT_TRUE(contains(r.err, "supervise: denied write to .env (rule deny-write-env: "))
      << r.describe();
  const auto events = audit();
  EXPECT_TRUE(hasDecision(events, "deny", "deny-write-env", "file")) << dumpEvents(events);
  bool allowed = false;
  for (const auto& e : events)
    allowed = allowed || (str(e, "decision") == "allow" && e.contains("file") &&
                          e["file"].value("path", "") == ws("src.txt") &&
                          str(e, "operation") == "write");
  EXPECT_TRUE(allowed) << "no allow event for the write open of src.txt\n" << readFile(audit_);
}

// Behind the binds an allowed unlink or rmdir of one name is left to the
// kernel with nothing checked but the decision: it removes the name decided
// on, a symlink to .env included (not .env), and a missing name fails as the
// kernel says, each with its allow event; .env itself is still refused.
TEST_F(WriteRecheck, AnUnlinkOfOneNameRemovesThatNameWhateverItNames) {
  makeRepo();
  if (HasFatalFailure()) return;
  const std::string script =
      untilBound(ws(".env")) + " >/dev/null\n"
      "python3 -c '\n"
      "import errno, os\n"
      "os.symlink(\".env\", \"to-env\")\n"
      "os.mkdir(\"empty\")\n"
      "for call, name in ((os.unlink, \"to-env\"), (os.rmdir, \"empty\"),\n"
      "                   (os.unlink, \"missing\"), (os.unlink, \".env\")):\n"
      "    try:\n"
      "        call(name)\n"
      "        print(name, \"removed\")\n"
      "    except OSError as e:\n"
      "        print(name, errno.errorcode[e.errno])\n"
      "'";
  auto r = supervise({}, {"bash", "-c", script},
                     RunOptions{.env = {"SUPERVISE_TEST_WRITE_RECHECK="}});
  EXPECT_EQ(r.status, 0) << r.describe();
  EXPECT_EQ(r.out, "to-env removed\nempty removed\nmissing ENOENT\n.env EACCES\n") << r.describe();
  EXPECT_EQ(readFile(ws(".env")), "SECRET=hunter2\n");
  EXPECT_FALSE(fs::exists(fs::symlink_status(ws("to-env")))) << "the symlink is still there";
  const auto events = audit();
  for (const char* name : {"to-env", "empty", "missing"}) {
    bool allowed = false;
    for (const auto& e : events)
      allowed = allowed || (str(e, "decision") == "allow" && e.contains("file") &&
                            e["file"].value("path", "") == ws(name));
    EXPECT_TRUE(allowed) << "no allow event for " << name << "\n" << dumpEvents(events);
  }
  EXPECT_TRUE(hasDecision(events, "deny", "deny-write-env", "file")) << dumpEvents(events);
}

// A protected name made by another process while the session runs has no
// bind; the supervisor still decides the tree's write open of it.
TEST_F(WriteRecheck, AProtectedNameMadeOutsideTheTreeIsStillDecided) {
  writeFile(ws("src.txt"), "committed\n");
  const std::string go = root_ + "/go";
  auto child = startSupervised(
      {"bash", "-c",
       "while [ ! -e " + go + " ]; do sleep 0.01; done\n"
       "python3 -c '\n"
       "import errno, os\n"
       "try:\n"
       "    os.open(\".env\", os.O_WRONLY)\n"
       "    print(\"env opened\")\n"
       "except OSError as e:\n"
       "    print(\"env\", errno.errorcode[e.errno])\n"
       "'"});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  writeFile(ws(".env"), "SECRET=made later\n", 0600);
  writeFile(go, "");
  auto r = child->wait(20000);
  EXPECT_EQ(r.status, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "env EACCES")) << r.describe();
  EXPECT_EQ(readFile(ws(".env")), "SECRET=made later\n");
}

// Where the session cannot bind (here: told not to), nothing is mounted and
// the write opens are emulated as before, with the same outcome.
TEST_F(WriteRecheck, WithoutItNothingIsMountedAndTheOutcomeIsTheSame) {
  makeRepo();
  if (HasFatalFailure()) return;
  auto r = supervise({}, {"bash", "-c", "grep -cF ' " + ws_ + "/' /proc/self/mountinfo; true"},
                     RunOptions{.env = {"SUPERVISE_TEST_DISABLE=write-recheck"}});
  EXPECT_EQ(r.status, 0) << r.describe();
  EXPECT_TRUE(r.out.starts_with("0\n")) << r.describe();
}

// ---------------------------------------------------------------------------
// 5. Exit codes.

class ExitCodes : public E2eTest {};

TEST_F(ExitCodes, CommandStatusIsPassedThrough) {
  auto r = supervise({}, {"sh", "-c", "exit 7"});
  EXPECT_EQ(r.status, 7) << r.describe();
}

TEST_F(ExitCodes, CommandKilledBySignalIs128PlusN) {
  auto r = supervise({}, {"sh", "-c", "kill -TERM $$"});
  EXPECT_EQ(r.status, 128 + SIGTERM) << r.describe();
  auto events = audit();
  bool end_signal = false;
  for (const auto& e : events)
    if (str(e, "category") == "session" && str(e, "operation") == "end")
      end_signal = e["session"]["exit"].value("signal", "") == "SIGTERM";
  EXPECT_TRUE(end_signal) << readFile(audit_);
}

TEST_F(ExitCodes, NotFoundIs127WithOneLine) {
  auto r = supervise({}, {"sv-e2e-no-such-command"});
  EXPECT_EQ(r.status, 127) << r.describe();
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "sv-e2e-no-such-command")) << r.describe();
}

TEST_F(ExitCodes, NotExecutableIs126) {
  writeFile(ws("notexec.sh"), "#!/bin/sh\necho ran\n", 0644);
  auto r = supervise({}, {"./notexec.sh"});
  EXPECT_EQ(r.status, 126) << r.describe();
  EXPECT_FALSE(contains(r.out, "ran")) << r.describe();
}

TEST_F(ExitCodes, PolicyJsonErrorIs2AndNothingRuns) {
  const std::string policy = root_ + "/bad.json";
  writeFile(policy, "{\n  \"version\": 1,\n  \"mode\": \"enforce\",,\n}\n");
  auto r = supervise({"--policy", policy}, {"touch", "marker"});
  EXPECT_EQ(r.status, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "bad.json:")) << "error should name file:line:col\n" << r.describe();
  EXPECT_FALSE(exists(ws("marker")));
}

TEST_F(ExitCodes, UnknownFlagIs2AndNothingRuns) {
  auto r = supervise({"--sv-e2e-no-such-flag"}, {"touch", "marker"});
  EXPECT_EQ(r.status, 2) << r.describe();
  EXPECT_FALSE(exists(ws("marker")));
}

// The CLI as a user types it: repeatable options right before `--`, and a
// command whose own arguments start with '-'.
class Cli : public E2eTest {};

TEST_F(Cli, RepeatableOptionBeforeDoubleDash) {
  const std::string audit = root_ + "/cli-audit.jsonl";
  for (const auto& sv_args :
       std::vector<std::vector<std::string>>{{"--audit-file", audit},
                                             {"--audit-file=" + audit},
                                             {"-o", "mode=enforce"},
                                             {"--quiet", "--audit-file", audit}}) {
    std::vector<std::string> argv{kSupervise};
    argv.insert(argv.end(), sv_args.begin(), sv_args.end());
    for (const char* a : {"--", "sh", "-c", "exit 7"}) argv.push_back(a);
    std::string shown;
    for (const auto& a : argv) shown += a + " ";
    SCOPED_TRACE(shown);
    auto r = plain(argv);
    EXPECT_EQ(r.status, 7) << r.describe();
  }
}

// ---------------------------------------------------------------------------
// 6, 7. Signals.

class Signals : public E2eTest {};

TEST_F(Signals, TermIsForwardedToTheCommand) {
  auto child = startSupervised(
      {"sh", "-c", "trap 'exit 42' TERM; touch ready; while :; do sleep 0.1; done"});
  ASSERT_TRUE(waitForFile(ws("ready"), 10000)) << child->wait(100).describe();
  ASSERT_EQ(::kill(child->pid(), SIGTERM), 0);
  auto r = child->wait(10000);
  EXPECT_FALSE(r.timed_out) << r.describe();
  EXPECT_EQ(r.status, 42) << r.describe();
}

// The command starts with the signal dispositions supervise was given: the
// SIGPIPE that supervise ignores for itself must not survive into the
// command's execve (`yes | head` would then fail with EPIPE). Only the
// standard signals are compared: glibc installs handlers for its internal
// real-time ones (32, 33) in every threaded process, supervise included.
TEST_F(Signals, CommandStartsWithTheCallersIgnoredSignals) {
  const std::vector<std::string> show{"grep", "^SigIgn", "/proc/self/status"};
  auto ignored = [](const RunResult& r) {
    const auto tab = r.out.find('\t');
    return tab == std::string::npos ? ~0ULL
                                    : std::stoull(r.out.substr(tab + 1), nullptr, 16) & 0xffffffffULL;
  };
  auto native = plain(show);
  ASSERT_EQ(native.status, 0) << native.describe();
  auto r = supervise({}, show);
  EXPECT_EQ(r.status, 0) << r.describe();
  EXPECT_EQ(ignored(r), ignored(native)) << r.out << " vs native " << native.out;
  EXPECT_EQ(ignored(r) & (1ULL << (SIGPIPE - 1)), 0u) << r.out;  // the tests run with SIGPIPE default
}

bool processGone(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  // A zombie waiting for its (new) parent to reap it runs nothing any more.
  std::string stat = readFile("/proc/" + std::to_string(pid) + "/stat");
  auto close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return true;
  char state = stat[close + 2];
  return state == 'Z' || state == 'X';
}

TEST_F(Signals, KillNineTakesTheTreeDown) {
  writeFile(ws(".env"), "SECRET=hunter2\n", 0600);
  const auto before = FileState::of(ws(".env"));
  // Two sleepers plus a writer that keeps trying .env, so that the window
  // between supervise's death and the tree's is attacked too.
  auto child = startSupervised(
      {"sh", "-c",
       "sleep 1000 & echo $! > pids.tmp; sleep 1000 & echo $! >> pids.tmp;"
       "(while :; do echo PWNED >> .env; sleep 0.01; done) 2>/dev/null & echo $! >> pids.tmp;"
       "mv pids.tmp pids; wait"});
  ASSERT_TRUE(waitForFile(ws("pids"), 10000)) << child->wait(100).describe();
  std::vector<pid_t> pids;
  {
    std::istringstream in(readFile(ws("pids")));
    pid_t p;
    while (in >> p) pids.push_back(p);
  }
  ASSERT_EQ(pids.size(), 3u) << readFile(ws("pids"));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(::kill(child->pid(), SIGKILL), 0);
  auto r = child->wait(5000);
  EXPECT_EQ(r.status, 128 + SIGKILL) << r.describe();

  const auto deadline = Clock::now() + std::chrono::seconds(2);
  std::vector<pid_t> alive = pids;
  while (!alive.empty() && Clock::now() < deadline) {
    std::erase_if(alive, processGone);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::string left;
  for (pid_t p : alive) left += std::to_string(p) + " ";
  EXPECT_TRUE(alive.empty()) << "still running 2 s after SIGKILL of supervise: " << left;
  for (pid_t p : alive) ::kill(p, SIGKILL);  // don't leak them into later tests
  EXPECT_EQ(FileState::of(ws(".env")), before);
}

// ---------------------------------------------------------------------------
// 8. Fail closed.

class FailClosed : public E2eTest, public testing::WithParamInterface<const char*> {};

TEST_P(FailClosed, MissingMechanismRefusesWith125) {
  RunOptions options;
  options.env.push_back(std::string("SUPERVISE_TEST_DISABLE=") + GetParam());
  auto r = supervise({}, {"touch", "marker"}, options);
  EXPECT_EQ(r.status, 125) << r.describe();
  EXPECT_FALSE(exists(ws("marker")))
      << "the command ran although " << GetParam() << " was reported missing";
  EXPECT_FALSE(r.err.empty()) << "refusal must say why";
}

// The filesystem floor is missing only when neither Landlock nor a private
// mount namespace is there (below); syscall mediation only when neither
// user-notify nor ptrace is there: --backend auto falls back from one to the other (below).
INSTANTIATE_TEST_SUITE_P(Features, FailClosed,
                         testing::Values("landlock,mountns", "seccomp-notify,ptrace", "cgroup", "bpf"),
                         [](const testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           std::erase(name, '-');
                           std::replace(name.begin(), name.end(), ',', '_');
                           return name;
                         });

// --backend auto where user-notify is missing: the ptrace backend decides,
// and says so (no silent fallback); the start event names it.
TEST_F(E2eTest, AutoFallsBackToPtraceWithoutUserNotify) {
  if (const char* b = std::getenv("SUPERVISE_BACKEND"); b && std::string_view(b) != "auto")
    GTEST_SKIP() << "the variant runs --backend " << b << ", not auto";
  RunOptions options;
  options.env.push_back("SUPERVISE_TEST_DISABLE=seccomp-notify");
  auto r = supervise({}, {"sh", "-c", "echo ok > marker; echo x > .env"}, options);
  EXPECT_EQ(r.status, 2) << r.describe();  // sh: the .env write failed
  EXPECT_EQ(readFile(ws("marker")), "ok\n") << r.describe();
  EXPECT_FALSE(exists(ws(".env"))) << r.describe();
  EXPECT_TRUE(contains(r.err, "the ptrace backend decides instead")) << r.describe();
  EXPECT_TRUE(contains(r.err, "denied write to .env")) << r.describe();
  bool named = false, ptrace_denial = false;
  for (const auto& e : audit()) {
    if (e.value("category", "") == "session" && e.value("operation", "") == "start")
      for (const auto& b : e["session"]["backends"]) named |= b == "ptrace";
    if (e.value("decision", "") == "deny" && e["file"].value("path", "").ends_with("/.env"))
      ptrace_denial |= e.value("enforced_by", "") == "ptrace";
  }
  EXPECT_TRUE(named) << "the start event's backends name ptrace";
  EXPECT_TRUE(ptrace_denial) << "the .env denial is enforced_by ptrace";
}

// Where Landlock is missing the roots are a private mount namespace: what no
// root names is absent, the system read-only, a protected name that exists
// a read-only mount; the start event names "mountns"; none of the floor's
// mounts is in the host's table.
TEST_F(E2eTest, WithoutLandlockTheRootsAreAPrivateMountNamespace) {
  writeFile(ws(".env"), "SECRET=1\n", 0600);
  // Reads are not notified here: only the floor keeps this one out.
  const std::string outside = "/var/cache/sv-floor-" + std::to_string(::getpid());
  writeFile(outside, "OUTSIDE\n", 0644);
  RunOptions options;
  options.env.push_back("SUPERVISE_TEST_DISABLE=landlock");
  auto r = supervise({}, {"sh", "-c",
                          "echo ok > marker; cat " + outside + "; test -e /usr/bin/sh && "
                          "echo usr; grep -c ' ro,' /proc/self/mountinfo >/dev/null && "
                          "grep -E ' [^ ]*/\\.env ro,' /proc/self/mountinfo >/dev/null && "
                          "echo env-ro"},
                     options);
  EXPECT_EQ(r.status, 0) << r.describe();
  EXPECT_EQ(readFile(ws("marker")), "ok\n") << r.describe();
  ::unlink(outside.c_str());
  EXPECT_FALSE(contains(r.out, "OUTSIDE")) << outside << " is in no root\n" << r.describe();
  EXPECT_TRUE(contains(r.out, "usr")) << r.describe();
  EXPECT_TRUE(contains(r.out, "env-ro")) << ".env is a read-only mount\n" << r.describe();
  EXPECT_EQ(readFile(ws(".env")), "SECRET=1\n");
  bool mountns = false, landlock = false;
  for (const auto& e : audit())
    if (e.value("category", "") == "session" && e.value("operation", "") == "start")
      for (const auto& b : e["session"]["backends"]) {
        mountns |= b == "mountns";
        landlock |= b == "landlock";
      }
  EXPECT_TRUE(mountns) << "the start event's backends name mountns";
  EXPECT_FALSE(landlock);
  // Other tests mount meanwhile (-j2): look for the floor's own mounts only.
  const std::string host_mounts = readFile("/proc/self/mountinfo");
  EXPECT_FALSE(contains(host_mounts, "supervise-root")) << host_mounts;
  EXPECT_FALSE(contains(host_mounts, ws(".env"))) << "the floor's mounts reached the host\n"
                                                   << host_mounts;
}

// ---------------------------------------------------------------------------
// 9. Audit mode.

class AuditMode : public E2eTest {};

TEST_F(AuditMode, WriteSucceedsAndIsRecordedAsWouldDeny) {
  writeFile(ws(".env"), "SECRET=hunter2\n", 0600);
  auto r = supervise({"-o", "mode=audit"}, {"bash", "-c", "echo PWNED > .env"});
  EXPECT_EQ(r.status, 0) << r.describe();
  EXPECT_EQ(readFile(ws(".env")), "PWNED\n");
  auto events = audit();
  EXPECT_TRUE(hasDecision(events, "would-deny", "deny-write-env")) << dumpEvents(events);
  EXPECT_FALSE(hasDecision(events, "deny", "deny-write-env")) << dumpEvents(events);
}

// audit.redact and the size limits on a real run: a secret passed as an
// argument and a path under a redacted directory never reach the audit file,
// in any event (session start, the shell's own file denial, the exec of its
// child), a 2000-byte argument is cut and flagged, and every event still
// validates against the schema.
TEST_F(AuditMode, RedactedArgvAndPathsNeverReachTheLog) {
  ASSERT_EQ(::mkdir(ws("secrets").c_str(), 0755), 0);
  const std::string key = ws("secrets/db.key");
  writeFile(key, "k\n");
  const std::string long_arg(2000, 'L');
  auto r = supervise({"-o", R"(audit.redact=["--password=*", "**/secrets/**"])", "-o",
                      "filesystem.denyWrite+=secrets/**"},
                     {"sh", "-c", "echo x > \"$2\"; /bin/true \"$1\"", "sh",
                      "--password=hunter2", key, long_arg});
  EXPECT_EQ(r.status, 0) << r.describe();
  EXPECT_EQ(readFile(key), "k\n");
  const std::string log = readFile(audit_);
  EXPECT_EQ(log.find("hunter2"), std::string::npos) << log;
  EXPECT_EQ(log.find("db.key"), std::string::npos) << log;

  const auto events = audit();
  ASSERT_FALSE(events.empty());
  const json& start = events.front();
  EXPECT_EQ(start["session"]["command"][4], "[REDACTED]") << start.dump();
  EXPECT_EQ(start["session"]["command"][5], "[REDACTED]") << start.dump();
  EXPECT_EQ(start["session"]["policy"]["audit"]["redact"],
            json::array({"--password=*", "**/secrets/**"}));
  bool path_redacted = false, exec_redacted = false, cut = false;
  for (const auto& e : events) {
    if (str(e, "decision") == "deny" && e.contains("file"))
      path_redacted |= e["file"].value("path", "") == "[REDACTED]";
    if (e.contains("exec") && e["exec"]["argv"].size() == 2)
      exec_redacted |= e["exec"]["argv"][1] == "[REDACTED]";
    if (e.contains("process") && e["process"]["argv"].size() == 7) {  // the shell
      cut |= e.value("truncated", false) && e["process"]["argv"][6] == long_arg.substr(0, 1024);
    }
  }
  EXPECT_TRUE(path_redacted) << dumpEvents(events);
  EXPECT_TRUE(exec_redacted) << log;
  EXPECT_TRUE(cut) << log;

  const std::string cmd = std::string("python3 ") + SV_VALIDATOR + " " + SV_SCHEMA + " " +
                          audit_ + " --require session:start,file,session:end 1>&2";
  const int st = std::system(cmd.c_str());
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << log;
}

// ---------------------------------------------------------------------------
// 10. Network.

// Accepts TCP connections on ip:ephemeral (optionally inside a netns: setns
// of the network namespace is per thread) and collects what they send.
class Listener {
 public:
  ~Listener() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

  // Returns "" or the error.
  std::string start(const std::string& ip, const std::string& netns) {
    std::promise<std::string> ready;
    auto started = ready.get_future();
    thread_ = std::thread([this, ip, netns, &ready] {
      if (!netns.empty()) {
        int nfd = ::open(netns.c_str(), O_RDONLY | O_CLOEXEC);
        if (nfd < 0 || ::setns(nfd, CLONE_NEWNET) != 0) {
          ready.set_value("setns " + netns + ": " + std::strerror(errno));
          return;
        }
        ::close(nfd);
      }
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      ::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
      socklen_t len = sizeof addr;
      if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
          ::listen(fd, 8) != 0 ||
          ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        ready.set_value(std::string("listen on ") + ip + ": " + std::strerror(errno));
        if (fd >= 0) ::close(fd);
        return;
      }
      port_ = ntohs(addr.sin_port);
      ready.set_value("");
      serve(fd);
      ::close(fd);
    });
    return started.get();
  }

  uint16_t port() const { return port_; }

  // Waits until the received bytes contain `what` or the timeout passes.
  bool waitFor(const std::string& what, int timeout_ms) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (Clock::now() < deadline) {
      if (contains(received(), what)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  std::string received() {
    std::lock_guard lock(mu_);
    return data_;
  }

 private:
  void serve(int fd) {
    while (!stop_) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      char buf[256];
      for (;;) {
        pollfd q{c, POLLIN, 0};
        if (::poll(&q, 1, 2000) <= 0) break;
        ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        std::lock_guard lock(mu_);
        data_.append(buf, size_t(n));
      }
      ::close(c);
    }
  }

  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<uint16_t> port_{0};
  std::mutex mu_;
  std::string data_;
};

class Network : public E2eTest {
 protected:
  void TearDown() override {
    for (const auto& ns : namespaces_) plain({"ip", "netns", "del", ns});
    E2eTest::TearDown();
  }

  // Two namespaces joined by a veth pair: the supervised side (198.51.100.2)
  // and a test host (198.51.100.1), no default route: nothing can leave.
  void makeNamespaces() {
    if (::access("/usr/sbin/ip", X_OK) != 0 && ::access("/sbin/ip", X_OK) != 0 &&
        ::access("/usr/bin/ip", X_OK) != 0)
      GTEST_SKIP() << "needs iproute2 `ip`: not found";
    const std::string id = std::to_string(::getpid());
    side_ = "sv-e2e-" + id;
    host_ = "sv-e2e-" + id + "-host";
    const std::string va = "sve" + id + "a", vh = "sve" + id + "h";
    for (const auto& ns : {side_, host_}) {
      auto r = plain({"ip", "netns", "add", ns});
      ASSERT_EQ(r.status, 0) << r.describe();
      namespaces_.push_back(ns);
    }
    const std::vector<std::vector<std::string>> steps = {
        {"ip", "link", "add", va, "type", "veth", "peer", "name", vh},
        {"ip", "link", "set", va, "netns", side_},
        {"ip", "link", "set", vh, "netns", host_},
        {"ip", "-n", side_, "addr", "add", "198.51.100.2/24", "dev", va},
        {"ip", "-n", side_, "link", "set", va, "up"},
        {"ip", "-n", side_, "link", "set", "lo", "up"},
        {"ip", "-n", host_, "addr", "add", "198.51.100.1/24", "dev", vh},
        {"ip", "-n", host_, "link", "set", vh, "up"},
        {"ip", "-n", host_, "link", "set", "lo", "up"},
    };
    for (const auto& step : steps) {
      auto r = plain(step);
      if (r.status != 0) {
        plain({"ip", "link", "del", va});
        FAIL() << "network setup failed\n" << r.describe();
      }
    }
  }

  std::string side_, host_;
  std::vector<std::string> namespaces_;
};

TEST_F(Network, LoopbackTcpIsAllowed) {
  Listener listener;
  ASSERT_EQ(listener.start("127.0.0.1", ""), "");
  auto r = bash("echo hi > /dev/tcp/127.0.0.1/" + std::to_string(listener.port()));
  EXPECT_EQ(r.status, 0) << r.describe();
  EXPECT_TRUE(listener.waitFor("hi\n", 3000)) << "listener got: " << listener.received();
}

// One process connects, execs another binary and connects again: the second
// event names the new image (the session's process cache drops a process at
// its exec, and exec events are drained before network events).
TEST_F(Network, ConnectAfterExecNamesTheNewImage) {
  Listener listener;
  ASSERT_EQ(listener.start("127.0.0.1", ""), "");
  const std::string port = std::to_string(listener.port());
  auto r = bash("echo one > /dev/tcp/127.0.0.1/" + port +
                "; exec /usr/bin/python3 -c \"import socket; socket.create_connection(('127.0.0.1', " + port +
                ")).sendall(b'two\\n')\"");
  ASSERT_EQ(r.status, 0) << r.describe();
  ASSERT_TRUE(listener.waitFor("two\n", 3000)) << listener.received();
  std::vector<json> connects;
  for (const auto& e : audit())
    if (str(e, "category") == "network" && e["network"].value("port", 0) == listener.port())
      connects.push_back(e);
  ASSERT_EQ(connects.size(), 2u) << readFile(audit_);
  EXPECT_EQ(connects[0]["process"]["pid"], connects[1]["process"]["pid"]) << "one process";
  // Not asserted: the first connect's exe. Network events carry no image, so
  // a reader slower than the exec (the ASan build) names it from /proc after
  // the exec, as python3 too (known limit, docs/audit-events.md).
  EXPECT_TRUE(contains(connects[1]["process"].value("exe", ""), "/usr/bin/python3"))
      << connects[1].dump();
}

TEST_F(Network, NonLoopbackConnectIsDeniedAndAudited) {
  makeNamespaces();
  if (IsSkipped() || HasFatalFailure()) return;
  Listener listener;
  ASSERT_EQ(listener.start("198.51.100.1", "/run/netns/" + host_), "");
  const std::string target = "/dev/tcp/198.51.100.1/" + std::to_string(listener.port());

  // Control, unsupervised: the test host is reachable, so a failure below is the policy's.
  RunOptions in_ns;
  in_ns.netns = "/run/netns/" + side_;
  auto control = plain({"bash", "-c", "echo control > " + target}, in_ns);
  ASSERT_EQ(control.status, 0) << control.describe();
  ASSERT_TRUE(listener.waitFor("control\n", 3000)) << listener.received();

  auto r = bash("echo hi > " + target, in_ns);
  EXPECT_NE(r.status, 0) << r.describe();
  EXPECT_TRUE(contains(r.err, "denied")) << r.describe();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(contains(listener.received(), "hi\n")) << "the connection got through";
  // Only inet events: without HOME, bash asks nscd for the user (a unix
  // socket outside the writable roots), and that refusal is audited too.
  bool denied = false;
  for (const auto& e : audit())
    if (str(e, "category") == "network" && str(e, "decision") == "deny" &&
        e["network"].value("family", "") != "unix") {
      denied = true;
      EXPECT_EQ(e["network"].value("ip", ""), "198.51.100.1") << e.dump();
      EXPECT_EQ(e["network"].value("port", 0), listener.port()) << e.dump();
    }
  EXPECT_TRUE(denied) << "no network deny event\n" << readFile(audit_);
}

// Address families (docs/network.md, "Address families"): under network
// modes none, localhost and allowlist only unix, inet/inet6 (as the mode
// allows) and netlink route sockets can be created; every other family, and
// netlink with another protocol, fails with EPERM and leaves one deny event
// (operation socket, enforced_by seccomp, rule default-deny-socket-family).
// Sockets are only created, never connected.
class SocketFamilies : public E2eTest, public testing::WithParamInterface<std::string> {};

TEST_P(SocketFamilies, OnlyTheFamiliesTheModeNamesCanBeCreated) {
  const std::string mode = GetParam();
  // name family type protocol; each line printed "name ok" or "name errno=N".
  const std::string script = R"(
import socket, sys
cases = [("unix", 1, socket.SOCK_STREAM, 0), ("unixpair", 1, socket.SOCK_STREAM, -1),
         ("inet", 2, socket.SOCK_STREAM, 0), ("inet6", 10, socket.SOCK_DGRAM, 0),
         ("netlink-route", 16, socket.SOCK_RAW, 0), ("netlink-audit", 16, socket.SOCK_RAW, 9),
         ("netlink-uevent", 16, socket.SOCK_DGRAM, 15), ("vsock", 40, socket.SOCK_STREAM, 0),
         ("packet", 17, socket.SOCK_DGRAM, 0), ("alg", 38, socket.SOCK_SEQPACKET, 0),
         ("bluetooth", 31, socket.SOCK_STREAM, 0), ("xdp", 44, socket.SOCK_RAW, 0),
         ("vsockpair", 40, socket.SOCK_STREAM, -1)]
for name, fam, typ, proto in cases:
    try:
        if proto < 0:
            a, b = socket.socketpair(fam, typ); a.close(); b.close()
        else:
            socket.socket(fam, typ, proto).close()
        print(name, "ok")
    except OSError as e:
        print(name, "errno=%d" % e.errno)
)";
  auto r = supervise({"-o", "network.mode=" + mode}, {"/usr/bin/python3", "-c", script});
  ASSERT_EQ(r.status, 0) << r.describe();
  auto result = [&](const std::string& name) {
    std::istringstream in(r.out);
    std::string line;
    while (std::getline(in, line))
      if (line.rfind(name + " ", 0) == 0) return line.substr(name.size() + 1);
    return std::string("missing");
  };
  const bool inet_allowed = mode != "none";
  EXPECT_EQ(result("unix"), "ok") << r.describe();
  EXPECT_EQ(result("unixpair"), "ok") << r.describe();
  EXPECT_EQ(result("inet"), inet_allowed ? "ok" : "errno=1") << r.describe();
  EXPECT_EQ(result("inet6"), inet_allowed ? "ok" : "errno=1") << r.describe();
  EXPECT_EQ(result("netlink-route"), "ok") << r.describe();
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"netlink-audit", "netlink"}, {"netlink-uevent", "netlink"}, {"vsock", "vsock"},
      {"packet", "packet"},         {"alg", "alg"},                {"bluetooth", "bluetooth"},
      {"xdp", "xdp"},               {"vsockpair", "vsock"}};
  for (const auto& [name, family] : refused)
    EXPECT_EQ(result(name), "errno=1") << name << "\n" << r.describe();
  EXPECT_TRUE(contains(r.err, "denied socket of family vsock (rule default-deny-socket-family"))
      << r.describe();

  // One deny event per refused family socket, each with its family, from
  // whoever answers the seccomp filter's stops (user-notify, or the tracer).
  const std::string decider = test::seccompStopDecider();
  std::vector<json> events;
  for (const auto& e : audit())
    if (str(e, "category") == "network" && str(e, "operation") == "socket" &&
        str(e, "enforced_by") == decider)
      events.push_back(e);
  ASSERT_EQ(events.size(), refused.size()) << dumpEvents(audit());
  for (size_t i = 0; i < refused.size(); ++i) {
    const json& e = events[i];
    EXPECT_EQ(str(e, "decision"), "deny") << e.dump();
    EXPECT_EQ(str(e, "errno"), "EPERM") << e.dump();
    EXPECT_EQ(ruleId(e), "default-deny-socket-family") << e.dump();
    EXPECT_EQ(e["rule"].value("name", ""),
              "default: address family not allowed by network.mode " + mode)
        << e.dump();
    EXPECT_EQ(e["network"].value("family", ""), refused[i].second) << e.dump();
    EXPECT_EQ(e["syscall"].value("name", ""),
              refused[i].first == "vsockpair" ? "socketpair" : "socket")
        << e.dump();
  }
  EXPECT_EQ(events[0]["network"].value("proto", ""), "audit") << events[0].dump();
  EXPECT_EQ(events[1]["network"].value("proto", ""), "kobject_uevent") << events[1].dump();
}

INSTANTIATE_TEST_SUITE_P(Modes, SocketFamilies, testing::Values("none", "localhost", "allowlist"));

// network.mode all names every family: nothing is refused by family (packet
// sockets still need CAP_NET_RAW, which the tree does not have).
TEST_F(Network, ModeAllLeavesEveryFamilyToTheKernel) {
  auto r = supervise({"-o", "network.mode=all"},
                     {"/usr/bin/python3", "-c",
                      "import socket\nsocket.socket(40, socket.SOCK_STREAM).close()\n"
                      "socket.socket(16, socket.SOCK_RAW, 9).close()\nprint('ok')"});
  EXPECT_EQ(r.status, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "ok")) << r.describe();
  for (const auto& e : audit())
    EXPECT_FALSE(str(e, "operation") == "socket" && str(e, "decision") == "deny") << e.dump();
}

// A pathname unix socket outside the writable roots is refused and audited
// whether or not it exists; the stderr line appears only for one that does:
// connecting to a missing one fails anyway, and glibc tries nscd's socket on
// every user lookup (`id`, `ls -l`), which must not fill the terminal.
TEST_F(Network, UnixSocketDenialIsShownOnlyForAnExistingSocket) {
  const std::string tag = std::to_string(::getpid());
  const std::string present = "/run/sv-e2e-" + tag + ".sock";
  const std::string missing = "/run/sv-e2e-missing-" + tag + ".sock";
  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, present.c_str(), present.size() + 1);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
  ASSERT_EQ(::listen(listener, 4), 0);
  auto r = supervise({}, {"/usr/bin/python3", "-c",  // not a pyenv shim outside the roots
                          "import socket, sys\n"
                          "for p in sys.argv[1:]:\n"
                          "  s = socket.socket(socket.AF_UNIX)\n"
                          "  try: s.connect(p); print('connected')\n"
                          "  except OSError as e: print(e.errno)\n",
                          present, missing});
  ::close(listener);
  ::unlink(present.c_str());
  if (r.out == "connected\n2\n" && !tracer::probeCgroupUnixHooks(nullptr))
    GTEST_SKIP() << "pathname unix sockets are not judged on this kernel (no connect_unix hook)";
  EXPECT_EQ(r.status, 0) << r.describe();
  EXPECT_EQ(r.out, std::to_string(EPERM) + "\n" + std::to_string(EPERM) + "\n") << r.describe();
  EXPECT_TRUE(contains(r.err, "denied connect to unix socket " + present)) << r.describe();
  EXPECT_FALSE(contains(r.err, missing)) << r.describe();
  int audited = 0;
  for (const auto& e : audit())
    if (str(e, "category") == "network" && str(e, "decision") == "deny" &&
        ruleId(e) == "unix-socket-outside-writable-roots") {
      const std::string path = e["network"].value("unix_path", "");
      audited += path == present || path == missing;  // (python may ask nscd too)
    }
  EXPECT_EQ(audited, 2) << readFile(audit_);
}

// ---------------------------------------------------------------------------
// Emulation corner cases: the supervisor performs the syscall itself, so it
// must keep the kernel's semantics and must never block on one process.

class Emulation : public E2eTest {};

// A writer opening a FIFO before its reader blocks in open(2). If the
// supervisor did that open on its loop, every other notified syscall of the
// tree (here the reader's own write-intent open of another file) would wait
// forever. The writer's open must be finished off the loop.
TEST_F(Emulation, FifoWriterWaitingForAReaderStallsNobody) {
  ASSERT_EQ(::mkfifo(ws("p").c_str(), 0644), 0);
  RunOptions options;
  options.timeout_ms = 20000;
  auto r = bash("(echo through-the-fifo > p) & sleep 0.3; echo other > other.txt; cat p; wait",
                options);
  EXPECT_EQ(r.status, 0) << r.describe();
  EXPECT_EQ(r.out, "through-the-fifo\n") << r.describe();
  EXPECT_EQ(readFile(ws("other.txt")), "other\n");
}

// rmdir("d/.") is EINVAL in the kernel; an emulation that normalised the
// path to "d" would remove the directory instead.
TEST_F(Emulation, RmdirOfDotKeepsKernelSemantics) {
  ASSERT_EQ(::mkdir(ws("d").c_str(), 0755), 0);
  auto r = supervise({}, {"/usr/bin/python3", "-c",
                          "import os\ntry:\n  os.rmdir('d/.')\nexcept OSError as e:\n"
                          "  print(e.errno)\n"});
  EXPECT_EQ(r.status, 0) << r.describe();
  EXPECT_EQ(r.out, std::to_string(EINVAL) + "\n") << r.describe();
  struct stat st;
  EXPECT_EQ(::stat(ws("d").c_str(), &st), 0) << "d was removed";
}

// The command's umask applies to what the supervisor creates for it.
TEST_F(Emulation, CreatesHonourTheCommandsUmask) {
  auto r = bash("umask 077; echo x > private.txt; mkdir privdir");
  ASSERT_EQ(r.status, 0) << r.describe();
  struct stat st;
  ASSERT_EQ(::stat(ws("private.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(ws("privdir").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

// The umask the command starts with applies without a look at each
// creator's (supervisor/notify/target_umask.h) until the tree sets another:
// then each create applies its creator's, in the process that set it, its
// children, and the processes that never did.
TEST_F(Emulation, CreatesApplyTheStartUmaskUntilTheTreeSetsAnother) {
  RunOptions options;
  options.umask = 027;
  auto r = supervise({}, {"bash", "-c",
                          "echo > start.txt; mkdir startdir; "
                          "(umask 077; echo > set.txt; bash -c 'echo > child.txt'); "
                          "echo > after.txt; umask 002; echo > last.txt"},
                     options);
  ASSERT_EQ(r.status, 0) << r.describe();
  const std::pair<const char*, unsigned> expected[] = {
      {"start.txt", 0640}, {"startdir", 0750}, {"set.txt", 0600},
      {"child.txt", 0600}, {"after.txt", 0640}, {"last.txt", 0664}};
  for (const auto& [name, mode] : expected) {
    struct stat st;
    ASSERT_EQ(::stat(ws(name).c_str(), &st), 0) << name;
    EXPECT_EQ(st.st_mode & 0777, mode) << name;
  }
}

// The exec re-check compares the file about to run, as the kernel names it
// (its superblock's device and inode), with the file approved. On btrfs stat
// reports another device than the superblock's, so the approved identity
// comes from a mount table: the command's own, where it has a namespace of
// its own (tracer/bpf/exec_file_id.h). Without that every exec of a file on
// btrfs was killed.
TEST_F(E2eTest, ExecsOfFilesOnBtrfsRun) {
  std::ifstream filesystems("/proc/filesystems");
  const std::string known((std::istreambuf_iterator<char>(filesystems)), {});
  if (known.find("\tbtrfs\n") == std::string::npos) GTEST_SKIP() << "the kernel has no btrfs";
  if (plain({"sh", "-c", "command -v mkfs.btrfs"}).status != 0)
    GTEST_SKIP() << "mkfs.btrfs missing (btrfs-progs; tools/setup installs it)";
  const std::string image = ws("../btrfs.img"), mnt = ws("btrfs");
  ASSERT_EQ(plain({"truncate", "-s", "128M", image}).status, 0);
  auto made = plain({"mkfs.btrfs", "-q", "-f", image});
  ASSERT_EQ(made.status, 0) << made.describe();
  ASSERT_EQ(::mkdir(mnt.c_str(), 0755), 0);
  auto mounted = plain({"mount", "-o", "loop", image, mnt});
  ASSERT_EQ(mounted.status, 0) << mounted.describe();
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{mnt};
  fs::copy_file("/bin/true", mnt + "/true-copy");
  fs::permissions(mnt + "/true-copy", fs::perms(0755));
  // The case proves something only where stat's device is not the mount's.
  struct stat st;
  ASSERT_EQ(::stat(mnt.c_str(), &st), 0);
  auto listed = plain({"sh", "-c", "grep ' " + mnt + " ' /proc/self/mountinfo | cut -d' ' -f3"});
  const std::string stat_dev =
      std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev)) + "\n";
  if (listed.out == stat_dev) GTEST_SKIP() << "btrfs reports its superblock's device here";
  auto r = supervise({}, {"sh", "-c", "./btrfs/true-copy && echo ran"});
  EXPECT_EQ(r.status, 0) << r.describe();
  EXPECT_EQ(r.out, "ran\n") << r.describe();
}

// Audit mode never blocks: the connect to the test host goes through, and the
// in-kernel decision is recorded as would-deny.
TEST_F(Network, AuditModeRecordsWouldDenyAndConnects) {
  makeNamespaces();
  if (IsSkipped() || HasFatalFailure()) return;
  Listener listener;
  ASSERT_EQ(listener.start("198.51.100.1", "/run/netns/" + host_), "");
  const std::string target = "/dev/tcp/198.51.100.1/" + std::to_string(listener.port());
  RunOptions in_ns;
  in_ns.netns = "/run/netns/" + side_;
  auto r = supervise({"-o", "mode=audit"}, {"bash", "-c", "echo audited > " + target}, in_ns);
  EXPECT_EQ(r.status, 0) << r.describe();
  EXPECT_TRUE(listener.waitFor("audited\n", 3000)) << listener.received();
  bool would_deny = false;
  for (const auto& e : audit())
    if (str(e, "category") == "network" && str(e, "decision") == "would-deny") would_deny = true;
  EXPECT_TRUE(would_deny) << "no network would-deny event\n" << readFile(audit_);
}

// exec rules and profiles: touch is denied in the base policy and allowed in
// the profile that an exec of env switches into; the profile is inherited by
// env's children across fork and exec.
// An exec's allow events are written once its answer is sent; a refusal
// decided after them still comes after them in the trail. A script whose
// interpreter an exec rule denies: the script's allow, then the
// interpreter's deny, each with the calling process.
TEST_F(Emulation, AnExecsEventsKeepTheOrderOfItsDecisions) {
  const std::string policy = ws("policy.json");
  writeFile(policy, R"({
  "version": 1,
  "exec": {"deny": [{"path": "/usr/bin/touch", "id": "no-touch", "reason": "not here"}]}
})");
  writeFile(ws("run-touch"), "#!/usr/bin/touch\n", 0755);
  auto r = supervise({"--policy", policy}, {"bash", "-c", "./run-touch x; echo $?"});
  EXPECT_EQ(r.status, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "126")) << r.describe();
  EXPECT_FALSE(fs::exists(ws("x")));
  uint64_t script_seq = 0, interpreter_seq = 0;
  for (const auto& e : audit()) {
    if (str(e, "category") != "exec") continue;
    const std::string path = e.contains("exec") ? e["exec"].value("path", "") : "";
    if (path == ws("run-touch") && str(e, "decision") == "allow") {
      script_seq = e.value("seq", uint64_t{0});
      EXPECT_EQ(e["process"].value("exe", ""), "/usr/bin/bash") << e.dump();
    }
    if (path == "/usr/bin/touch" && str(e, "decision") == "deny")
      interpreter_seq = e.value("seq", uint64_t{0});
  }
  EXPECT_GT(script_seq, 0u) << readFile(audit_);
  EXPECT_EQ(interpreter_seq, script_seq + 1) << readFile(audit_);
}

TEST_F(Emulation, ExecRulesAndProfileSwitching) {
  const std::string policy = ws("policy.json");
  writeFile(policy, R"({
  "version": 1,
  "exec": {
    "deny": [{"path": "/usr/bin/touch", "id": "no-touch", "reason": "touch only under env"}],
    "switch": [{"match": "/usr/bin/env", "profile": "envp"}]
  },
  "profiles": {"envp": {"exec": {"allow": ["/usr/bin/touch"]}}}
})");
  auto denied = supervise({"--policy", policy}, {"bash", "-c", "/usr/bin/touch a"});
  EXPECT_NE(denied.status, 0) << denied.describe();
  EXPECT_TRUE(contains(denied.err, "denied exec of /usr/bin/touch (rule no-touch: touch only under env)"))
      << denied.describe();
  EXPECT_FALSE(fs::exists(ws("a")));
  bool audited = false;
  for (const auto& e : audit())
    if (str(e, "category") == "exec" && str(e, "decision") == "deny" &&
        e["rule"].value("id", "") == "no-touch")
      audited = true;
  EXPECT_TRUE(audited) << readFile(audit_);

  auto direct = supervise({"--policy", policy}, {"/usr/bin/env", "/usr/bin/touch", "b"});
  EXPECT_EQ(direct.status, 0) << direct.describe();
  EXPECT_TRUE(fs::exists(ws("b")));
  auto inherited =
      supervise({"--policy", policy}, {"/usr/bin/env", "bash", "-c", "/usr/bin/touch c"});
  EXPECT_EQ(inherited.status, 0) << inherited.describe();
  EXPECT_TRUE(fs::exists(ws("c")));
  // A profile belongs to the process: a thread other than the main one that
  // execs is judged by it too (the notification names the thread's id).
  auto threaded = supervise(
      {"--policy", policy},
      {"/usr/bin/env", "/usr/bin/python3", "-c",
       "import os, threading\n"
       "t = threading.Thread(target=lambda: os.execv('/usr/bin/touch', ['touch', 'd']))\n"
       "t.start(); t.join()"});
  EXPECT_EQ(threaded.status, 0) << threaded.describe();
  EXPECT_TRUE(fs::exists(ws("d")));
}

}  // namespace
}  // namespace sv::e2e
