// ProcessTable and ProcessEvents without the kernel: synthetic tracker
// events in, the table's records and the audit lines (read back from a file
// sink) out. Covers what the real runs can't force on demand: a re-check
// kill, audit mode, pid reuse, the bound on exited processes.
#include "supervisor/proc/process_events.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "tracer/bpf/exec_file_id.h"

namespace sv::supervisor {
namespace {

using json = nlohmann::json;
using tracer::ExecVerdict;
using tracer::ProcEvent;
using tracer::ProcEventType;

// Pids far above pid_max, so /proc never has them: the events' data alone
// must name the processes.
constexpr pid_t kParent = 90000001, kChild = 90000002;

ProcEvent event(ProcEventType type, pid_t pid, pid_t ppid, uint64_t start) {
  ProcEvent e;
  e.type = type;
  e.pid = e.tgid = e.old_pid = pid;
  e.ppid = ppid;
  e.start_time_ticks = start;
  e.comm = "comm";
  return e;
}

ProcEvent exec(pid_t pid, pid_t ppid, uint64_t start, std::string path,
               std::vector<std::string> argv, ExecVerdict verdict = ExecVerdict::Approved) {
  ProcEvent e = event(ProcEventType::Exec, pid, ppid, start);
  e.filename = std::move(path);
  e.argv = std::move(argv);
  e.verdict = verdict;
  e.killed = verdict == ExecVerdict::Mismatch || verdict == ExecVerdict::Unapproved;
  return e;
}

TEST(ProcessTable, ForkInheritsTheImageExecReplacesIt) {
  ProcessTable t;
  t.onExec(kParent, 1, 100, "sh", "/usr/bin/dash", {"sh", "-c", "x"});
  t.onFork(kChild, kParent, 200, "sh");
  ASSERT_NE(t.find(kChild), nullptr);
  EXPECT_EQ(t.find(kChild)->exe, "/usr/bin/dash");
  EXPECT_EQ(t.find(kChild)->ppid, kParent);
  t.onExec(kChild, kParent, 200, "ls", "/usr/bin/ls", {"ls"});
  EXPECT_EQ(t.find(kChild)->exe, "/usr/bin/ls");
  EXPECT_EQ(t.find(kChild, 999), nullptr) << "another instance of the pid";
}

TEST(ProcessTable, ExitedProcessesStayUntilTheBound) {
  ProcessTable t;
  t.onExec(kParent, 1, 100, "sh", "/usr/bin/dash", {"sh"});
  t.onExit(kParent, 100);
  ASSERT_NE(t.find(kParent), nullptr) << "named after it exited";
  EXPECT_TRUE(t.find(kParent)->exited);
  t.onExit(kParent, 555);  // an exit of another instance changes nothing
  for (pid_t p = 1; p <= static_cast<pid_t>(ProcessTable::kMaxExited); ++p) {
    t.onFork(kChild + p, kParent, 1000 + p, "x");
    t.onExit(kChild + p, 1000 + p);
  }
  EXPECT_EQ(t.find(kParent), nullptr) << "oldest exited record evicted";
  EXPECT_LE(t.size(), ProcessTable::kMaxExited);
}

TEST(ProcessTable, ReusedPidStartsAFreshRecord) {
  ProcessTable t;
  t.onExec(kChild, kParent, 100, "a", "/bin/a", {"a"});
  t.onExit(kChild, 100);
  t.onFork(kChild, 1, 300, "b");
  ASSERT_NE(t.find(kChild), nullptr);
  EXPECT_FALSE(t.find(kChild)->exited);
  EXPECT_EQ(t.find(kChild)->start_time, 300u);
  EXPECT_EQ(t.find(kChild)->ppid, 1);
}

class ProcessEventsTest : public testing::Test {
 protected:
  void SetUp() override {
    char path[] = "/tmp/sv-procevents-XXXXXX";
    int fd = ::mkstemp(path);
    ASSERT_GE(fd, 0);
    ::close(fd);
    path_ = path;
  }
  void TearDown() override { ::unlink(path_.c_str()); }

