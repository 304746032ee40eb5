// Acceptance of the BPF-LSM backend through the real binary: `supervise
// --backend bpf-lsm` on the default code-sandbox preset, with every route to
// a protected file (.env, .env.local, .git/config, .git/hooks/x), reads and
// writes outside the roots, exec outside the roots, profile switching on
// exec, loopback-only network and pathname unix sockets judged on the peer.
// Each attempt is one syscall made by lsm_routes (its exit status is the
// errno), so every check is exact: the errno, the file's content afterwards,
// and the deny event in the audit file with `enforced_by: bpf-lsm` and the
// rule's id.
//
// The BPF LSM only loads in the VM (tools/vm/run, which sets
// SV_REQUIRE_BPF_LSM=1: a skip is then a failure). On a host without it the
// decision tests skip with the probe's reason, and the fail-closed test runs
// instead: `--backend bpf-lsm` must refuse with exit 125 before the command
// runs.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/common/serve_daemon.h"
#include "tests/integration/lsm/lsm_test_util.h"

extern char** environ;

namespace sv {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kSupervise = SV_SUPERVISE_BIN;
constexpr const char* kRoutes = SV_LSM_ROUTES_BIN;

using lsm_test::lsmProbe;
using lsm_test::missingPathHooks;
using lsm_test::requireLsm;

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

struct SessionRun {
  int status = -1;  // exit code, or 128+signal
  std::string out, err;
  std::vector<json> events;
  // "route target" → errno, from the script's "R <route> <target> <rc>" lines.
  std::map<std::string, int> rc;
};

class LsmSession : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) {
      if (requireLsm()) FAIL() << "SV_REQUIRE_BPF_LSM=1 but not root";
      GTEST_SKIP() << "needs root: euid " << geteuid();
    }
    root_ = lsm_test::makeScratchDir("sv-lsm-session");
    ASSERT_FALSE(root_.empty()) << "mkdtemp: " << std::strerror(errno);
    ws_ = root_ + "/ws";
    outside_ = root_ + "/outside";
    fs::create_directories(ws_ + "/.git/hooks");
    fs::create_directories(ws_ + "/sub");
    fs::create_directories(outside_);
    for (const auto& p : protectedFiles()) writeFile(ws_ + "/" + p, "original " + p + "\n");
    writeFile(ws_ + "/ok.txt", "ok\n");
    writeFile(outside_ + "/data", "outside\n");
    // The helper in the workspace (run by R, see supervise()) and outside the roots.
    fs::copy_file(kRoutes, outside_ + "/prog");
    fs::copy_file(kRoutes, ws_ + "/prog");
  }

  void TearDown() override {
    if (!root_.empty()) {
      std::error_code ec;
      fs::remove_all(root_, ec);
    }
  }

  void requireBpfLsm() {
    if (!lsmProbe().first) {
      if (requireLsm())
        FAIL() << "SV_REQUIRE_BPF_LSM=1 but the BPF LSM is unusable: " << lsmProbe().second;
      GTEST_SKIP() << "needs the BPF LSM: " << lsmProbe().second;
    }
  }

  // A policy file where tools/switcher (a copy of lsm_routes) switches to
  // profile p, whose writable root lifts the base's deny of protected/**;
  // `exec_rules` go before the switch rule in "exec".
  std::string switcherPolicy(const std::string& exec_rules = "") {
    fs::create_directories(ws_ + "/tools");
    fs::create_directories(ws_ + "/protected");
    fs::copy_file(kRoutes, ws_ + "/tools/switcher");
    const std::string prot = ws_ + "/protected", policy_file = root_ + "/policy.json";
    writeFile(policy_file, R"({"version": 1,
      "filesystem": {"denyWrite": [{"path": ")" + prot + R"(/**", "id": "deny-protected"}]},
      "exec": {)" + exec_rules + R"( "switch": [{"match": ")" + ws_ + R"(/tools/switcher", "profile": "p"}]},
      "profiles": {"p": {"filesystem": {"writableRoots": [")" + prot + R"("]}}}})");
    return policy_file;
  }

  static std::vector<std::string> protectedFiles() {
    return {".env", ".env.local", ".git/config", ".git/hooks/x"};
  }

  // Runs `supervise [args] -- /bin/sh -c script` in the workspace. In the
  // script, `R route target [arg]` runs one lsm_routes attempt and records
  // its errno under "route target".
  SessionRun supervise(const std::vector<std::string>& args, const std::string& script) {
    SessionRun r;
    const std::string n = std::to_string(++runs_);
    const std::string audit = root_ + "/audit-" + n + ".jsonl";
    const std::string out = root_ + "/out-" + n, err = root_ + "/err-" + n;
    // The workspace's copy: the build tree may be outside the executable roots.
    const std::string prelude =
        "R() { op=$1; t=$2; \"" + ws_ + "/prog\" \"$@\"; echo \"R $op $t $?\"; }\n";
    std::vector<std::string> argv{kSupervise, "--audit-file", audit};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--", "/bin/sh", "-c", prelude + script});
    pid_t pid = fork();
    if (pid == 0) {
      if (chdir(ws_.c_str()) != 0) _exit(120);
      int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0) _exit(121);
      std::vector<char*> cargv;
      for (auto& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      execve(kSupervise, cargv.data(), environ);
      _exit(122);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = readFile(out);
    r.err = readFile(err);
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream f(line);
      std::string tag, op, target;
      int rc = -1;
      if (f >> tag >> op >> target >> rc && tag == "R") r.rc[op + " " + target] = rc;
    }
    std::istringstream audit_lines(readFile(audit));
    for (std::string line; std::getline(audit_lines, line);)
      if (!line.empty()) r.events.push_back(json::parse(line, nullptr, false));
    return r;
  }

  // A script line running every "op arg..." item in one lsm_routes process
  // (TCG makes each exec of a dynamic binary cost about a second).
  std::string batch(const std::vector<std::string>& items) const {
    std::string line = "\"" + ws_ + "/prog\" batch";
    for (const auto& item : items) line += " '" + item + "'";
    return line + "\n";
  }

  // The decision event for `target` (file, exec or network) with `decision`,
  // and when given, from backend `by` for rule `rule`.
  static const json* find(const SessionRun& r, const std::string& decision,
                          const std::string& target, const std::string& by = "",
                          const std::string& rule = "") {
    for (const auto& e : r.events) {
      if (e.is_discarded() || e.value("decision", "") != decision) continue;
      if (!by.empty() && e.value("enforced_by", "") != by) continue;
      if (!rule.empty() && (!e.contains("rule") || e["rule"].value("id", "") != rule)) continue;
      for (const char* part : {"file", "exec"})
        if (e.contains(part) && e[part].value("path", "") == target) return &e;
      if (e.contains("network") && e["network"].value("unix_path", "") == target) return &e;
      if (e.contains("network") &&
          e["network"].value("ip", "") + ":" + std::to_string(e["network"].value("port", -1)) ==
              target)
        return &e;
    }
    return nullptr;
  }

  // Where this kernel's filter lacks a path_* hook (6.1: bpf_d_path is
  // refused there; lsm_test_util.h, missingPathHooks()) the session keeps
  // every write route on user-notify: its denials are enforced_by seccomp.
  static std::string writeBackend() {
    return missingPathHooks().empty() ? "bpf-lsm" : "seccomp";
  }

  // Files and unix peers are refused with EACCES, connects and sends to an
  // address with EPERM (as the cgroup programs refuse them).
  static void expectDenied(const SessionRun& r, const std::string& key, const std::string& target,
                           const std::string& rule, const std::string& by = "bpf-lsm",
                           int err = EACCES) {
    auto it = r.rc.find(key);
    ASSERT_NE(it, r.rc.end()) << key << " did not run; stdout:\n" << r.out;
    EXPECT_EQ(it->second, err) << key;
    // Several routes hit one file: the event of this route's backend and rule.
    const json* e = find(r, "deny", target, by, rule);
    if (!e && by == "bpf-lsm") e = find(r, "deny", target, writeBackend(), rule);
    ASSERT_NE(e, nullptr) << "no deny event by " << by << " for rule " << rule << " on "
                          << target << " (" << key << ")";
    EXPECT_EQ(e->value("errno", ""), err == EPERM ? "EPERM" : "EACCES") << e->dump();
    // Either backend names the call (bpf-lsm: the task's orig_ax).
    EXPECT_FALSE(e->value(json::json_pointer("/syscall/name"), std::string()).empty())
        << e->dump();
  }

  std::string root_, ws_, outside_;
  int runs_ = 0;
};

