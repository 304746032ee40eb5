// Audit sinks: file rotation and reopen, RFC 5424 framing, the spool, and the
// syslog transports against an in-process loopback receiver (UDP, TCP),
// including a receiver that goes away and comes back (replay, spool) and one
// that never answers within the spool cap (an exact `dropped` record).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "supervisor/audit/sinks/net_transport.h"
#include "supervisor/audit/sinks/spool.h"
#include "supervisor/audit/sinks/syslog_frame.h"
#include "supervisor/audit/audit_log.h"
#include "tests/unit/audit/audit_test_util.h"
#include "tests/unit/audit/syslog_parse.h"

namespace sv::supervisor {
namespace {

using nlohmann::json;

AuditEvent decision(const std::string& verdict, const std::string& path = "/work/file") {
  return test::fileDecision(verdict, path, "denyWrite:.env");
}

using test::slurp;
using test::TempDir;

std::vector<json> jsonLines(const std::string& text) {
  std::vector<json> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) break;
    out.push_back(json::parse(text.substr(start, end - start)));
    start = end + 1;
  }
  return out;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// --- file sink ---------------------------------------------------------------

TEST(FileSinkTest, RotatesBySizeKeepsMaxFilesAndNeverSplitsALine) {
  TempDir dir;
  const std::string path = dir.path() + "/audit.jsonl";
  constexpr uint64_t kMax = 4096;
  {
    AuditLog log(SessionInfo{"s", "h"});
    ASSERT_TRUE(log.addFileSink(path, audit::FileRotation{kMax, 3}).ok());
    for (int i = 0; i < 200; ++i) log.emit(decision("allow"));
    log.close();
  }
  EXPECT_TRUE(exists(path));
  EXPECT_TRUE(exists(path + ".1"));
  EXPECT_TRUE(exists(path + ".2"));
  EXPECT_FALSE(exists(path + ".3")) << "maxFiles 3 counts the live file";
  // Oldest first: .2, .1, live. Each file whole lines, within the cap, and
  // the seqs run on from file to file up to the last one.
  std::vector<json> all;
  for (const std::string& f : {path + ".2", path + ".1", path}) {
    const std::string text = slurp(f);
    EXPECT_LE(text.size(), kMax) << f;
    ASSERT_FALSE(text.empty()) << f;
    EXPECT_EQ(text.back(), '\n') << f;
    for (auto& l : jsonLines(text)) all.push_back(l);
  }
  ASSERT_FALSE(all.empty());
  for (size_t i = 1; i < all.size(); ++i) EXPECT_EQ(all[i]["seq"], all[i - 1]["seq"].get<int>() + 1);
  EXPECT_EQ(all.back()["seq"], 200);
}

TEST(FileSinkTest, ReopenAfterLogrotateMovedTheFile) {
  TempDir dir;
  const std::string path = dir.path() + "/audit.jsonl";
  AuditLog log(SessionInfo{"s", "h"});
  ASSERT_TRUE(log.addFileSink(path).ok());
  for (int i = 0; i < 3; ++i) log.emit(decision("allow"));
  log.flush();
  ASSERT_EQ(::rename(path.c_str(), (path + ".old").c_str()), 0);
  log.emit(decision("deny"));  // still goes to the moved file, as with any logger
  log.flush();
  ASSERT_TRUE(log.reopen().ok());
  EXPECT_TRUE(exists(path)) << "reopen creates the path again";
  for (int i = 0; i < 2; ++i) log.emit(decision("allow"));
  log.close();
  auto old_lines = jsonLines(slurp(path + ".old"));
  auto new_lines = jsonLines(slurp(path));
  ASSERT_EQ(old_lines.size(), 4u);
  ASSERT_EQ(new_lines.size(), 2u);
  EXPECT_EQ(new_lines[0]["seq"], 5);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

// --- framing -------------------------------------------------------------------

TEST(SyslogFrameTest, Rfc5424WithStructuredDataAndOctetCounting) {
  audit::SyslogFields f;
  f.host = "host one";  // a space is not allowed in HOSTNAME
  f.session_id = "abc";
  f.procid = 42;
  f.msgid = "file";
  f.severity = 4;
  f.seq = 7;
  f.operation = "open";
  f.decision = "deny";
  f.rule_id = R"(a"b\c]d)";
  f.pid = 99;
  std::string out;
  const timespec t{1700000000, 123456789};
  audit::appendSyslog(out, /*octet_counting=*/true, t, f, R"({"seq":7})");
  auto frames = test::splitOctetCounted(out);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0],
            R"(<108>1 2023-11-14T22:13:20.123456Z host_one supervise 42 file [sv@32473 seq="7" )"
            R"(session="abc" operation="open" decision="deny" rule="a\"b\\c\]d" pid="99"] {"seq":7})");
  auto m = test::parseSyslog(frames[0]);
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(m.sd["rule"], R"(a"b\c]d)");
  EXPECT_EQ(m.msg["seq"], 7);
}

