// End to end against a real rsyslog (Debian's rsyslogd): `supervise` with a
// syslog sink over a command that makes many decisions; every event arrives
// intact (the MSG is byte for byte the line of a file sink of the same run),
// in order, seq gap-free, with the sv@32473 structured data. TLS with a
// certificate made here with certtool. A receiver killed mid-run and back 5 s
// later loses nothing; a receiver gone for the whole run with a tiny spool
// cap gets a `dropped` record stating exactly how many were lost.
//
// Each test writes its own rsyslog config (imtcp on a free loopback port,
// omfile with a raw template, pid and work files in a temp dir) and runs
// `rsyslogd -n -f conf -i pidfile`: no system config is read or touched.
// Needs root and seccomp user-notify; skips without rsyslogd (or certtool).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/audit/syslog_parse.h"

namespace {

using nlohmann::json;
constexpr const char* kRsyslogd = "/usr/sbin/rsyslogd";

bool executable(const std::string& p) { return ::access(p.c_str(), X_OK) == 0; }

// Whole-buffer read: char by char costs minutes on 100 MB at -O0 (the sanitizer build).
std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(l);
  return out;
}

int freePort() {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  close(s);
  return ntohs(a.sin_port);
}

bool accepting(int port) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(uint16_t(port));
  const bool ok = connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(s);
  return ok;
}

double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One rsyslogd of our own: imtcp (optionally TLS) → omfile with %rawmsg%.
class Rsyslog {
 public:
  Rsyslog(std::string dir, int port, bool tls) : dir_(std::move(dir)), port_(port), tls_(tls) {
    std::ofstream conf(dir_ + "/rsyslog.conf");
    conf << "global(workDirectory=\"" << dir_ << "/work\" maxMessageSize=\"1m\"";
    if (tls_) {
      conf << " defaultNetstreamDriver=\"gtls\" defaultNetstreamDriverCAFile=\"" << dir_
           << "/ca.pem\" defaultNetstreamDriverCertFile=\"" << dir_
           << "/cert.pem\" defaultNetstreamDriverKeyFile=\"" << dir_ << "/key.pem\"";
    }
    conf << ")\n";
    conf << "module(load=\"imtcp\" maxSessions=\"16\"";
    if (tls_) conf << " streamDriver.name=\"gtls\" streamDriver.mode=\"1\" streamDriver.authMode=\"anon\"";
    conf << ")\n"
         << "template(name=\"raw\" type=\"string\" string=\"%rawmsg%\\n\")\n"
         << "ruleset(name=\"out\") { action(type=\"omfile\" file=\"" << dir_
         << "/received.log\" template=\"raw\") }\n"
         << "input(type=\"imtcp\" address=\"127.0.0.1\" port=\"" << port_
         << "\" ruleset=\"out\")\n";
    ::mkdir((dir_ + "/work").c_str(), 0700);
  }
  ~Rsyslog() { stop(SIGTERM); }

  bool start() {
    pid_ = fork();
    if (pid_ == 0) {
      std::string log = dir_ + "/rsyslogd.out";
      FILE* f = freopen(log.c_str(), "a", stdout);
      (void)f;
      dup2(1, 2);
      execl(kRsyslogd, "rsyslogd", "-n", "-f", (dir_ + "/rsyslog.conf").c_str(), "-i",
            (dir_ + "/rsyslogd.pid").c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 200; ++i) {
      if (accepting(port_)) return true;
      usleep(50000);
    }
    return false;
  }

  void stop(int sig) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    int st;
    waitpid(pid_, &st, 0);
    pid_ = -1;
  }

  std::vector<sv::test::SyslogMessage> messages() const {
    std::vector<sv::test::SyslogMessage> out;
    for (const auto& l : lines(slurp(dir_ + "/received.log"))) out.push_back(sv::test::parseSyslog(l));
    return out;
  }
  std::string log() const { return slurp(dir_ + "/rsyslogd.out"); }

 private:
  std::string dir_;
  int port_;
  bool tls_;
  pid_t pid_ = -1;
};