TEST_F(LsmSession, ForcedBackendFailsClosedWhereUnavailable) {
  // In the VM the BPF LSM is there by construction: no probe (seconds under TCG).
  if (requireLsm()) GTEST_SKIP() << "SV_REQUIRE_BPF_LSM=1: the BPF LSM is usable here";
  if (lsmProbe().first) GTEST_SKIP() << "the BPF LSM is usable here: " << lsmProbe().second;
  const std::string marker = ws_ + "/ran";
  SessionRun r = supervise({"--backend", "bpf-lsm"}, "touch " + marker);
  EXPECT_EQ(r.status, 125) << r.err;
  EXPECT_NE(r.err.find("bpf-lsm"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(marker)) << "the command must not run";
}

TEST_F(LsmSession, ProtectedFilesByEveryRoute) {
  requireBpfLsm();
  if (HasFatalFailure() || IsSkipped()) return;
  writeFile(ws_ + "/src", "replacement\n");
  std::vector<std::string> items;
  for (const auto& p : protectedFiles()) {
    for (const char* route : {"write", "append", "trunc", "rdonly-trunc", "creat", "truncate",
                              "unlink", "chmod", "chown"})
      items.push_back(std::string(route) + " " + p);
    items.push_back("rename src " + p);         // rename onto
    items.push_back("rename " + p + " moved");  // rename away
    items.push_back("link " + p + " alias");    // a second name to write through
    items.push_back("symlink " + p + " sl");    // write through a symlink
    items.push_back("write sl");
    items.push_back("unlink sl");
  }
  items.push_back("creat sub/.env");  // new files matching a glob, at any depth
  items.push_back("creat .git/hooks/new");
  items.push_back("symlink /etc/passwd .git/hooks/sym");
  items.push_back("mkdir .git/hooks/dir");
  items.push_back("write ok.txt");  // ordinary edits still work
  items.push_back("creat new.txt");
  const std::string script = batch(items);
  SessionRun r = supervise({"--backend", "bpf-lsm"}, script);
  EXPECT_EQ(r.status, 0) << r.err;

  const std::map<std::string, std::string> rule = {
      {".env", "deny-write-env"},
      {".env.local", "deny-write-env-variants"},
      {".git/config", "deny-write-git-config"},
      {".git/hooks/x", "deny-write-git-hooks"}};
  for (const auto& p : protectedFiles()) {
    SCOPED_TRACE(p);
    const std::string abs = ws_ + "/" + p;
    EXPECT_EQ(readFile(abs), "original " + p + "\n") << "content changed";
    struct stat st {};
    ASSERT_EQ(stat(abs.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0644u);
    EXPECT_EQ(st.st_uid, 0u);
    EXPECT_EQ(st.st_nlink, 1u);
    for (const char* route : {"write", "append", "trunc", "creat", "truncate", "unlink", "chmod",
                              "chown"})
      expectDenied(r, std::string(route) + " " + p, abs, rule.at(p));
    // O_RDONLY|O_TRUNC truncates on Linux: path_truncate must refuse it.
    EXPECT_EQ(r.rc["rdonly-trunc " + p], EACCES);
    EXPECT_EQ(r.rc["rename src"], EACCES);
    EXPECT_EQ(r.rc["rename " + p], EACCES);
    // link(2) stays with user-notify (the LSM hook sees the source without
    // its path): denied, by seccomp.
    EXPECT_EQ(r.rc["link " + p], EACCES);
    EXPECT_EQ(r.rc["write sl"], EACCES);
  }
  EXPECT_TRUE(fs::exists(ws_ + "/src")) << "rename onto a protected file must not happen";
  EXPECT_FALSE(fs::exists(ws_ + "/moved"));
  EXPECT_FALSE(fs::exists(ws_ + "/alias"));
  expectDenied(r, "creat sub/.env", ws_ + "/sub/.env", "deny-write-env");
  if (const json* e = find(r, "deny", ws_ + "/sub/.env")) {
    EXPECT_EQ(e->value(json::json_pointer("/syscall/name"), std::string()), "openat") << e->dump();
  }
  EXPECT_FALSE(fs::exists(ws_ + "/sub/.env")) << "a denied create leaves no empty file";
  expectDenied(r, "creat .git/hooks/new", ws_ + "/.git/hooks/new", "deny-write-git-hooks");
  EXPECT_FALSE(fs::exists(ws_ + "/.git/hooks/new"));
  EXPECT_EQ(r.rc["symlink /etc/passwd"], EACCES);
  EXPECT_FALSE(fs::is_symlink(ws_ + "/.git/hooks/sym"));
  EXPECT_EQ(r.rc["mkdir .git/hooks/dir"], EACCES);
  EXPECT_EQ(r.rc["write ok.txt"], 0);
  EXPECT_EQ(readFile(ws_ + "/ok.txt"), "evil\n");
  EXPECT_EQ(r.rc["creat new.txt"], 0);
  const json* allow = find(r, "allow", ws_ + "/new.txt");
  ASSERT_NE(allow, nullptr) << "allowed decisions are audited too (audit.level decisions)";
  EXPECT_EQ(allow->value("enforced_by", ""), writeBackend());
  // The stderr line, as the user-notify path prints it (workspace-relative).
  EXPECT_NE(r.err.find("supervise: denied write to .env (rule deny-write-env: secrets stay out"),
            std::string::npos)
      << r.err;
  // The session says which backend decided.
  ASSERT_FALSE(r.events.empty());
  const json& start = r.events.front();
  ASSERT_TRUE(start.contains("session")) << start.dump();
  const auto backends = start["session"]["backends"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(backends.begin(), backends.end(), "bpf-lsm"), backends.end())
      << start.dump();
}

// A directory move renames everything below it: path_rename sees only the
// two names, so the renames stay notified and the handler walks the tree
// under both names (docs/enforcement.md, "Directory moves"). Moving .git
// away is refused for .git/config, by seccomp; an ordinary directory moves.
TEST_F(LsmSession, DirectoryMovesAreJudgedBelowTheDirectory) {
  requireBpfLsm();
  if (HasFatalFailure() || IsSkipped()) return;
  fs::create_directories(ws_ + "/sub/inner");
  writeFile(ws_ + "/sub/inner/f", "f\n");
  const std::string script =
      batch({"rename .git g", "append g/config", "rename g .git", "rename sub sub2"});
  SessionRun r = supervise({"--backend", "bpf-lsm"}, script);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.rc["rename .git"], EACCES) << r.out;
  EXPECT_FALSE(fs::exists(ws_ + "/g"));
  EXPECT_EQ(readFile(ws_ + "/.git/config"), "original .git/config\n");
  const json* e = find(r, "deny", ws_ + "/.git/config", "seccomp", "deny-write-git-config");
  ASSERT_NE(e, nullptr) << "no deny event of the rename handler for .git/config\n" << r.out;
  EXPECT_EQ(e->value("operation", ""), "rename") << e->dump();
  EXPECT_EQ(r.rc["rename sub"], 0) << "a directory holding nothing protected moves";
  EXPECT_EQ(readFile(ws_ + "/sub2/inner/f"), "f\n");
}

// Creates are decided in the kernel under bpf-lsm, not on the handler's
// thread: a file created inside a directory after the handler walked it and
// before it renamed it would land under the new name, where a rule protects
// it (`mkdir x; mv x vault` while another thread creates x/config). The
// handler marks the directory for the walk and the rename, and the LSM
// refuses creates below it meanwhile (docs/enforcement.md, "Directory
// moves"). The test hook SUPERVISE_TEST_RENAME_PAUSE_MS holds the handler
// 1.5 s between its walk and the rename; the create comes 0.5 s into the
// rename. lsm_routes move-race exits 66 if vault/config ever appears.
TEST_F(LsmSession, ACreateRacingADirectoryMoveIsRefused) {
  requireBpfLsm();
  if (HasFatalFailure() || IsSkipped()) return;
  const std::string policy_file = root_ + "/policy.json";
  // The names below vault are protected, not vault itself (as .git/config
  // is, and .git not).
  writeFile(policy_file, R"({"version": 1, "filesystem": {"denyWrite": [
    {"path": ")" + ws_ + R"(/vault/config", "id": "deny-vault"}]}})");
  ::setenv("SUPERVISE_TEST_RENAME_PAUSE_MS", "1500", 1);
  SessionRun r = supervise({"--backend", "bpf-lsm", "--policy", policy_file},
                           "R move-race vault 2 500000\n");
  ::unsetenv("SUPERVISE_TEST_RENAME_PAUSE_MS");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.rc["move-race vault"], 0) << r.out << r.err;
  EXPECT_FALSE(fs::exists(ws_ + "/vault/config"));
  EXPECT_NE(r.out.find("move-race moved=2 refused=0 escaped=0"), std::string::npos) << r.out;
  if (!missingPathHooks().empty()) {
    // 6.1: creates stay notified, so this one waits for the rename to end
    // and finds x gone.
    EXPECT_NE(r.out.find("create x/config 2\n"), std::string::npos) << r.out;
    return;
  }
  EXPECT_NE(r.out.find("create x/config 13\n"), std::string::npos) << r.out;
  const json* e = find(r, "deny", ws_ + "/x/config", "bpf-lsm", "rename-in-progress");
  ASSERT_NE(e, nullptr) << "no deny event for the create below the moving directory\n" << r.out;
  EXPECT_EQ(e->value("operation", ""), "create") << e->dump();
}