// --- spool ---------------------------------------------------------------------

TEST(SpoolTest, FifoWithinTheCapAndSpaceComesBack) {
  auto spool = audit::Spool::create("/tmp", 100);
  ASSERT_TRUE(spool.ok()) << spool.error().message();
  auto& s = **spool;
  ASSERT_TRUE(s.fits(40));
  ASSERT_TRUE(s.push(std::string(40, 'a')).ok());
  ASSERT_TRUE(s.push(std::string(40, 'b')).ok());
  EXPECT_FALSE(s.fits(40)) << "88 bytes used of 100";
  std::string buf;
  std::vector<uint32_t> lens;
  ASSERT_TRUE(s.popInto(1, buf, lens).ok());
  EXPECT_EQ(buf, std::string(40, 'a'));
  EXPECT_TRUE(s.fits(40));
  ASSERT_TRUE(s.push(std::string(50, 'c')).ok());
  ASSERT_TRUE(s.popInto(1000, buf, lens).ok());
  EXPECT_EQ(buf, std::string(40, 'a') + std::string(40, 'b') + std::string(50, 'c'));
  EXPECT_EQ(lens, (std::vector<uint32_t>{40, 40, 50}));
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.bytes(), 0u);
}

TEST(SpoolTest, RecordLongerThanOneReadChunk) {
  auto spool = audit::Spool::create("", 1 << 20);
  ASSERT_TRUE(spool.ok());
  const std::string big(100000, 'x');
  ASSERT_TRUE((*spool)->push("small").ok());
  ASSERT_TRUE((*spool)->push(big).ok());
  std::string buf;
  std::vector<uint32_t> lens;
  ASSERT_TRUE((*spool)->popInto(10, buf, lens).ok());
  ASSERT_TRUE((*spool)->popInto(10, buf, lens).ok());
  EXPECT_EQ(buf, "small" + big);
  EXPECT_TRUE((*spool)->empty());
}

TEST(NetAddressTest, Parses) {
  auto a = audit::parseNetAddress("tls://[::1]:6514");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->proto, audit::NetProto::kTls);
  EXPECT_EQ(a->host, "::1");
  EXPECT_EQ(a->port, 6514);
  EXPECT_FALSE(audit::parseNetAddress("tcp://host").ok());
  EXPECT_FALSE(audit::parseNetAddress("http://h:1").ok());
  EXPECT_FALSE(audit::parseNetAddress("udp://h:70000").ok());
}

// --- network sinks against a loopback receiver ---------------------------------

// Accepts TCP connections on 127.0.0.1 and keeps what each one sent; or
// receives UDP datagrams. stop() cuts everything (RST), like a killed daemon;
// start() listens again on the same port.
class Receiver {
 public:
  explicit Receiver(bool udp = false, int port = 0) : udp_(udp) { start(port); }
  ~Receiver() { stop(); }
  int port() const { return port_; }

