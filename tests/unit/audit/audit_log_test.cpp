// AuditLog: sinks, gap-free seq, non-blocking writes and drop accounting.
#include "supervisor/audit/audit_log.h"
#include "tests/unit/audit/audit_test_util.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace sv::supervisor {
namespace {

using nlohmann::json;

AuditEvent decision(const std::string& verdict, const std::string& path = "/work/file") {
  return test::fileDecision(verdict, path);
}

std::vector<json> parseLines(const std::string& text) {
  std::vector<json> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    EXPECT_NE(end, std::string::npos) << "last line not terminated";
    if (end == std::string::npos) break;
    out.push_back(json::parse(text.substr(start, end - start)));
    start = end + 1;
  }
  return out;
}

std::string readAll(int fd) {
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, size_t(n));
  }
  return out;
}

struct Pipe {
  UniqueFd r, w;
  Pipe() {
    int fds[2];
    SV_CHECK(pipe2(fds, O_CLOEXEC) == 0);
    r.reset(fds[0]);
    w.reset(fds[1]);
  }
};

using test::slurp;
using test::TempDir;

TEST(AuditLogTest, FileSinkAppendsLinesWithMode0600) {
  TempDir dir;
  const std::string path = dir.path() + "/audit.jsonl";
  {
    AuditLog log(SessionInfo{"s1", "h"});
    ASSERT_TRUE(log.addFileSink(path).ok());
    EXPECT_EQ(log.emit(decision("allow")), 1u);
    EXPECT_EQ(log.emit(decision("deny")), 2u);
    log.close();
  }
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  {
    AuditLog log(SessionInfo{"s2", "h"});
    ASSERT_TRUE(log.open(AuditSinkConfig{{path}, {}, false}).ok());
    log.emit(decision("would-deny"));
  }  // destructor closes
  auto lines = parseLines(slurp(path));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["session_id"], "s1");
  EXPECT_EQ(lines[1]["decision"], "deny");
  EXPECT_EQ(lines[2]["session_id"], "s2");
  EXPECT_EQ(lines[2]["seq"], 1);  // seq is per session
}

TEST(AuditLogTest, FileSinkErrorNamesThePath) {
  AuditLog log(SessionInfo{"s", "h"});
  Status st = log.addFileSink("/nonexistent-dir-sv/audit.jsonl");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ENOENT);
  EXPECT_NE(st.error().message().find("/nonexistent-dir-sv/audit.jsonl"), std::string::npos);
}

// A kernel ring buffer's loss has no seq to name in a dropped record: the
// end event counts it, so the trail itself says events are missing.
TEST(AuditLogTest, TheEndEventCountsDecisionsTheKernelCouldNotReport) {
  Pipe p;
  AuditLog log(SessionInfo{"s", "h"});
  ASSERT_TRUE(log.addFdSink(UniqueFd(dup(p.w.get()))).ok());
  p.w.reset();
  log.emit(decision("deny"));
  log.countUnrecorded(5);
  log.countUnrecorded(2);
  log.finish(ExitStatus{0, 0, false});
  auto lines = parseLines(readAll(p.r.get()));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines.back()["session"]["counters"]["unrecorded"], 7);
  EXPECT_EQ(lines.back()["session"]["counters"]["decisions"], 1);
  EXPECT_EQ(log.counters().unrecorded, 7u);
}

TEST(AuditLogTest, SeqIsGapFreeAndCountersCount) {
  Pipe p;
  AuditLog log(SessionInfo{"s", "h"});
  ASSERT_TRUE(log.addFdSink(UniqueFd(dup(p.w.get()))).ok());
  p.w.reset();
  // More than a pipe holds, so a reader drains concurrently (until EOF at close).
  std::string text;
  std::thread reader([&] { text = readAll(p.r.get()); });
  const char* verdicts[] = {"allow", "deny", "would-deny"};
  for (int i = 0; i < 300; ++i) log.emit(decision(verdicts[i % 3]));
  log.finish(ExitStatus{0, 0, false});
  reader.join();
  auto lines = parseLines(text);
  ASSERT_EQ(lines.size(), 301u);
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(lines[i]["seq"], i + 1);
  const json& end = lines.back();
  EXPECT_EQ(end["operation"], "end");
  EXPECT_EQ(end["session"]["exit"]["code"], 0);
  EXPECT_EQ(end["session"]["counters"],
            (json{{"decisions", 300},
                  {"denials", 100},
                  {"would_deny", 100},
                  {"dropped", 0},
                  {"unrecorded", 0}}));
  AuditCounters c = log.counters();
  EXPECT_EQ(c.decisions, 300u);
  EXPECT_EQ(c.dropped, 0u);
}