TEST_F(LsmSession, OutsideTheRootsAndExec) {
  requireBpfLsm();
  if (HasFatalFailure() || IsSkipped()) return;
  const std::string script =
      batch({"read " + outside_ + "/data", "write " + outside_ + "/data",
             "creat " + outside_ + "/new", "read ok.txt", "read /etc/hostname",
             "exec " + outside_ + "/prog", "exec ./prog read ok.txt"});
  SessionRun r = supervise({"--backend", "bpf-lsm"}, script);
  EXPECT_EQ(r.status, 0) << r.err;
  expectDenied(r, "read " + outside_ + "/data", outside_ + "/data", "default-deny-read");
  expectDenied(r, "write " + outside_ + "/data", outside_ + "/data", "default-deny-write");
  EXPECT_EQ(readFile(outside_ + "/data"), "outside\n");
  EXPECT_EQ(r.rc["creat " + outside_ + "/new"], EACCES);
  EXPECT_FALSE(fs::exists(outside_ + "/new"));
  EXPECT_EQ(r.rc["read ok.txt"], 0);
  EXPECT_EQ(r.rc["read /etc/hostname"], 0);
  expectDenied(r, "exec " + outside_ + "/prog", outside_ + "/prog", "default-deny-exec");
  EXPECT_EQ(r.rc["exec ./prog"], 0) << "a program in the workspace runs";
  // The LSM's decision, not the process tracker's record of the same exec.
  const json* exec_allow = find(r, "allow", ws_ + "/prog", "bpf-lsm");
  ASSERT_NE(exec_allow, nullptr);
  EXPECT_EQ(exec_allow->value("category", ""), "exec");
  EXPECT_EQ(exec_allow->value("enforced_by", ""), "bpf-lsm");
}

