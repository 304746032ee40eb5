// The operator commands against the real binary on this host: `supervise
// check` passes (exit 0, one ok line per check); a would-deny run turned into
// a policy by `policy learn` runs the same command in enforce mode without a
// denial; `explain` explains a real recorded denial by event id and from
// stdin; `policy init` writes a policy `validate` accepts; every subcommand's
// --help has an example; `cmake --install` installs the binary, the man page
// and the completions.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <linux/landlock.h>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/common/host_features.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kSupervise = SUPERVISE_BIN;

std::string readFile(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

struct Result {
  int status = -1;
  std::string out, err;
  std::string describe() const {
    return "status=" + std::to_string(status) + "\n--- stdout ---\n" + out + "\n--- stderr ---\n" + err;
  }
};

// Runs argv in cwd with stdin from `in` (a file, or /dev/null); SUPERVISE_*
// variables of the test's own environment are dropped.
Result run(const std::vector<std::string>& argv, const fs::path& cwd, const std::string& in = "/dev/null") {
  fs::path out = cwd / ".out", err = cwd / ".err";
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    for (const char* v : {"SUPERVISE_MODE", "SUPERVISE_NETWORK", "SUPERVISE_PRESET"}) ::unsetenv(v);
    if (::chdir(cwd.c_str()) != 0) ::_exit(122);
    if (!std::freopen(in.c_str(), "r", stdin) || !std::freopen(out.c_str(), "w", stdout) ||
        !std::freopen(err.c_str(), "w", stderr))
      ::_exit(123);
    ::close_range(3, ~0U, 0);
    ::execvp(cargv[0], cargv.data());
    ::_exit(127);
  }
  int ws = 0;
  ::waitpid(pid, &ws, 0);
  Result r;
  r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
  r.out = readFile(out);
  r.err = readFile(err);
  fs::remove(out);
  fs::remove(err);
  return r;
}

std::string probeMissing() {
  if (::geteuid() != 0) return "needs root: euid " + std::to_string(::geteuid());
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi <= 0) return std::string("needs Landlock: landlock_create_ruleset: ") + std::strerror(errno);
  if (std::string why = sv::test::missingCgroup2(); !why.empty()) return why;
  if (!contains(readFile("/proc/sys/kernel/seccomp/actions_avail"), "user_notif"))
    return "needs seccomp user-notify: not in actions_avail";
  return "";
}

std::vector<json> events(const fs::path& audit) {
  std::vector<json> out;
  std::ifstream in(audit);
  std::string line;
  while (std::getline(in, line)) out.push_back(json::parse(line));
  return out;
}

class Operators : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "sv-ops-it-XXXXXX").string();
    ASSERT_TRUE(::mkdtemp(tmpl.data()));
    root_ = tmpl;
    ws_ = root_ / "ws";
    fs::create_directories(ws_);
    // Config discovery must not pick up a policy of the machine's user.
    ::setenv("XDG_CONFIG_HOME", (root_ / "xdg").c_str(), 1);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  fs::path root_, ws_;
};

TEST_F(Operators, CheckPassesOnThisHost) {
  if (auto m = probeMissing(); !m.empty()) GTEST_SKIP() << m;
  auto r = run({kSupervise, "check"}, ws_);
  EXPECT_EQ(r.status, 0) << r.describe();
  EXPECT_EQ(r.err, "");
  // Prerequisites tools/setup installs: every check must run and pass.
  for (const char* line :
       {"ok    git status in a throwaway repo\n", "ok    shell command\n",
        "ok    node REPL session (const n = 40; n + 2 -> 42)\n",
        "ok    write to .env denied (EACCES, rule deny-write-env)\n", "ok    loopback TCP connect (127.0.0.1:",
        "ok    non-loopback connect blocked (198.51.100.1:", "check: 6 ok, 0 failed, 0 skipped\n"})
    EXPECT_TRUE(contains(r.out, line)) << "missing: " << line << "\n" << r.describe();
  // No progress codes when stdout is not a terminal.
  EXPECT_FALSE(contains(r.out, "\r")) << r.describe();
  // The test host's namespaces are anonymous: nothing left in /run/netns.
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/run/netns", ec))
    EXPECT_FALSE(contains(e.path().filename().string(), "sv-check")) << e.path();
}

TEST_F(Operators, CheckFailsWhenThePolicyDoesNotEnforce) {
  if (auto m = probeMissing(); !m.empty()) GTEST_SKIP() << m;
  std::ofstream(root_ / "open.json") << R"({"network": {"mode": "all"}})";
  auto r = run({kSupervise, "check", "--policy", (root_ / "open.json").string()}, ws_);
  EXPECT_EQ(r.status, 1) << r.describe();
  EXPECT_TRUE(contains(r.out, "FAIL  non-loopback connect blocked")) << r.describe();
  EXPECT_TRUE(contains(r.out, "ok    write to .env denied")) << r.describe();
}