// A session without audit output still numbers and counts every decision
// (the end of session, doctor and the exit summary use the counters).
TEST(AuditLogTest, WithoutSinksEveryDecisionIsStillCounted) {
  AuditLog log(SessionInfo{"s", "h"});
  const char* verdicts[] = {"allow", "deny", "would-deny"};
  uint64_t last = 0;
  for (int i = 0; i < 30; ++i) {
    const uint64_t seq = log.emit(decision(verdicts[i % 3]));
    EXPECT_EQ(seq, last + 1);
    last = seq;
  }
  AuditCounters c = log.counters();
  EXPECT_EQ(c.decisions, 30u);
  EXPECT_EQ(c.denials, 10u);
  EXPECT_EQ(c.would_deny, 10u);
  EXPECT_EQ(c.dropped, 0u);
}

// encodes(): whether an event emitted now is written somewhere, which is
// what the handlers ask before reading a process's /proc fields for it.
TEST(AuditLogTest, EncodesOnlyWhileASinkIsOpen) {
  TempDir dir;
  AuditLog log(SessionInfo{"s", "h"});
  EXPECT_FALSE(log.encodes()) << "no sink yet";
  ASSERT_TRUE(log.addFileSink(dir.path() + "/audit.jsonl").ok());
  EXPECT_TRUE(log.encodes());
  log.close();
  EXPECT_FALSE(log.encodes()) << "closed";
}

TEST(AuditLogTest, StdioFdsNeedTheExplicitStdoutSink) {
  AuditLog log(SessionInfo{"s", "h"});
  for (int fd : {0, 1, 2}) {
    Status st = log.addFdSink(UniqueFd(fd));
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, EINVAL);
  }
  EXPECT_GE(fcntl(1, F_GETFD), 0) << "refusing fd 1 must not close it";
}

TEST(AuditLogTest, PipeSinkDoesNotSetNonblockOnSharedDescription) {
  Pipe p;
  AuditLog log(SessionInfo{"s", "h"});
  ASSERT_TRUE(log.addFdSink(UniqueFd(dup(p.w.get()))).ok());
  // p.w shares the description we were handed; it must stay blocking.
  EXPECT_EQ(fcntl(p.w.get(), F_GETFL) & O_NONBLOCK, 0);
}

TEST(AuditLogTest, FullPipeDropsCountsAndReportsTheRange) {
  Pipe p;
  ASSERT_GE(fcntl(p.w.get(), F_SETPIPE_SZ, 4096), 0);
  ASSERT_EQ(fcntl(p.r.get(), F_SETFL, O_NONBLOCK), 0);
  AuditLogOptions opts;
  opts.max_buffer_bytes = 2048;
  AuditLog log(SessionInfo{"s", "h"}, opts);
  ASSERT_TRUE(log.addFdSink(UniqueFd(dup(p.w.get()))).ok());
  p.w.reset();

  constexpr int kEvents = 200;  // ~170 bytes each: far more than pipe + buffer
  for (int i = 0; i < kEvents; ++i) log.emit(decision("deny"));  // must not block
  const uint64_t dropped = log.counters().dropped;
  EXPECT_GT(dropped, 0u);
  EXPECT_LT(dropped, uint64_t(kEvents));
  EXPECT_EQ(log.pendingFds().size(), 1u);

  // The reader wakes up; the loop flushes until everything is out.
  std::string text;
  for (int round = 0; round < 100; ++round) {
    text += readAll(p.r.get());
    if (log.flush()) break;
  }
  text += readAll(p.r.get());
  EXPECT_TRUE(log.pendingFds().empty());
  log.emit(decision("allow"));  // seq kEvents + 1, after the dropped record
  log.close();
  text += readAll(p.r.get());

  auto lines = parseLines(text);
  uint64_t next = 1, reported = 0;
  int records = 0;
  for (const auto& l : lines) {
    if (l["operation"] == "dropped") {
      ++records;
      EXPECT_FALSE(l.contains("seq"));
      const json& d = l["dropped"];
      EXPECT_EQ(d["first_seq"], next);  // the record explains exactly the gap before it
      EXPECT_EQ(d["last_seq"].get<uint64_t>() - d["first_seq"].get<uint64_t>() + 1,
                d["count"].get<uint64_t>());
      next = d["last_seq"].get<uint64_t>() + 1;
      reported += d["count"].get<uint64_t>();
      EXPECT_EQ(d["total"], reported);
    } else {
      EXPECT_EQ(l["seq"], next) << l.dump();
      ++next;
    }
  }
  EXPECT_EQ(next, uint64_t(kEvents) + 2);
  EXPECT_GE(records, 1);
  EXPECT_EQ(reported, dropped);
  EXPECT_EQ(log.counters().dropped, dropped);
}