// exec.switch: running tools/switcher moves the process into profile p,
// whose writable root lifts the base policy's deny; the base shell is
// still denied.
TEST_F(LsmSession, ProfileSwitchOnExec) {
  requireBpfLsm();
  if (HasFatalFailure() || IsSkipped()) return;
  const std::string prot = ws_ + "/protected";
  const std::string policy_file = switcherPolicy();
  writeFile(prot + "/u", "u\n");  // utimes is still decided in user space (notified)
  const std::string script = batch({"creat " + prot + "/base", "utimes " + prot + "/u"}) +
                             "tools/switcher creat " + prot + "/a; echo \"R switched a $?\"\n" +
                             "tools/switcher utimes " + prot + "/u; echo \"R switched u $?\"\n";
  SessionRun r = supervise({"--backend", "bpf-lsm", "--policy", policy_file}, script);
  EXPECT_EQ(r.status, 0) << r.err;
  expectDenied(r, "creat " + prot + "/base", prot + "/base", "deny-protected");
  EXPECT_FALSE(fs::exists(prot + "/base"));
  EXPECT_EQ(r.rc["switched a"], 0) << r.err;
  EXPECT_TRUE(fs::exists(prot + "/a"));
  const json* allow = find(r, "allow", prot + "/a");
  ASSERT_NE(allow, nullptr);
  EXPECT_EQ(allow->value("enforced_by", ""), writeBackend());
  EXPECT_EQ((*allow)["process"].value("profile", ""), "p") << allow->dump();
  // The notify handler asks the kernel for the profile: the switched process
  // may touch prot/u, the base shell may not.
  EXPECT_NE(r.rc["utimes " + prot + "/u"], 0);
  EXPECT_EQ(r.rc["switched u"], 0) << r.err;
}