class SyslogE2E : public testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root: euid " << geteuid();
    if (!executable(kRsyslogd)) GTEST_SKIP() << "needs rsyslogd: " << kRsyslogd << " not found";
    char tmpl[] = "/tmp/sv-syslog-e2e-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // The command: N opens, then its own wall time (the supervisor's start
    // and final drain are not the command's).
    std::ofstream(dir_ + "/loop.py")
        << "import os, sys, time\n"
           "t = time.monotonic()\n"
           "for i in range(int(sys.argv[1])):\n"
           "    os.close(os.open('f.txt', os.O_RDONLY | os.O_CREAT, 0o644))\n"
           "open('elapsed', 'w').write(str(time.monotonic() - t))\n";
    port_ = freePort();
  }
  void TearDown() override {
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }

  // Starts supervise in the background; returns its pid.
  pid_t startSupervise(const std::string& sink_json, int decisions) {
    const std::string cmd = "cd " + dir_ + " && exec " + SUPERVISE_BIN +
                            " --quiet --audit-file audit.jsonl -o 'audit.sinks+=" + sink_json +
                            "' -- /usr/bin/python3 loop.py " + std::to_string(decisions) +
                            " >/dev/null 2>" + dir_ + "/stderr";
    pid_t pid = fork();
    if (pid == 0) {
      execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    return pid;
  }
  int wait(pid_t pid) {
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  int runSupervise(const std::string& sink_json, int decisions) {
    return wait(startSupervise(sink_json, decisions));
  }
  std::string tcpSink(const std::string& extra = "") {
    return R"({"type":"syslog","path":"tcp://127.0.0.1:)" + std::to_string(port_) + "\"" + extra +
           "}";
  }
  // Waits until the receiver has written the session end event.
  void waitForEnd(const Rsyslog& rx) {
    (void)rx;
    for (int i = 0; i < 300; ++i) {
      if (slurp(dir_ + "/received.log").find("operation=\"end\"") != std::string::npos) return;
      usleep(100000);
    }
  }
  double commandSeconds() { return std::stod(slurp(dir_ + "/elapsed")); }

  // Every event of the file sink arrived through syslog, MSG byte for byte,
  // first arrivals in seq order, nothing missing; returns the duplicates.
  size_t expectSameAsFileSink(const std::vector<sv::test::SyslogMessage>& msgs) {
    const auto file = lines(slurp(dir_ + "/audit.jsonl"));
    std::map<uint64_t, std::string> by_seq;
    for (const auto& l : file) by_seq[json::parse(l)["seq"].get<uint64_t>()] = l;
    EXPECT_GT(by_seq.size(), 2u);
    std::set<uint64_t> seen;
    uint64_t last = 0;
    size_t dups = 0;
    for (const auto& m : msgs) {
      EXPECT_TRUE(m.ok) << "unparseable message";
      if (!m.ok || m.msgid == "dropped") continue;
      const uint64_t seq = m.msg["seq"];
      EXPECT_EQ(m.sd.at("seq"), std::to_string(seq));
      EXPECT_EQ(m.sd.at("session"), m.msg["session_id"]);
      EXPECT_EQ(m.msgid, m.msg["category"]);
      if (m.msg.contains("decision")) {
        EXPECT_EQ(m.sd.at("decision"), m.msg["decision"]);
      }
      EXPECT_EQ(m.msg.dump(), json::parse(by_seq[seq]).dump()) << "seq " << seq << " changed";
      if (!seen.insert(seq).second) {
        ++dups;
        continue;
      }
      EXPECT_EQ(seq, last + 1) << "gap or reorder";
      last = seq;
    }
    EXPECT_EQ(seen.size(), by_seq.size());
    EXPECT_EQ(last, by_seq.rbegin()->first);
    return dups;
  }

  bool makeCertificates() {
    if (!executable("/usr/bin/certtool")) return false;
    std::ofstream(dir_ + "/ca.tmpl") << "cn = \"supervise test CA\"\nca\ncert_signing_key\n"
                                        "expiration_days = 2\n";
    std::ofstream(dir_ + "/server.tmpl")
        << "cn = \"localhost\"\ndns_name = \"localhost\"\nip_address = \"127.0.0.1\"\n"
           "tls_www_server\nencryption_key\nsigning_key\nexpiration_days = 2\n";
    const std::string d = dir_;
    const std::string cmd =
        "cd " + d + " && (certtool --generate-privkey --outfile ca-key.pem && "
        "certtool --generate-self-signed --load-privkey ca-key.pem --template ca.tmpl "
        "--outfile ca.pem && certtool --generate-privkey --outfile key.pem && "
        "certtool --generate-certificate --load-privkey key.pem --load-ca-certificate ca.pem "
        "--load-ca-privkey ca-key.pem --template server.tmpl --outfile cert.pem)";
    return std::system((cmd + " >certtool.out 2>&1").c_str()) == 0;
  }

  std::string dir_;
  int port_ = 0;
};

TEST_F(SyslogE2E, TcpEveryEventArrivesIntactInOrder) {
  Rsyslog rx(dir_, port_, false);
  ASSERT_TRUE(rx.start()) << rx.log();
  const int status = runSupervise(tcpSink(), 5000);
  if (status == 125) GTEST_SKIP() << "needs a host supervise can enforce on: " << slurp(dir_ + "/stderr");
  ASSERT_EQ(status, 0) << slurp(dir_ + "/stderr");
  waitForEnd(rx);
  rx.stop(SIGTERM);
  auto msgs = rx.messages();
  EXPECT_GE(msgs.size(), 5000u);
  EXPECT_EQ(expectSameAsFileSink(msgs), 0u);
  // The structured data of a decision.
  for (const auto& m : msgs) {
    if (m.msgid != "file") continue;
    EXPECT_EQ(m.app, "supervise");
    EXPECT_EQ(m.pri, 13 * 8 + 6);
    EXPECT_EQ(m.sd.at("decision"), "allow");
    EXPECT_EQ(m.sd.at("operation"), m.msg["operation"]);
    EXPECT_EQ(m.sd.at("pid"), std::to_string(m.msg["process"]["pid"].get<int>()));
    break;
  }
}

TEST_F(SyslogE2E, TlsWithACertificateMadeHere) {
  if (!makeCertificates()) GTEST_SKIP() << "needs certtool (gnutls-bin): " << slurp(dir_ + "/certtool.out");
  Rsyslog rx(dir_, port_, true);
  ASSERT_TRUE(rx.start()) << rx.log();
  const std::string sink = R"({"type":"syslog","path":"tls://127.0.0.1:)" + std::to_string(port_) +
                           R"(","caFile":")" + dir_ + "/ca.pem\"}";
  const int status = runSupervise(sink, 2000);
  if (status == 125) GTEST_SKIP() << "needs a host supervise can enforce on: " << slurp(dir_ + "/stderr");
  ASSERT_EQ(status, 0) << slurp(dir_ + "/stderr");
  waitForEnd(rx);
  rx.stop(SIGTERM);
  auto msgs = rx.messages();
  EXPECT_GE(msgs.size(), 2000u) << rx.log();
  EXPECT_EQ(expectSameAsFileSink(msgs), 0u);
}

TEST_F(SyslogE2E, TlsRefusesAReceiverItCannotVerify) {
  if (!makeCertificates()) GTEST_SKIP() << "needs certtool (gnutls-bin)";
  Rsyslog rx(dir_, port_, true);
  ASSERT_TRUE(rx.start()) << rx.log();
  // Trusting only the system store, the test CA's certificate must fail:
  // nothing reaches the receiver, and the loss is counted, not hidden.
  const std::string sink = R"({"type":"syslog","path":"tls://127.0.0.1:)" + std::to_string(port_) +
                           R"(","spoolMaxMb":0})";
  const int status = runSupervise(sink, 50);
  if (status == 125) GTEST_SKIP() << "needs a host supervise can enforce on";
  EXPECT_EQ(status, 0);
  rx.stop(SIGTERM);
  EXPECT_TRUE(rx.messages().empty());
  const auto file = lines(slurp(dir_ + "/audit.jsonl"));
  ASSERT_FALSE(file.empty());
  EXPECT_GT(json::parse(file.back())["session"]["counters"]["dropped"].get<int>(), 0);
}

