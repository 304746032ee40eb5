// The audit hot path: AuditLog::emit() must not allocate once warm, and the
// JsonWriter encoder must write what the nlohmann encoder wrote (schema 1.0
// members unchanged; the 1.1 additions are taken out before comparing).
//
// Own binary: it replaces the global operator new to count allocations (the
// engine_alloc_test pattern).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <random>
#include <thread>

#include "supervisor/audit/audit_log.h"
#include "tests/common/count_allocations.h"
#include "tests/unit/audit/audit_samples.h"
#include "tests/unit/audit/legacy_encoder.h"

using sv::testing::g_allocations;
using sv::testing::g_counting;

namespace sv::supervisor {
namespace {

long countEmits(AuditLog& log, const AuditEvent& ev, int n) {
  g_allocations = 0;
  g_counting = true;
  for (int i = 0; i < n; ++i) log.emit(ev);
  log.flush();
  g_counting = false;
  return g_allocations.load();
}

// audit.redact in force: a path and an argv pattern are tried on every string.
Redactor redacting() {
  policy::RedactPattern token{"--token=*", false};
  policy::RedactPattern env{"/home/user/work/project/.env*", true};
  policy::Glob::compile(env.pattern, &env.glob, nullptr, nullptr, /*prefix=*/true);
  return Redactor({token, env});
}

TEST(AuditAlloc, SteadyStateEmitDoesNotAllocate) {
  char tmpl[] = "/tmp/sv-audit-alloc-XXXXXX";
  UniqueFd tmp(mkstemp(tmpl));
  ASSERT_TRUE(tmp);
  unlink(tmpl);
  const ProcessInfo p = samples::nodeProcess();
  AuditEvent ev = samples::envWriteDenied(&p);
  for (auto format : {AuditFormat::Native, AuditFormat::Ocsf, AuditFormat::Ecs})
  for (auto coalesce : {std::chrono::microseconds(0), std::chrono::microseconds(1000)})
  for (bool redact : {false, true}) {
    AuditLogOptions options;
    options.format = format;
    options.write_coalesce = coalesce;
    AuditLog log(SessionInfo{"0123456789abcdef0123456789abcdef", "host", "code-sandbox",
                             std::string(64, 'a'), "0.1.0", "",
                             redact ? redacting() : Redactor()},
                 options);
    ASSERT_TRUE(log.addFdSink(UniqueFd(dup(tmp.get()))).ok());
    countEmits(log, ev, 2000);  // warm-up: buffers reach their working size
    EXPECT_EQ(countEmits(log, ev, 10000), 0)
        << "format " << int(format) << ", write_coalesce " << coalesce.count() << "us"
        << (redact ? ", redacting" : "");
    ev.decision = "allow";  // another shape: no errno, same buffers
    ev.err = 0;
    EXPECT_EQ(countEmits(log, ev, 10000), 0);
    ev.decision = "deny";
    ev.err = EACCES;
  }
}

// A syslog sink (RFC 5424 framing, TCP transport) on the decision path:
// emit() frames into reused buffers and queues; the loop's flush() sends.
// Neither allocates once warm. The receiver is a loopback listener whose
// thread reads into a static buffer (nothing it does is counted as ours).
TEST(AuditAlloc, SyslogSinkEmitAndFlushDoNotAllocate) {
  UniqueFd listener(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  getsockname(listener.get(), reinterpret_cast<sockaddr*>(&a), &len);
  ASSERT_EQ(listen(listener.get(), 1), 0);
  std::thread reader([&] {
    static char buf[1 << 16];
    int c = accept(listener.get(), nullptr, nullptr);
    while (c >= 0 && read(c, buf, sizeof buf) > 0) {
    }
    if (c >= 0) close(c);
  });
  const ProcessInfo p = samples::nodeProcess();
  AuditEvent ev = samples::envWriteDenied(&p);
  {
    AuditLog log(SessionInfo{"0123456789abcdef0123456789abcdef", "host", "code-sandbox",
                             std::string(64, 'a'), "0.1.0"});
    ASSERT_TRUE(log.addSyslogSink("tcp://127.0.0.1:" + std::to_string(ntohs(a.sin_port))).ok());
    auto rounds = [&](int n) {
      g_allocations = 0;
      g_counting = true;
      for (int r = 0; r < n; ++r) {
        for (int i = 0; i < 50; ++i) log.emit(ev);  // one batch, as the wake fd flushes
        // A healthy receiver: the batch goes out before the next (a slow one
        // grows the queue, which is allowed to allocate up to its cap).
        for (int i = 0; i < 1000 && !log.flush(); ++i) usleep(200);
      }
      g_counting = false;
      return g_allocations.load();
    };
    for (int i = 0; i < 20; ++i) {  // the loop connects
      log.flush();
      usleep(5000);
    }
    rounds(200);  // warm-up: the replay window fills
    EXPECT_EQ(rounds(200), 0);
    log.close();
  }
  reader.join();
}

// Schema 1.1 = 1.0 + these members; `host` became {name, boot_id}. Everything
// else must be what the 1.0 encoder wrote, byte for byte and in order
// (compared after a parse + dump round trip, which preserves both).
std::string withoutSchema11Additions(const std::string& line) {
  auto j = nlohmann::ordered_json::parse(line);
  j["schema_version"] = "1.0";
  for (const char* k : {"event_id", "agent", "parent"}) j.erase(k);
  if (j.contains("host")) j["host"] = j["host"]["name"];
  if (j.contains("syscall")) j["syscall"].erase("arch");
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
}

std::string reference(const std::string& legacy_line) {
  auto j = nlohmann::ordered_json::parse(legacy_line);
  j["schema_version"] = "1.0";  // the legacy code reads the current constant
  j.erase("host_b64");          // 1.1: host.name_b64
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
}

// Random events, compared with the nlohmann encoder.
std::string randomString(std::mt19937& rng, bool weird) {
  static constexpr std::string_view kPlain = "abc/._-XYZ019 ";
  static constexpr std::string_view kWeird[] = {
      "\"", "\\", "\n", "\t", "\r", "\b", "\f", "\x01", "\x1f", "\x7f", "\xc3\xa9", "\xe2\x82\xac",
      "\xf0\x9f\x98\x80", "\xff", "\xc3", "\xe2\x82", "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80"};
  std::string s;
  const int len = int(rng() % 24);
  for (int i = 0; i < len; ++i) {
    if (weird && rng() % 4 == 0)
      s += kWeird[rng() % std::size(kWeird)];
    else
      s += kPlain[rng() % kPlain.size()];
  }
  return s;
}

TEST(AuditAlloc, EncoderMatchesTheNlohmannEncoderByteForByte) {
  std::mt19937 rng(42);
  static constexpr const char* kOps[] = {"open", "write", "rename", "setxattr", "unlink",
                                         "exec", "connect", "start", "end"};
  for (int round = 0; round < 3000; ++round) {
    const bool weird = round % 2;
    SessionInfo s{randomString(rng, weird), randomString(rng, weird),
                  rng() % 3 ? randomString(rng, weird) : "", rng() % 2 ? std::string(64, 'f') : "",
                  "0.1.0"};
    ProcessInfo p = samples::nodeProcess();
    if (rng() % 3 == 0) {
      p.ppid = -1;
      p.start_time = 0;
      p.uid = p.euid = p.gid = ProcessInfo::kUnknownId;
    }
    p.comm = randomString(rng, weird);
    p.exe = randomString(rng, weird);
    p.argv = {randomString(rng, weird), randomString(rng, weird)};
    AuditEvent e;
    const char* op = kOps[rng() % std::size(kOps)];
    e.operation = op;
    const bool session = e.operation == "start" || e.operation == "end";
    e.category = session ? "session" : rng() % 2 ? "file" : "network";
    if (!session) {
      e.syscall = rng() % 4 ? "openat" : "";
      e.syscall_nr = rng() % 4 ? int(rng() % 400) : -1;
      e.decision = rng() % 2 ? "deny" : "allow";
      e.enforced_by = rng() % 3 ? "seccomp" : "";
      e.err = rng() % 2 ? int(rng() % 140) : 0;
      e.rule_id = rng() % 3 ? randomString(rng, weird) : "";
      e.rule_reason = randomString(rng, weird);
      e.default_rule = rng() % 3 == 0;
      e.process = rng() % 4 ? &p : nullptr;
      e.file.path = rng() % 2 ? randomString(rng, weird) : "";
      e.file.path2 = rng() % 4 == 0 ? randomString(rng, weird) : "";
      e.file.flags = rng() % 2 ? int(rng()) & 0x3fffffff : -1;
      e.file.mode = rng() % 2 ? int(rng() % 07777) : -1;
      if (rng() % 3 == 0) {
        e.exec.path = randomString(rng, weird);
        e.exec.argv = {randomString(rng, weird)};
      }
      if (rng() % 3 == 0) {
        e.network.family = "inet";
        e.network.proto = rng() % 2 ? "tcp" : "";
        e.network.ip = "10.0.0.1";
        e.network.port = rng() % 2 ? int(rng() % 65536) : -1;
        e.network.unix_path = rng() % 4 == 0 ? "@" + randomString(rng, weird) : "";
      }
    } else if (e.operation == "start") {
      e = sessionStartEvent({randomString(rng, weird), randomString(rng, weird)},
                            nlohmann::json{{"name", "x"}, {"workspace", "/w"}},
                            {"seccomp", "landlock"});
      e.session.environment = {rng() % 2 == 0,
                               {{randomString(rng, weird), "env-secret:token", "looks like a token"}},
                               {"LANG"}};
    } else {
      ExitStatus x;
      if (rng() % 2) {
        x.code = int(rng() % 256);
      } else {
        x.signal = int(rng() % 31) + 1;
        x.core_dumped = rng() % 2;
      }
      e = sessionEndEvent(x, AuditCounters{rng(), rng(), rng(), rng()});
    }
    const uint64_t seq = rng();
    const timespec t{time_t(rng()) * 3, long(rng() % 1000000000)};
    const std::string line = encodeEvent(e, s, seq, t);
    ASSERT_EQ(withoutSchema11Additions(line), reference(legacy::legacyEncodeEvent(e, s, seq, t)))
        << "round " << round << ": " << line;
  }
}

}  // namespace
}  // namespace sv::supervisor