// The dynamic loader run as a program maps its program itself, in no exec
// bprm_check_security sees: mmap_file judges the loader's first executable
// mapping of another file as an exec of it (exec.deny holds, options before
// the program included), and an exec.switch rule follows the program, as the
// notify handler does for the host backend. mmap_file is required: without
// it (SUPERVISE_TEST_DISABLE=lsm-hook:mmap_file) a forced bpf-lsm refuses to
// start and `auto` runs the host backend, whose handler judges the loader's
// argument: the same verdicts and rule.
TEST_F(LsmSession, TheLoaderRunAsAProgramIsJudgedOnItsProgram) {
  requireBpfLsm();
  if (HasFatalFailure() || IsSkipped()) return;
  const std::string loader = fs::canonical("/lib64/ld-linux-x86-64.so.2").string();
  const std::string libc = fs::canonical("/lib/x86_64-linux-gnu/libc.so.6").string();
  fs::copy_file("/bin/echo", ws_ + "/denied");
  const std::string prot = ws_ + "/protected";
  const std::string policy_file =
      switcherPolicy(R"("deny": [{"path": ")" + ws_ + R"(/denied", "id": "no-tool"}],)");
  const std::string script =
      loader + " ./denied RAN-DENIED; echo \"R loader denied $?\"\n" + loader + " --preload " +
      libc + " ./denied RAN-DENIED; echo \"R preload denied $?\"\n" + loader +
      " /bin/echo RAN-ALLOWED; echo \"R loader echo $?\"\n" + loader + " ./tools/switcher creat " +
      prot + "/a; echo \"R switched a $?\"\n";
  for (const bool in_kernel : {true, false}) {
    SCOPED_TRACE(in_kernel ? "bpf-lsm" : "host backend, mmap_file unavailable");
    if (!in_kernel) {
      ::setenv("SUPERVISE_TEST_DISABLE", "lsm-hook:mmap_file", 1);
      SessionRun forced = supervise({"--backend", "bpf-lsm", "--policy", policy_file}, "true\n");
      EXPECT_EQ(forced.status, 125) << forced.err;
      EXPECT_NE(forced.err.find("mmap_file"), std::string::npos) << forced.err;
    }
    SessionRun r = supervise(
        {"--backend", in_kernel ? "bpf-lsm" : "auto", "--policy", policy_file}, script);
    ::unsetenv("SUPERVISE_TEST_DISABLE");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out.find("RAN-DENIED"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("RAN-ALLOWED"), std::string::npos) << r.out;
    // bpf-lsm: the loader cannot map it (127); host: execve fails (126).
    EXPECT_EQ(r.rc["loader denied"], in_kernel ? 127 : 126) << r.out << r.err;
    EXPECT_EQ(r.rc["preload denied"], in_kernel ? 127 : 126) << r.out << r.err;
    const json* e =
        find(r, "deny", ws_ + "/denied", in_kernel ? "bpf-lsm" : "seccomp", "no-tool");
    ASSERT_NE(e, nullptr) << "no exec deny event for the loader's program\n" << r.out;
    EXPECT_EQ(e->value("operation", ""), "exec") << e->dump();
    EXPECT_EQ(r.rc["switched a"], 0) << r.out << r.err;
    EXPECT_TRUE(fs::exists(prot + "/a")) << "the loader's program did not switch the profile";
    fs::remove(prot + "/a");
  }
}