TEST(AuditLogTest, ReaderGoneFailsTheSinkWithoutSigpipe) {
  Pipe p;
  AuditLog log(SessionInfo{"s", "h"});
  ASSERT_TRUE(log.addFdSink(UniqueFd(dup(p.w.get()))).ok());
  p.w.reset();
  p.r.reset();  // nobody will ever read: write gets EPIPE (and SIGPIPE, which must not kill us)
  log.emit(decision("deny"));
  log.emit(decision("deny"));
  auto errors = log.sinkErrors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].code, EPIPE);
  EXPECT_EQ(log.counters().dropped, 2u);
  sigset_t pending;
  sigpending(&pending);
  EXPECT_FALSE(sigismember(&pending, SIGPIPE));
  log.close();
  EXPECT_EQ(log.sinkErrors().size(), 1u);
}

TEST(AuditLogTest, CloseGivesUpOnAStuckReaderAfterTimeout) {
  Pipe p;
  ASSERT_GE(fcntl(p.w.get(), F_SETPIPE_SZ, 4096), 0);
  AuditLogOptions opts;
  opts.close_timeout = std::chrono::milliseconds(100);
  AuditLog log(SessionInfo{"s", "h"}, opts);
  ASSERT_TRUE(log.addFdSink(UniqueFd(dup(p.w.get()))).ok());
  for (int i = 0; i < 100; ++i) log.emit(decision("allow"));
  auto t0 = std::chrono::steady_clock::now();
  log.close();  // p.r never read
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_GT(log.counters().dropped, 0u);
  ASSERT_EQ(log.sinkErrors().size(), 1u);
  EXPECT_EQ(log.sinkErrors()[0].code, ETIMEDOUT);
}

TEST(AuditLogTest, SessionEventsAreNeverDropped) {
  Pipe p;
  ASSERT_GE(fcntl(p.w.get(), F_SETPIPE_SZ, 4096), 0);
  ASSERT_EQ(fcntl(p.r.get(), F_SETFL, O_NONBLOCK), 0);
  AuditLogOptions opts;
  opts.max_buffer_bytes = 512;
  AuditLog log(SessionInfo{"s", "h"}, opts);
  ASSERT_TRUE(log.addFdSink(UniqueFd(dup(p.w.get()))).ok());
  for (int i = 0; i < 100; ++i) log.emit(decision("deny"));
  log.emit(sessionStartEvent({"late"}, nullptr, {}));  // buffer full, still kept
  std::string text;
  for (int i = 0; i < 100 && !log.flush(); ++i) text += readAll(p.r.get());
  text += readAll(p.r.get());
  bool found = false;
  for (const auto& l : parseLines(text)) found |= l["operation"] == "start";
  EXPECT_TRUE(found);
}

TEST(AuditLogTest, FifoPathWithoutReaderFailsInsteadOfBlocking) {
  TempDir dir;
  const std::string path = dir.path() + "/fifo";
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  AuditLog log(SessionInfo{"s", "h"});
  Status st = log.addFileSink(path);  // a blocking open would hang here
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ENXIO);
}

TEST(AuditLogTest, SocketSink) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  UniqueFd reader(sv[0]);
  AuditLog log(SessionInfo{"s", "h"});
  ASSERT_TRUE(log.addFdSink(UniqueFd(sv[1])).ok());
  log.emit(decision("deny", "/etc/shadow"));
  log.close();  // closes our end: the reader sees EOF
  auto lines = parseLines(readAll(reader.get()));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["file"]["path"], "/etc/shadow");
}

// The stdout sink shares the command's stdout: it must not make that
// description non-blocking. Runs in a child so our own stdout is untouched.
TEST(AuditLogTest, StdoutSinkLeavesStdoutBlocking) {
  Pipe p;
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (dup2(p.w.get(), STDOUT_FILENO) < 0) _exit(10);
    AuditLog log(SessionInfo{"s", "h"});
    if (!log.addStdoutSink().ok()) _exit(11);
    log.emit(decision("allow"));
    log.close();
    if (fcntl(STDOUT_FILENO, F_GETFL) & O_NONBLOCK) _exit(12);
    _exit(0);
  }
  p.w.reset();
  std::string text = readAll(p.r.get());
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  auto lines = parseLines(text);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["seq"], 1);
}

TEST(AuditLogTest, EmitAfterCloseIsCountedAsDropped) {
  AuditLog log(SessionInfo{"s", "h"});
  log.close();
  EXPECT_EQ(log.emit(decision("deny")), 1u);
  EXPECT_EQ(log.counters().dropped, 1u);
  EXPECT_EQ(log.counters().denials, 1u);
}

}  // namespace
}  // namespace sv::supervisor