  void start(int port) {
    listen_fd_ = socket(AF_INET, (udp_ ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(uint16_t(port));
    SV_CHECK(bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    if (!udp_) SV_CHECK(listen(listen_fd_, 8) == 0);
    stop_ = false;
    thread_ = std::thread([this] { run(); });
  }

  // Killed: what the kernel holds unread is lost, senders get an RST.
  void stop() {
    if (!thread_.joinable()) return;
    stop_ = true;
    thread_.join();
  }
  // Graceful: reads until every sender closed (up to 5 s), then stops.
  void finish() {
    for (int i = 0; i < 500 && open_conns_ > 0; ++i) usleep(10000);
    usleep(50000);
    stop();
  }

  // Every message, connection after connection (torn tails left out).
  std::vector<test::SyslogMessage> messages() {
    std::lock_guard lock(mu_);
    std::vector<test::SyslogMessage> out;
    for (const auto& stream : streams_) {
      if (udp_) {
        out.push_back(test::parseSyslog(stream));
        continue;
      }
      for (const auto& f : test::splitOctetCounted(stream)) out.push_back(test::parseSyslog(f));
    }
    return out;
  }

 private:
  void run() {
    std::vector<int> conns;
    std::vector<size_t> slot;
    char buf[65536];
    while (!stop_) {
      if (paused_) {
        usleep(5000);
        continue;
      }
      std::vector<pollfd> p{{listen_fd_, POLLIN, 0}};
      for (int c : conns) p.push_back({c, POLLIN, 0});
      if (poll(p.data(), p.size(), 20) <= 0) continue;
      if (p[0].revents & POLLIN) {
        if (udp_) {
          ssize_t n = recv(listen_fd_, buf, sizeof buf, 0);
          std::lock_guard lock(mu_);
          if (n > 0) streams_.emplace_back(buf, size_t(n));
        } else {
          int c = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
          if (c >= 0) {
            std::lock_guard lock(mu_);
            conns.push_back(c);
            ++open_conns_;
            slot.push_back(streams_.size());
            streams_.emplace_back();
          }
        }
      }
      // Only the connections polled above (p[i + 1] is conns[i]); backwards, so
      // closing one leaves the lower indices as they were.
      for (size_t i = p.size() - 1; i-- > 0;) {
        if (!(p[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t n = recv(conns[i], buf, sizeof buf, 0);
        if (n > 0) {
          std::lock_guard lock(mu_);
          streams_[slot[i]].append(buf, size_t(n));
        } else if (n == 0) {
          close(conns[i]);
          --open_conns_;
          conns.erase(conns.begin() + std::ptrdiff_t(i));
          slot.erase(slot.begin() + std::ptrdiff_t(i));
        }
      }
    }
    // A killed receiver: unread bytes are lost and the sender gets an RST.
    linger lg{1, 0};
    for (int c : conns) {
      setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
      close(c);
    }
    open_conns_ = 0;
    close(listen_fd_);
  }

  bool udp_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> open_conns_{0};

 public:
  std::atomic<bool> paused_{false};  // a busy receiver: bytes pile up unread
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> streams_;
};

// Flushes like the supervisor's loop until `done` or the time is up.
template <typename Done>
void pump(AuditLog& log, Done done, int ms = 5000) {
  for (int i = 0; i < ms / 5 && !done(); ++i) {
    log.flush();
    usleep(5000);
  }
}

// seq of each decision message, in arrival order; checks every message.
std::vector<uint64_t> seqs(const std::vector<test::SyslogMessage>& msgs) {
  std::vector<uint64_t> out;
  for (const auto& m : msgs) {
    EXPECT_TRUE(m.ok);
    if (m.msgid == "dropped" || !m.msg.contains("seq")) continue;
    EXPECT_EQ(m.sd.at("seq"), std::to_string(m.msg["seq"].get<uint64_t>()));
    out.push_back(m.msg["seq"]);
  }
  return out;
}

// Gap-free from 1 to n: duplicates allowed (a replay), first arrivals in order.
void expectGapFree(const std::vector<uint64_t>& got, uint64_t n) {
  std::set<uint64_t> seen;
  uint64_t last_new = 0;
  for (uint64_t s : got) {
    if (seen.insert(s).second) {
      EXPECT_EQ(s, last_new + 1) << "out of order or gap";
      last_new = s;
    }
  }
  EXPECT_EQ(seen.size(), n);
  EXPECT_EQ(last_new, n);
  if (got.size() > seen.size())
    std::cerr << "note: " << got.size() - seen.size() << " duplicates (replayed after a reconnect)\n";
}

TEST(SyslogSinkTest, TcpDeliversEveryEventInOrderWithStructuredData) {
  Receiver rx;
  AuditLog log(SessionInfo{"sess1", "myhost"});
  ASSERT_TRUE(log.addSyslogSink("tcp://127.0.0.1:" + std::to_string(rx.port())).ok());
  for (int i = 0; i < 1000; ++i) log.emit(decision(i % 2 ? "deny" : "allow"));
  log.close();
  rx.finish();
  auto msgs = rx.messages();
  ASSERT_EQ(msgs.size(), 1000u);
  expectGapFree(seqs(msgs), 1000);
  EXPECT_EQ(msgs[1].pri, 13 * 8 + 4);  // log audit, warning (deny)
  EXPECT_EQ(msgs[0].pri, 13 * 8 + 6);
  EXPECT_EQ(msgs[1].host, "myhost");
  EXPECT_EQ(msgs[1].app, "supervise");
  EXPECT_EQ(msgs[1].msgid, "file");
  EXPECT_EQ(msgs[1].sd["session"], "sess1");
  EXPECT_EQ(msgs[1].sd["decision"], "deny");
  EXPECT_EQ(msgs[1].sd["rule"], "denyWrite:.env");
  EXPECT_EQ(msgs[1].msg["file"]["path"], "/work/file");
}

TEST(SyslogSinkTest, UdpOneDatagramPerEvent) {
  Receiver rx(/*udp=*/true);
  AuditLog log(SessionInfo{"s", "h"});
  ASSERT_TRUE(log.addSyslogSink("udp://127.0.0.1:" + std::to_string(rx.port())).ok());
  for (int i = 0; i < 50; ++i) log.emit(decision("allow"));
  pump(log, [&] { return rx.messages().size() >= 50; });
  log.close();
  rx.stop();
  expectGapFree(seqs(rx.messages()), 50);
}

TEST(SyslogSinkTest, EmitNeverTouchesTheNetwork) {
  Receiver rx;
  AuditLog log(SessionInfo{"s", "h"});
  ASSERT_TRUE(log.addSyslogSink("tcp://127.0.0.1:" + std::to_string(rx.port())).ok());
  for (int i = 0; i < 10; ++i) log.emit(decision("allow"));
  usleep(100000);
  EXPECT_TRUE(rx.messages().empty()) << "network sinks are written by flush() only";
  pump(log, [&] { return rx.messages().size() >= 10; });
  EXPECT_EQ(rx.messages().size(), 10u);
}

TEST(SyslogSinkTest, ReceiverRestartLosesNothing) {
  Receiver rx;
  const int port = rx.port();
  TempDir dir;
  AuditLogOptions opts;
  opts.max_buffer_bytes = 64 << 10;  // small memory queue: the spool takes over
  AuditLog log(SessionInfo{"s", "h"}, opts);
  SyslogSinkOptions so;
  so.spool_dir = dir.path();
  ASSERT_TRUE(log.addSyslogSink("tcp://127.0.0.1:" + std::to_string(port), so).ok());
  constexpr int kN = 20000;
  for (int i = 0; i < kN; ++i) {
    log.emit(decision("allow"));
    if (i % 100 == 0) log.flush();
    if (i == kN / 8) rx.paused_ = true;  // busy: the socket buffers fill up
    if (i == kN / 4) rx.stop();          // then killed: the unread bytes are gone
    if (i == kN / 2) {
      rx.paused_ = false;
      rx.start(port);
    }
  }
  log.close();
  EXPECT_EQ(log.counters().dropped, 0u);
  rx.finish();
  expectGapFree(seqs(rx.messages()), kN);
}

TEST(SyslogSinkTest, SpoolCapHitReportsExactlyWhatWasLost) {
  // Reserve a port with nobody listening, then listen on it only at the end.
  int port;
  {
    Receiver probe;
    port = probe.port();
  }
  TempDir dir;
  AuditLogOptions opts;
  opts.max_buffer_bytes = 32 << 10;
  opts.close_timeout = std::chrono::milliseconds(5000);
  AuditLog log(SessionInfo{"s", "h"}, opts);
  SyslogSinkOptions so;
  so.spool_dir = dir.path();
  so.spool_max_bytes = 64 << 10;
  ASSERT_TRUE(log.addSyslogSink("tcp://127.0.0.1:" + std::to_string(port), so).ok());
  constexpr uint64_t kN = 3000;
  for (uint64_t i = 0; i < kN; ++i) {
    log.emit(decision("allow"));
    if (i % 100 == 0) log.flush();
  }
  const uint64_t dropped = log.counters().dropped;
  EXPECT_GT(dropped, 0u);
  EXPECT_LT(dropped, kN);
  Receiver back(/*udp=*/false, port);  // the receiver appears only for the final drain
  log.close();
  back.finish();
  auto msgs = back.messages();
  std::set<uint64_t> got;
  uint64_t reported = 0, first = 0, last = 0;
  for (const auto& m : msgs) {
    ASSERT_TRUE(m.ok);
    if (m.msgid == "dropped") {
      reported += std::stoull(m.sd.at("dropped"));
      first = std::stoull(m.sd.at("first"));
      last = std::stoull(m.sd.at("last"));
      EXPECT_EQ(m.msg["dropped"]["count"], std::stoull(m.sd.at("dropped")));
    } else {
      got.insert(m.msg["seq"].get<uint64_t>());
    }
  }
  EXPECT_EQ(reported, dropped) << "the dropped record states exactly how many were lost";
  EXPECT_EQ(got.size() + reported, kN);
  for (uint64_t s = first; s <= last; ++s) EXPECT_FALSE(got.count(s)) << s;
}

}  // namespace
}  // namespace sv::supervisor