// supervise exec --profile under bpf-lsm: the daemon's session puts the
// stopped first process into the profile's task storage, so its first exec
// is judged there (profile p may write prot/, the base may not), and the
// events name the profile.
TEST_F(LsmSession, ExecDaemonStartsACommandInAProfile) {
  requireBpfLsm();
  if (HasFatalFailure() || IsSkipped()) return;
  fs::create_directories(ws_ + "/protected");
  const std::string prot = ws_ + "/protected";
  const std::string policy_file = root_ + "/policy.json";
  writeFile(policy_file, R"({"version": 1,
    "filesystem": {"denyWrite": [{"path": ")" + prot + R"(/**", "id": "deny-protected"}]},
    "profiles": {"p": {"filesystem": {"writableRoots": [")" + prot + R"("]}}}})");
  fs::create_directories(root_ + "/daemon");
  test::ServeDaemon daemon(kSupervise, root_ + "/daemon", ws_);
  std::string why;
  ASSERT_TRUE(daemon.start({"--backend", "bpf-lsm", "--policy", policy_file}, &why)) << why;
  auto exec = [&](const std::vector<std::string>& profile, const std::string& name) {
    std::vector<std::string> argv{kSupervise, "exec", "--socket", daemon.socket()};
    argv.insert(argv.end(), profile.begin(), profile.end());
    argv.insert(argv.end(), {"--", ws_ + "/prog", "creat", prot + "/" + name});
    test::CommandOptions options;
    options.cwd = ws_;
    options.timeout = std::chrono::seconds(120);
    return test::runCommand(argv, root_ + "/exec-" + name, options);
  };
  const test::CommandResult in_p = exec({"--profile", "p"}, "in-p");
  const test::CommandResult base = exec({}, "base");
  EXPECT_EQ(in_p.status, 0) << in_p.describe() << daemon.log();
  EXPECT_TRUE(fs::exists(prot + "/in-p"));
  EXPECT_EQ(base.status, EACCES) << base.describe();
  EXPECT_FALSE(fs::exists(prot + "/base"));
  EXPECT_EQ(daemon.stop(), 0) << daemon.log();
  bool allowed_in_p = false, denied_in_base = false;
  std::istringstream lines(readFile(daemon.auditFile()));
  for (std::string line; std::getline(lines, line);) {
    const json e = json::parse(line, nullptr, false);
    // bpf-lsm decides the create where its path_mknod program loads; where
    // it does not (6.1), user-notify does, asking the kernel for the profile.
    const std::string by = e.is_discarded() ? "" : e.value("enforced_by", "");
    if (e.is_discarded() || !e.contains("file") || (by != "bpf-lsm" && by != "seccomp")) continue;
    const std::string path = e["file"].value("path", ""), profile =
        e.contains("process") ? e["process"].value("profile", "") : "";
    if (path == prot + "/in-p" && e.value("decision", "") == "allow" && profile == "p")
      allowed_in_p = true;
    if (path == prot + "/base" && e.value("decision", "") == "deny" && profile.empty())
      denied_in_base = true;
  }
  EXPECT_TRUE(allowed_in_p) << readFile(daemon.auditFile());
  EXPECT_TRUE(denied_in_base) << readFile(daemon.auditFile());
}

// Loopback only: connects and UDP sends to 127.0.0.1 pass (ECONNREFUSED:
// nobody listens), a documentation address (RFC 5737, unrouted; the guest
// has no route there) is refused by the LSM with EPERM, as the cgroup
// programs refuse it, before any routing happens.
TEST_F(LsmSession, LoopbackOnlyNetwork) {
  requireBpfLsm();
  if (HasFatalFailure() || IsSkipped()) return;
  const std::string script = batch({"connect 127.0.0.1 9", "sendto 127.0.0.1 9",
                                    "connect 198.51.100.1 80", "sendto 198.51.100.1 53"});
  SessionRun r = supervise({"--backend", "bpf-lsm"}, script);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.rc["connect 127.0.0.1"], ECONNREFUSED);
  EXPECT_EQ(r.rc["sendto 127.0.0.1"], 0);
  expectDenied(r, "connect 198.51.100.1", "198.51.100.1:80", "default-deny-connect", "bpf-lsm",
               EPERM);
  expectDenied(r, "sendto 198.51.100.1", "198.51.100.1:53", "default-deny-connect", "bpf-lsm",
               EPERM);
  EXPECT_NE(r.err.find("supervise: denied connect to 198.51.100.1:80"), std::string::npos)
      << r.err;
}