TEST_F(SyslogE2E, ReceiverKilledAndBackFiveSecondsLaterLosesNothing) {
  Rsyslog rx(dir_, port_, false);
  ASSERT_TRUE(rx.start()) << rx.log();
#ifdef SV_SANITIZED
  // Checking 100k events at -O0 takes minutes; with 30k the receiver still dies
  // mid-run and the spool carries the rest to the restarted one.
  constexpr int kDecisions = 30000;
#else
  constexpr int kDecisions = 100000;
#endif
  const double t0 = nowSeconds();
  // ~1 KiB per event, 14k events/s here: 5 s down is ~70 MiB to spool.
  pid_t sup = startSupervise(tcpSink(R"(,"spoolMaxMb":1024)"), kDecisions);
  // Kill it once events flow, restart 5 s later on the same port.
  auto received = [&] {
    const std::string text = slurp(dir_ + "/received.log");
    return size_t(std::count(text.begin(), text.end(), '\n'));
  };
  for (int i = 0; i < 1000 && received() < 2000; ++i) usleep(20000);
  rx.stop(SIGKILL);
  // A receiver killed mid-write can leave half a line in its file, which the
  // restarted one would run into the next message. What it had not fully
  // written is not received: cut it (supervise replays its recent window).
  {
    const std::string text = slurp(dir_ + "/received.log");
    ASSERT_EQ(truncate((dir_ + "/received.log").c_str(),
                       static_cast<off_t>(text.rfind('\n') + 1)),
              0);
  }
  const size_t before = received();
  sleep(5);
  ASSERT_TRUE(rx.start()) << rx.log();
  const int status = wait(sup);
  if (status == 125) GTEST_SKIP() << "needs a host supervise can enforce on";
  ASSERT_EQ(status, 0) << slurp(dir_ + "/stderr");
  waitForEnd(rx);
  rx.stop(SIGTERM);
  auto msgs = rx.messages();
  std::cerr << "note: killed after " << before << " messages; run " << nowSeconds() - t0
            << " s, command " << commandSeconds() << " s\n";
  const size_t dups = expectSameAsFileSink(msgs);
  std::cerr << "note: " << dups << " duplicates (the replay window after the reconnect)\n";
  EXPECT_GE(msgs.size(), size_t(kDecisions));
  EXPECT_LT(before, size_t(kDecisions) / 2) << "the receiver must die mid-run";
}