  // Runs `events` through a ProcessEvents writing to a file; the lines back.
  std::vector<json> run(const std::vector<ProcEvent>& events, bool audit_mode = false) {
    std::vector<json> out;
    {
      AuditLog log(SessionInfo{.session_id = "s", .host = "h"});
      AuditSinkConfig sinks;
      sinks.paths = {path_};
      EXPECT_TRUE(log.open(sinks).ok());
      ProcessEvents pe(log, {.audit_mode = audit_mode, .quiet = true});
      for (const auto& e : events) pe.onEvent(e);
      log.flush();
    }
    std::ifstream in(path_);
    for (std::string line; std::getline(in, line);) {
      json j = json::parse(line, nullptr, false);
      if (!j.is_discarded() && j.value("category", "") != "session") out.push_back(std::move(j));
    }
    return out;
  }

  std::string path_;
};

TEST_F(ProcessEventsTest, ExecNamesItsExitedParent) {
  auto lines = run({exec(kParent, 1, 100, "/usr/bin/dash", {"sh", "-c", "ls"}),
                    event(ProcEventType::Fork, kChild, kParent, 200),
                    event(ProcEventType::Exit, kParent, kParent, 100),
                    exec(kChild, kParent, 200, "/usr/bin/ls", {"ls"})});
  ASSERT_EQ(lines.size(), 2u);
  const json& ls = lines[1];
  EXPECT_EQ(ls["category"], "process");
  EXPECT_EQ(ls["operation"], "exec");
  EXPECT_EQ(ls["decision"], "allow");
  EXPECT_EQ(ls["enforced_by"], "bpf:sched_process_exec");
  EXPECT_EQ(ls["rule"]["id"], "exec-recheck");
  EXPECT_EQ(ls["process"]["pid"], kChild);
  EXPECT_EQ(ls["process"]["ppid"], kParent);
  EXPECT_EQ(ls["process"]["start_time"], 200);
  EXPECT_EQ(ls["process"]["exe"], "/usr/bin/ls");
  EXPECT_EQ(ls["parent"]["exe"], "/usr/bin/dash");
  EXPECT_EQ(ls["exec"]["argv"], json::array({"ls"}));
}

// The kernel identity of the file at `path`, as the exec event carries it.
tracer::ExecFileId fileId(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
  auto id = tracer::execFileIdOf(fd.get());
  EXPECT_TRUE(id.ok()) << path;
  return id ? *id : tracer::ExecFileId{};
}

// A process gone from /proc before its exec event is read (a slow reader:
// CI's ASan build) is named by the binary that ran, not the link it was
// exec'd through — but only while the link still leads to that same file.
TEST_F(ProcessEventsTest, ExitedProcessIsNamedByTheBinaryThatRan) {
  char tmpl[] = "/tmp/sv-procexe-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, binary = dir + "/dash", link = dir + "/sh",
                    other = dir + "/other";
  for (const auto& f : {binary, other}) std::ofstream(f) << f;
  ASSERT_EQ(::symlink(binary.c_str(), link.c_str()), 0);

  ProcEvent ran = exec(kParent, 1, 100, link, {"sh"});
  ran.file = fileId(binary);
  ProcEvent swapped = exec(kChild, 1, 200, link, {"sh"});
  swapped.file = fileId(other);  // the link led elsewhere when it ran
  auto lines = run({ran, swapped});
  std::filesystem::remove_all(dir);

  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["process"]["exe"], binary);
  EXPECT_EQ(lines[0]["exec"]["path"], link) << "the path as exec'd stays";
  EXPECT_EQ(lines[1]["process"]["exe"], link) << "never a file that did not run";
}

// Network and LSM events name processes through the session's cache; an
// exec must drop the entry, or they would show the image before the exec.
TEST_F(ProcessEventsTest, ExecDropsTheProcessFromTheSessionCache) {
  ProcessCache cache;
  const pid_t self = ::getpid();
  (void)cache.lookup(self, self);
  (void)cache.lookup(self, self);
  ASSERT_EQ(cache.reads(), 1u) << "the second lookup is a hit";
  AuditLog log(SessionInfo{.session_id = "s", .host = "h"});
  ProcessEvents pe(log, {.quiet = true, .session_processes = &cache});
  pe.onEvent(exec(self, 1, 100, "/usr/bin/ls", {"ls"}));
  (void)cache.lookup(self, self);
  EXPECT_EQ(cache.reads(), 2u) << "read again from /proc after the exec";
}

// With no sink open, an exec's process is not read from /proc (the event
// is never encoded): the table keeps the path as exec'd. With a sink, the
// same live process is named by its /proc exe.
TEST_F(ProcessEventsTest, ExecReadsProcOnlyForAnEventThatIsWritten) {
  const pid_t self = ::getpid();
  const uint64_t start = readStartTime(self);
  ASSERT_GT(start, 0u);
  char own[4096];
  const ssize_t n = ::readlink("/proc/self/exe", own, sizeof own);
  ASSERT_GT(n, 0);
  const auto exeInTable = [&](AuditLog& log) {
    ProcessEvents pe(log, {.quiet = true});
    pe.onEvent(exec(self, 1, start, "/as/execd", {"x"}));
    const ProcessRecord* r = pe.table().find(self);
    return r ? r->exe : std::string("(no record)");
  };
  AuditLog silent(SessionInfo{.session_id = "s", .host = "h"});
  ASSERT_FALSE(silent.encodes());
  EXPECT_EQ(exeInTable(silent), "/as/execd");
  AuditLog written(SessionInfo{.session_id = "s", .host = "h"});
  AuditSinkConfig sinks;
  sinks.paths = {path_};
  ASSERT_TRUE(written.open(sinks).ok());
  ASSERT_TRUE(written.encodes());
  EXPECT_EQ(exeInTable(written), std::string(own, size_t(n)));
}

// A connect read after its process exited (python's last act before exit,
// read by a slow supervisor) finds nothing in /proc: the cache asks the
// table, which has what the kernel reported at the exec — also after the
// exit event, and for a forked child that runs its parent's image.
TEST_F(ProcessEventsTest, TheSessionCacheNamesAnExitedProcessFromTheTable) {
  ProcessCache cache;
  AuditLog log(SessionInfo{.session_id = "s", .host = "h"});
  {
    ProcessEvents pe(log, {.quiet = true, .session_processes = &cache});
    pe.onEvent(exec(kParent, 1, 100, "/usr/bin/python3", {"python3", "-c", "x"}));
    pe.onEvent(event(ProcEventType::Fork, kChild, kParent, 200));
    pe.onEvent(event(ProcEventType::Exit, kParent, kParent, 100));
    auto parent = cache.lookup(kParent, kParent);
    EXPECT_EQ(parent->exe, "/usr/bin/python3");
    EXPECT_EQ(parent->argv, (std::vector<std::string>{"python3", "-c", "x"}));
    EXPECT_EQ(parent->ppid, 1);
    EXPECT_EQ(cache.lookup(kChild, kChild)->exe, "/usr/bin/python3") << "the fork's image";
  }
  cache.forget(kChild);
  EXPECT_EQ(cache.lookup(kChild, kChild)->exe, "") << "no table once ProcessEvents is gone";
}

TEST_F(ProcessEventsTest, KilledExecIsAnExecDenialOfTheRecheck) {
  auto lines = run({exec(kChild, kParent, 200, "./tool-denied", {"denied", "RAN-DENIED"},
                         ExecVerdict::Mismatch)});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["category"], "exec");
  EXPECT_EQ(lines[0]["decision"], "deny");
  EXPECT_EQ(lines[0]["enforced_by"], "bpf:sched_process_exec");
  EXPECT_EQ(lines[0]["rule"]["id"], "exec-recheck");
  EXPECT_NE(lines[0]["rule"]["reason"].get<std::string>().find("swapped"), std::string::npos);
  EXPECT_EQ(lines[0]["exec"]["path"], "./tool-denied");
}

TEST_F(ProcessEventsTest, AuditModeReportsWouldDeny) {
  ProcEvent e = exec(kChild, kParent, 200, "/bin/x", {"x"}, ExecVerdict::Unapproved);
  e.killed = false;
  e.audit_only = true;
  auto lines = run({e}, /*audit_mode=*/true);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["decision"], "would-deny");
  EXPECT_EQ(lines[0]["category"], "exec");
}

}  // namespace
}  // namespace sv::supervisor