// A profile's own destinations under bpf-lsm: the LSM judges each task by
// the profile it entered on exec, and the cgroup programs behind it hold the
// floor of every plan (policy::networkFloor). So the switched process gets
// as far as routing (the guest has no NIC: ENETUNREACH), while the base
// shell, and the profile for another port, are refused by the LSM. Before
// the floor, the cgroup programs refused the profile's destination (EPERM).
TEST_F(LsmSession, ProfileNetworkAppliesAfterTheSwitch) {
  requireBpfLsm();
  if (HasFatalFailure() || IsSkipped()) return;
  fs::create_directories(ws_ + "/tools");
  fs::copy_file(kRoutes, ws_ + "/tools/fetcher");
  const std::string policy_file = root_ + "/policy.json";
  writeFile(policy_file, R"({"version": 1,
    "exec": {"switch": [{"match": ")" + ws_ + R"(/tools/fetcher", "profile": "net"}]},
    "profiles": {"net": {"network": {"mode": "allowlist", "allow": ["198.51.100.1:80"]}}}})");
  const std::string script = batch({"connect 198.51.100.1 80"}) +
                             "tools/fetcher connect 198.51.100.1 80; echo \"R switched c $?\"\n" +
                             "tools/fetcher connect 198.51.100.1 81; echo \"R switched d $?\"\n";
  SessionRun r = supervise({"--backend", "bpf-lsm", "--policy", policy_file}, script);
  EXPECT_EQ(r.status, 0) << r.err;
  expectDenied(r, "connect 198.51.100.1", "198.51.100.1:80", "default-deny-connect", "bpf-lsm",
               EPERM);
  EXPECT_EQ(r.rc["switched c"], ENETUNREACH) << r.err;
  EXPECT_EQ(r.rc["switched d"], EPERM) << r.err;
}

// Unix sockets bound by the test (outside the session): stream ones answer
// "ping" with "pong", datagram ones count the pings they receive. Served by
// one thread until stop().
class UnixPeers {
 public:
  ~UnixPeers() {
    stop();
    for (const Peer& p : peers_) close(p.fd);
  }