TEST_F(Operators, LearnedPolicyRunsTheCommandWithoutADenial) {
  if (auto m = probeMissing(); !m.empty()) GTEST_SKIP() << m;
  // Outside every root of the default preset, and a protected file inside it.
  fs::path outside = fs::path("/srv") / ("sv-ops-it-" + std::to_string(::getpid()));
  fs::create_directories(outside);
  struct Cleanup {
    fs::path p;
    ~Cleanup() { fs::remove_all(p); }
  } cleanup{outside};
  std::ofstream(ws_ / ".env") << "SECRET=1\n";
  const std::string script = "echo data > " + (outside / "out.txt").string() + " && echo new > .env";
  const fs::path audit = root_ / "audit.jsonl", after = root_ / "after.jsonl";

  auto denied = run({kSupervise, "--audit-file", audit.string(), "--", "/bin/sh", "-c", script}, ws_);
  ASSERT_NE(denied.status, 0) << "enforce mode should deny\n" << denied.describe();
  fs::remove(audit);

  auto audited = run({kSupervise, "-o", "mode=audit", "--audit-file", audit.string(), "--", "/bin/sh",
                      "-c", script},
                     ws_);
  ASSERT_EQ(audited.status, 0) << audited.describe();
  int would_deny = 0;
  for (const auto& e : events(audit)) would_deny += e.value("decision", "") == "would-deny";
  ASSERT_GE(would_deny, 2) << readFile(audit);
  std::ofstream(ws_ / ".env") << "SECRET=1\n";

  auto learned = run({kSupervise, "policy", "learn", audit.string(), "-o", (root_ / "learned.json").string()},
                     ws_);
  ASSERT_EQ(learned.status, 0) << learned.describe();

  auto r = run({kSupervise, "--policy", (root_ / "learned.json").string(), "--audit-file", after.string(),
                "--", "/bin/sh", "-c", script},
               ws_);
  EXPECT_EQ(r.status, 0) << r.describe() << "\n" << readFile(root_ / "learned.json");
  EXPECT_EQ(readFile(outside / "out.txt"), "data\n");
  EXPECT_EQ(readFile(ws_ / ".env"), "new\n");
  for (const auto& e : events(after)) EXPECT_NE(e.value("decision", ""), "deny") << e.dump();
  // Exactly those: a sibling is still denied.
  auto sibling = run({kSupervise, "--policy", (root_ / "learned.json").string(), "--", "/bin/sh", "-c",
                      "echo x > " + (outside / "other.txt").string()},
                     ws_);
  EXPECT_NE(sibling.status, 0) << sibling.describe();
}

TEST_F(Operators, ExplainARecordedDenial) {
  if (auto m = probeMissing(); !m.empty()) GTEST_SKIP() << m;
  const fs::path audit = root_ / "audit.jsonl";
  auto r = run({kSupervise, "--audit-file", audit.string(), "--", "/bin/sh", "-c", "echo x > .env"}, ws_);
  ASSERT_NE(r.status, 0) << r.describe();
  std::string line;
  uint64_t seq = 0;
  for (const auto& e : events(audit))
    if (e.value("decision", "") == "deny") {
      seq = e["seq"].get<uint64_t>();
      line = e.dump();
    }
  ASSERT_NE(seq, 0u) << readFile(audit);

  auto by_id = run({kSupervise, "explain", "--audit-file", audit.string(), std::to_string(seq)}, ws_);
  EXPECT_EQ(by_id.status, 1) << by_id.describe();
  EXPECT_TRUE(contains(by_id.out, "recorded: rule deny-write-env")) << by_id.describe();
  EXPECT_TRUE(contains(by_id.out, "reason: secrets stay out of the agent's reach")) << by_id.describe();
  EXPECT_TRUE(contains(by_id.out, "policy edit")) << by_id.describe();

  std::ofstream(root_ / "line.jsonl") << line << "\n";
  auto from_stdin = run({kSupervise, "explain", "--json", "-"}, ws_, (root_ / "line.jsonl").string());
  EXPECT_EQ(from_stdin.status, 1) << from_stdin.describe();
  auto j = json::parse(from_stdin.out);
  EXPECT_EQ(j["rule_id"], "deny-write-env");
  EXPECT_EQ(j["event"]["seq"], seq);
  EXPECT_TRUE(j["edit"]["exec"]["switch"].is_array()) << j.dump(2);
}