TEST_F(SyslogE2E, ReceiverGoneWholeRunTinySpoolReportsExactLoss) {
  constexpr int kDecisions = 40000;
  // The healthy run, for the wall time of the command.
  double healthy;
  {
    Rsyslog rx(dir_, port_, false);
    ASSERT_TRUE(rx.start()) << rx.log();
    const int status = runSupervise(tcpSink(), kDecisions);
    if (status == 125) GTEST_SKIP() << "needs a host supervise can enforce on";
    ASSERT_EQ(status, 0);
    healthy = commandSeconds();
    rx.stop(SIGTERM);
  }
  std::system(("rm -f " + dir_ + "/received.log " + dir_ + "/audit.jsonl " + dir_ + "/elapsed").c_str());
  // Down for the whole command; the receiver appears only for the final
  // drain (supervise retries for up to 5 s after the command exits).
  Rsyslog rx(dir_, port_, false);
  pid_t sup = startSupervise(tcpSink(R"(,"spoolMaxMb":0.05)"), kDecisions);
  for (int i = 0; i < 600 && ::access((dir_ + "/elapsed").c_str(), F_OK) != 0; ++i) usleep(50000);
  ASSERT_TRUE(rx.start()) << rx.log();
  ASSERT_EQ(wait(sup), 0) << slurp(dir_ + "/stderr");
  const double down = commandSeconds();
  waitForEnd(rx);
  rx.stop(SIGTERM);
  std::cerr << "note: command wall time, receiver down / healthy: " << down << " / " << healthy
            << " = " << down / healthy << "\n";

  uint64_t reported = 0;
  std::set<uint64_t> got;
  for (const auto& m : rx.messages()) {
    ASSERT_TRUE(m.ok);
    if (m.msgid == "dropped") {
      reported += std::stoull(m.sd.at("dropped"));
      EXPECT_EQ(m.msg["dropped"]["count"].get<uint64_t>(), std::stoull(m.sd.at("dropped")));
    } else {
      got.insert(m.msg["seq"].get<uint64_t>());
    }
  }
  const auto file = lines(slurp(dir_ + "/audit.jsonl"));
  const uint64_t total = json::parse(file.back())["seq"];
  EXPECT_GT(reported, 0u) << "the spool cap must have been hit";
  EXPECT_EQ(got.size() + reported, total) << "the dropped records state exactly what is missing";
}

}  // namespace