  // Binds `path` (mode 0777: connecting needs write permission on it).
  bool bind(const std::string& path, int type) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof(addr.sun_path)) return false;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    int fd = socket(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        chmod(path.c_str(), 0777) != 0 || (type == SOCK_STREAM && listen(fd, 8) != 0))
      return false;
    peers_.push_back({fd, type, path});
    served_[path] = 0;
    return true;
  }

  void start() {
    thread_ = std::thread([this] { serve(); });
  }
  // Ends the thread, then counts the datagrams still queued.
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    for (const Peer& p : peers_)
      if (p.type == SOCK_DGRAM)
        while (answer(p)) {
        }
  }
  int served(const std::string& path) const { return served_.at(path); }

 private:
  struct Peer {
    int fd, type;
    std::string path;
  };

  void serve() {
    std::vector<pollfd> fds;
    for (const Peer& p : peers_) fds.push_back({p.fd, POLLIN, 0});
    while (!stop_) {
      if (poll(fds.data(), fds.size(), 100) <= 0) continue;
      for (size_t i = 0; i < fds.size(); i++)
        if (fds[i].revents & POLLIN) answer(peers_[i]);
    }
  }

  // One datagram or connection; false when none was waiting.
  bool answer(const Peer& p) {
    char buf[4];
    if (p.type == SOCK_DGRAM) {
      const ssize_t n = recv(p.fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n == 4 && !std::memcmp(buf, "ping", 4)) served_.at(p.path)++;
      return n >= 0;
    }
    int c = accept4(p.fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) return false;
    timeval tv{5, 0};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    // Counted before the answer: the client returns once it has it.
    if (read(c, buf, sizeof(buf)) == 4 && !std::memcmp(buf, "ping", 4)) {
      served_.at(p.path)++;
      if (write(c, "pong", 4) != 4) served_.at(p.path)--;
    }
    close(c);
    return true;
  }

  std::vector<Peer> peers_;
  std::map<std::string, int> served_;  // keys fixed before start(); read after stop()
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The known escape "pathname unix socket through a symlink" (docs/escape.md,
// 6), closed under bpf-lsm: the cgroup connect_unix program passes the
// symlink's path (in the workspace), and unix_stream_connect/unix_may_send
// judge the socket the kernel found, as a write of its bound path. Sockets
// in the workspace, directly or through a symlink, still work, and a socket
// whose name a deny glob covers (sub/.env) is refused like the file.
TEST_F(LsmSession, UnixSocketsAreJudgedOnThePeerNotThePath) {
  requireBpfLsm();
  if (HasFatalFailure() || IsSkipped()) return;
  const std::string out_stream = outside_ + "/stream.sock", out_dgram = outside_ + "/dgram.sock";
  const std::string in_stream = ws_ + "/in.sock", in_dgram = ws_ + "/in-dgram.sock";
  const std::string env_sock = ws_ + "/sub/.env";
  UnixPeers peers;
  for (const auto& [path, type] :
       std::vector<std::pair<std::string, int>>{{out_stream, SOCK_STREAM},
                                                {out_dgram, SOCK_DGRAM},
                                                {in_stream, SOCK_STREAM},
                                                {in_dgram, SOCK_DGRAM},
                                                {env_sock, SOCK_STREAM}})
    ASSERT_TRUE(peers.bind(path, type)) << path << ": " << std::strerror(errno);
  peers.start();
  // The tree makes the symlinks itself, in its workspace.
  const std::string to_out_stream = ws_ + "/out.sock", to_out_dgram = ws_ + "/out-dgram.sock";
  const std::string to_in_stream = ws_ + "/in-link.sock", to_in_dgram = ws_ + "/in-dgram-link.sock";
  const std::vector<std::string> routes = {"symlink " + out_stream + " " + to_out_stream,
                                           "symlink " + out_dgram + " " + to_out_dgram,
                                           "symlink " + in_stream + " " + to_in_stream,
                                           "symlink " + in_dgram + " " + to_in_dgram,
                                           "unix-connect " + to_out_stream,
                                           "unix-sendto " + to_out_dgram,
                                           "unix-dgram-connect " + to_out_dgram,
                                           "unix-connect " + env_sock,
                                           "unix-connect " + in_stream,
                                           "unix-connect " + to_in_stream,
                                           "unix-sendto " + in_dgram,
                                           "unix-sendto " + to_in_dgram,
                                           "unix-dgram-connect " + to_in_dgram};
  SessionRun r = supervise({"--backend", "bpf-lsm"}, batch(routes));
  peers.stop();
  EXPECT_EQ(r.status, 0) << r.err;

  // Through a symlink to a socket outside the roots: refused, and the event
  // names the socket reached, not the link.
  for (const std::string& key : {"unix-connect " + to_out_stream, "unix-sendto " + to_out_dgram,
                                 "unix-dgram-connect " + to_out_dgram})
    EXPECT_EQ(r.rc.count(key) ? r.rc[key] : -1, EACCES) << key << "\n" << r.out;
  for (const auto& [target, operation] : std::vector<std::pair<std::string, std::string>>{
           {out_stream, "connect"}, {out_dgram, "sendmsg"}}) {
    const json* e = find(r, "deny", target, "bpf-lsm", "unix-socket-outside-writable-roots");
    ASSERT_NE(e, nullptr) << "no bpf-lsm deny event naming " << target;
    EXPECT_EQ(e->value("category", ""), "network") << e->dump();
    EXPECT_EQ(e->value("operation", ""), operation) << e->dump();
    EXPECT_EQ((*e)["network"].value("family", ""), "unix") << e->dump();
    EXPECT_EQ(e->value("errno", ""), "EACCES") << e->dump();
  }
  for (const std::string& link : {to_out_stream, to_out_dgram, to_in_stream, to_in_dgram})
    EXPECT_EQ(find(r, "deny", link, "bpf-lsm"), nullptr) << "judged by the link's path: " << link;
  EXPECT_EQ(peers.served(out_stream), 0) << "the refused peer was reached";
  EXPECT_EQ(peers.served(out_dgram), 0) << "the refused peer was reached";
  EXPECT_NE(r.err.find("supervise: denied connect to unix socket " + out_stream), std::string::npos)
      << r.err;

  // A socket file is a file: the workspace's deny globs apply to it.
  EXPECT_EQ(r.rc["unix-connect " + env_sock], EACCES);
  EXPECT_NE(find(r, "deny", env_sock, "bpf-lsm", "deny-write-env"), nullptr);
  EXPECT_EQ(peers.served(env_sock), 0);

  // Inside the workspace, directly and through a symlink: data exchanged.
  for (const std::string& key :
       {"unix-connect " + in_stream, "unix-connect " + to_in_stream, "unix-sendto " + in_dgram,
        "unix-sendto " + to_in_dgram, "unix-dgram-connect " + to_in_dgram})
    EXPECT_EQ(r.rc.count(key) ? r.rc[key] : -1, 0) << key << "\n" << r.out;
  EXPECT_EQ(peers.served(in_stream), 2) << "ping/pong, directly and through the link";
  EXPECT_EQ(peers.served(in_dgram), 3) << "two sendto, one send after connect";
  const json* allow = find(r, "allow", in_stream, "bpf-lsm");
  ASSERT_NE(allow, nullptr) << "allowed peers are audited with the socket's path";
  EXPECT_EQ(allow->value("category", ""), "network");
}

// Audit mode: the same refused peer is reported as would-deny and reached.
TEST_F(LsmSession, UnixPeerInAuditModeIsReportedNotRefused) {
  requireBpfLsm();
  if (HasFatalFailure() || IsSkipped()) return;
  const std::string out_stream = outside_ + "/stream.sock", link = ws_ + "/out.sock";
  UnixPeers peers;
  ASSERT_TRUE(peers.bind(out_stream, SOCK_STREAM)) << std::strerror(errno);
  peers.start();
  SessionRun r = supervise({"--backend", "bpf-lsm", "-o", "mode=audit"},
                           batch({"symlink " + out_stream + " " + link, "unix-connect " + link}));
  peers.stop();
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.rc["unix-connect " + link], 0) << r.out;
  EXPECT_EQ(peers.served(out_stream), 1);
  const json* e =
      find(r, "would-deny", out_stream, "bpf-lsm", "unix-socket-outside-writable-roots");
  ASSERT_NE(e, nullptr) << "no would-deny event naming " << out_stream;
  EXPECT_TRUE((*e)["errno"].is_null()) << e->dump();
}

}  // namespace
}  // namespace sv