TEST_F(Operators, InitWritesWhatValidateAccepts) {
  auto r = run({kSupervise, "policy", "init"}, ws_);
  ASSERT_EQ(r.status, 0) << r.describe();
  auto v = run({kSupervise, "validate", ".supervise.json"}, ws_);
  EXPECT_EQ(v.status, 0) << v.describe();
  auto s = run({kSupervise, "status"}, ws_);
  EXPECT_TRUE(contains(s.out, ".supervise.json")) << s.describe();
}

TEST_F(Operators, EveryHelpHasAnExample) {
  for (std::vector<std::string> cmd :
       {std::vector<std::string>{}, {"doctor"}, {"status"}, {"check"}, {"validate"}, {"explain"},
        {"policy"}, {"policy", "init"}, {"policy", "learn"}}) {
    std::vector<std::string> argv = {kSupervise};
    argv.insert(argv.end(), cmd.begin(), cmd.end());
    argv.push_back("--help");
    auto r = run(argv, ws_);
    EXPECT_EQ(r.status, 0) << r.describe();
    EXPECT_TRUE(contains(r.out, "Example")) << r.describe();
  }
}

// `supervise [options] -- cmd` skips building the subcommands (main.cpp);
// everything else still sees all of them, and after `--` a subcommand's
// name is the command's, as it always was.
TEST_F(Operators, SubcommandsAreThereUnlessACommandFollowsTheDashes) {
  auto help = run({kSupervise, "--help"}, ws_);
  ASSERT_EQ(help.status, 0) << help.describe();
  for (const char* sub : {"validate", "explain", "doctor", "status", "check", "policy"})
    EXPECT_TRUE(contains(help.out, sub)) << sub << "\n" << help.describe();
  auto doctor = run({kSupervise, "-q", "doctor", "--json"}, ws_);
  EXPECT_TRUE(contains(doctor.out, "{")) << doctor.describe();
  auto as_command = run({kSupervise, "-q", "--", "doctor"}, ws_);
  EXPECT_EQ(as_command.status, 127) << as_command.describe();
}

TEST_F(Operators, CmakeInstallShipsManPageAndCompletions) {
  fs::path prefix = root_ / "prefix";
  auto r = run({CMAKE_COMMAND, "--install", BUILD_DIR, "--prefix", prefix.string()}, ws_);
  ASSERT_EQ(r.status, 0) << r.describe();
  EXPECT_TRUE(fs::exists(prefix / "bin/supervise"));
  auto gunzip = run({"gzip", "-dk", (prefix / "share/man/man1/supervise.1.gz").string()}, ws_);
  ASSERT_EQ(gunzip.status, 0) << gunzip.describe();
  std::string man = readFile(prefix / "share/man/man1/supervise.1");
  EXPECT_TRUE(contains(man, ".TH SUPERVISE 1")) << man.substr(0, 200);
  EXPECT_FALSE(contains(man, "@PROJECT_VERSION@"));
  EXPECT_TRUE(fs::exists(prefix / "share/bash-completion/completions/supervise"));
  EXPECT_TRUE(fs::exists(prefix / "share/zsh/vendor-completions/_supervise"));
  auto syntax = run({"bash", "-n", (prefix / "share/bash-completion/completions/supervise").string()}, ws_);
  EXPECT_EQ(syntax.status, 0) << syntax.describe();
  // The completion offers the subcommands.
  auto complete = run({"bash", "-c",
                       "source " + (prefix / "share/bash-completion/completions/supervise").string() +
                           "; COMP_WORDS=(supervise po); COMP_CWORD=1; _supervise; echo ${COMPREPLY[@]}"},
                      ws_);
  EXPECT_EQ(complete.out, "policy\n") << complete.describe();
  // supervise-exec, the daemon's lean client: its own file for bash's loading
  // by command name, its options before `--`, the command's after.
  const std::string exec_file = (prefix / "share/bash-completion/completions/supervise-exec").string();
  ASSERT_TRUE(fs::exists(exec_file));
  auto exec_options = run({"bash", "-c",
                           "source " + exec_file +
                               "; COMP_WORDS=(supervise-exec --ti); COMP_CWORD=1; _supervise_exec; "
                               "echo ${COMPREPLY[@]}; complete -p supervise-exec"},
                          ws_);
  EXPECT_EQ(exec_options.out, "--timeout\ncomplete -F _supervise_exec supervise-exec\n")
      << exec_options.describe();
  auto sub_options = run({"bash", "-c",
                          "source " + exec_file +
                              "; COMP_WORDS=(supervise exec --pro); COMP_CWORD=2; _supervise; "
                              "echo ${COMPREPLY[@]}"},
                         ws_);
  EXPECT_EQ(sub_options.out, "--profile\n") << sub_options.describe();
  auto zsh = readFile(prefix / "share/zsh/vendor-completions/_supervise");
  EXPECT_TRUE(contains(zsh, "#compdef supervise supervise-exec")) << zsh.substr(0, 200);
}

}  // namespace
