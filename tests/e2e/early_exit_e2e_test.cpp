// The wrapper exits as soon as the command's status and the trail are final;
// the session's tear-down goes on in a child (supervisor/session/exit_handoff.h).
// SUPERVISE_TEST_TEARDOWN_PAUSE_MS holds that tear-down back, so that these
// tests see what holds while it is still to come: the caller has the status,
// all the output and EOF on every pipe it gave; the session's cgroup is
// still there, and goes in the end; a session started meanwhile, which may
// take the late one's BPF slots over, keeps its policy when that tear-down
// runs; and the child that does it ends on its own, exit handlers and all.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/common/audit_events.h"
#include "tests/common/host_features.h"
#include "tests/common/run_command.h"
#include "tests/unit/audit/otlp_receiver.h"
#include "tracer/cgroup.h"

namespace sv {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kSupervise = SV_SUPERVISE_BIN;

struct Piped {
  int status = -1;
  std::map<int, std::string> read;  // what each of the caller's fds received, to EOF
};

// Runs argv with stdout, stderr and fd 3 on pipes of ours, reads each to EOF,
// then reaps it: what a caller capturing the output waits for.
Piped runPiped(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  int pipes[3][2];
  const int targets[3] = {1, 2, 3};
  for (auto& p : pipes) EXPECT_EQ(::pipe2(p, O_CLOEXEC), 0);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (int i = 0; i < 3; ++i) ::dup2(pipes[i][1], targets[i]);  // dup2 clears CLOEXEC
    ::execve(cargv[0], cargv.data(), cenv.data());
    ::_exit(127);
  }
  Piped r;
  for (int target : targets) r.read[target];  // each, even if nothing came
  std::vector<pollfd> open;
  for (int i = 0; i < 3; ++i) {
    ::close(pipes[i][1]);
    open.push_back({pipes[i][0], POLLIN, 0});
  }
  std::map<int, int> target_of;
  for (int i = 0; i < 3; ++i) target_of[pipes[i][0]] = targets[i];
  while (!open.empty() && ::poll(open.data(), open.size(), 60'000) > 0) {
    for (size_t i = 0; i < open.size();) {
      char buf[4096];
      const ssize_t n = open[i].revents ? ::read(open[i].fd, buf, sizeof buf) : 1;
      if (n > 0 && open[i].revents) r.read[target_of[open[i].fd]].append(buf, size_t(n));
      if (n <= 0) {
        ::close(open[i].fd);
        open.erase(open.begin() + long(i));
      } else {
        ++i;
      }
    }
  }
  EXPECT_TRUE(open.empty()) << "no EOF on every pipe within 60 s";
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// The session cgroup of the trail at `audit_path` (session.cpp names it
// after the session id, under the cgroup supervise ran in: ours).
std::string sessionCgroupOf(const std::string& audit_path) {
  const auto events = test::readAuditEvents(audit_path);
  if (events.empty()) return "";
  const auto own = tracer::ownCgroupPath();
  if (!own) return "";
  return own.value() + "/supervise-" + events.front().value("session_id", "").substr(0, 12);
}

bool goneWithin(const std::string& path, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (fs::exists(path)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// Reaps every child of ours but `keep` as it ends, for up to `limit`: the
// exit statuses, or nullopt if some are still running then.
std::optional<std::vector<int>> reapChildren(const std::vector<pid_t>& keep,
                                             std::chrono::seconds limit) {
  std::vector<int> statuses;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    bool running = false;
    for (pid_t pid : test::childrenOf(::getpid())) {
      if (std::find(keep.begin(), keep.end(), pid) != keep.end()) continue;
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid)
        statuses.push_back(status);
      else
        running = true;
    }
    if (!running) return statuses;
    if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

class EarlyExit : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = test::missingSessionFeature(kSupervise, 0); !why.empty())
      GTEST_SKIP() << why;
#ifdef SV_SANITIZED
    GTEST_SKIP() << "a sanitized supervise tears down before it exits (no child may share "
                    "a sanitized process's memory: clone_shared_vm.h)";
#endif
    dir_ = fs::temp_directory_path() / ("sv-early-exit-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  std::vector<std::string> supervise(const std::string& audit,
                                     const std::vector<std::string>& command,
                                     const std::vector<std::string>& options = {}) const {
    std::vector<std::string> argv = {kSupervise, "-q", "--audit-file", audit,
                                     "--workspace", dir_.string()};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back("--");
    argv.insert(argv.end(), command.begin(), command.end());
    return argv;
  }

  fs::path dir_;
};

TEST_F(EarlyExit, TheCallerHasStatusOutputAndEofWhileTheTearDownIsStillToCome) {
  const std::string audit = (dir_ / "audit.jsonl").string();
  const Piped r = runPiped(
      supervise(audit, {"/bin/sh", "-c", "echo out; echo err >&2; echo three >&3; exit 3"}),
      test::superviseEnvironment({"SUPERVISE_TEST_TEARDOWN_PAUSE_MS=5000"}));
  EXPECT_EQ(r.status, 3);
  EXPECT_EQ(r.read.at(1), "out\n");
  EXPECT_EQ(r.read.at(2), "err\n");
  EXPECT_EQ(r.read.at(3), "three\n");
  const auto events = test::readAuditEvents(audit);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().value("operation", ""), "end") << "the trail is final at the exit";
  const std::string cgroup = sessionCgroupOf(audit);
  ASSERT_FALSE(cgroup.empty());
  // Still there: its removal is part of the tear-down, held back 5 s.
  EXPECT_TRUE(fs::exists(cgroup)) << cgroup;
  // And gone once the tear-down ran.
  EXPECT_TRUE(goneWithin(cgroup, std::chrono::seconds(60))) << cgroup;
}

TEST_F(EarlyExit, WithoutItTheTearDownIsDoneWhenTheCallerHasTheStatus) {
  const std::string audit = (dir_ / "audit.jsonl").string();
  const Piped r = runPiped(supervise(audit, {"/bin/true"}),
                           test::superviseEnvironment({"SUPERVISE_TEST_TEARDOWN_PAUSE_MS=5000",
                                                       "SUPERVISE_TEST_DISABLE=early-exit"}));
  EXPECT_EQ(r.status, 0);
  const std::string cgroup = sessionCgroupOf(audit);
  ASSERT_FALSE(cgroup.empty());
  EXPECT_FALSE(fs::exists(cgroup)) << cgroup;
}

// Session A's supervisor has exited and its tear-down waits; B starts
// meanwhile and may take over A's slots in the shared BPF loads (their
// owner is gone). When A's tear-down runs, it must leave them alone: B's
// network policy still refuses B's connect afterwards, and says so.
TEST_F(EarlyExit, ALateTearDownLeavesTheSlotsOfASessionStartedMeanwhileAlone) {
  const std::string audit_a = (dir_ / "a.jsonl").string(), audit_b = (dir_ / "b.jsonl").string();
  const Piped a = runPiped(supervise(audit_a, {"/bin/true"}),
                           test::superviseEnvironment({"SUPERVISE_TEST_TEARDOWN_PAUSE_MS=1500"}));
  ASSERT_EQ(a.status, 0);
  const std::string cgroup_a = sessionCgroupOf(audit_a);
  // B connects after A's tear-down ran (A's cgroup gone: B's command waits
  // for that), to a local port nobody listens on: refused by the policy
  // (EPERM, network.mode none refuses the socket already), not by the
  // kernel's TCP (ECONNREFUSED).
  const std::string script = "while [ -d '" + cgroup_a + "' ]; do sleep 0.05; done; "
                             "exec 3<>/dev/tcp/127.0.0.1/9";
  const Piped b = runPiped(supervise(audit_b, {"/bin/bash", "-c", script},
                                     {"-o", "network.mode=none"}),
                           test::superviseEnvironment());
  EXPECT_NE(b.status, 0);
  EXPECT_NE(b.read.at(2).find("Operation not permitted"), std::string::npos) << b.read.at(2);
  bool denied = false;
  for (const auto& e : test::readAuditEvents(audit_b))
    if (e.value("category", "") == "network" && e.value("decision", "") == "deny") denied = true;
  EXPECT_TRUE(denied) << "no network deny event";
  EXPECT_FALSE(fs::exists(cgroup_a)) << "A's tear-down never ran";
}

// The child runs what follows our exit in every process: libc's exit
// handlers, OpenSSL's among them (the OTLP sink loads libcurl), which take
// locks that name their holder by the tid in the thread's descriptor. It must
// end on its own, and so must the watchdog after it: as our subreaper, this
// test reaps both.
TEST_F(EarlyExit, TheChildThatTearsDownEndsOnItsOwnWithTheOtlpSinksLibrariesLoaded) {
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  test::OtlpReceiver receiver(dir_.string(), {});
  ASSERT_TRUE(receiver.start());
  const std::string audit = (dir_ / "audit.jsonl").string();
  const std::vector<pid_t> before = test::childrenOf(::getpid());
  const Piped r = runPiped(supervise(audit, {"/bin/sh", "-c", "cat /etc/hostname; exit 5"},
                                     {"--audit-otlp", receiver.url()}),
                           test::superviseEnvironment());
  EXPECT_EQ(r.status, 5) << r.read.at(2);
  const auto statuses = reapChildren(before, std::chrono::seconds(60));
  ASSERT_TRUE(statuses.has_value()) << "a child of supervise still runs a minute after its exit";
  EXPECT_FALSE(statuses->empty()) << "no child outlived supervise: nothing was torn down late";
  for (int status : *statuses)
    EXPECT_TRUE(WIFEXITED(status)) << "a child of supervise ended by signal " << WTERMSIG(status);
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
}

}  // namespace
}  // namespace sv
