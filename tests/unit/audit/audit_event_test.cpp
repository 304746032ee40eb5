// encodeEvent(): the native schema 1.2 as docs/audit-events.md describes it.
#include "supervisor/audit/audit_event.h"


#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/audit.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "supervisor/audit/sha256.h"

namespace sv::supervisor {
namespace {

using nlohmann::json;

SessionInfo testSession() {
  return SessionInfo{"0123456789abcdef0123456789abcdef", "build-host", "code-sandbox",
                     std::string(64, 'a'), "0.1.0", "b00t"};
}

ProcessInfo testProcess() {
  ProcessInfo p;
  p.pid = 42;
  p.tid = 43;
  p.ppid = 1;
  p.start_time = 123456;
  p.uid = 1000;
  p.euid = 0;
  p.gid = 100;
  p.comm = "python3";
  p.exe = "/usr/bin/python3.11";
  p.cwd = "/work";
  p.profile = "base";
  p.parent_exe = "/usr/bin/bash";
  p.argv = {"python3", "x.py"};
  return p;
}

TEST(AuditEventTest, EncodesEveryRequiredField) {
  ProcessInfo proc = testProcess();
  AuditEvent e;
  e.category = "file";
  e.operation = "open";
  e.syscall = "openat";
  e.syscall_nr = 257;
  e.arch = AUDIT_ARCH_X86_64;
  e.decision = "deny";
  e.enforced_by = "seccomp";
  e.err = EACCES;
  e.rule_id = "deny-env";
  e.rule_reason = "secrets";
  e.process = &proc;
  e.file.path = "/work/.env";
  e.file.flags = O_WRONLY | O_CREAT;
  e.file.mode = 0644;
  std::string line = encodeEvent(e, testSession(), 7, timespec{1795948391, 123456789});
  EXPECT_EQ(line.find('\n'), std::string::npos);
  json j = json::parse(line);
  EXPECT_EQ(j["schema_version"], "1.8");
  EXPECT_EQ(j["seq"], 7);
  EXPECT_EQ(j["event_id"], "0123456789abcdef0123456789abcdef-7");
  EXPECT_EQ(j["agent"], (json{{"name", "supervise"}, {"version", "0.1.0"}}));
  EXPECT_EQ(j["time"], "2026-11-29T10:33:11.123456789Z");
  EXPECT_EQ(j["session_id"], "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(j["host"], (json{{"name", "build-host"}, {"boot_id", "b00t"}}));
  EXPECT_EQ(j["category"], "file");
  EXPECT_EQ(j["operation"], "open");
  EXPECT_EQ(j["syscall"], (json{{"name", "openat"}, {"nr", 257}, {"arch", "x86_64"}}));
  EXPECT_EQ(j["decision"], "deny");
  EXPECT_EQ(j["enforced_by"], "seccomp");
  EXPECT_EQ(j["errno"], "EACCES");
  EXPECT_EQ(j["rule"], (json{{"id", "deny-env"}, {"reason", "secrets"}}));
  EXPECT_EQ(j["policy"]["name"], "code-sandbox");
  EXPECT_EQ(j["policy"]["sha256"], std::string(64, 'a'));
  const json& p = j["process"];
  EXPECT_EQ(p["pid"], 42);
  EXPECT_EQ(p["tid"], 43);
  EXPECT_EQ(p["ppid"], 1);
  EXPECT_EQ(p["start_time"], 123456);
  EXPECT_EQ(p["uid"], 1000);
  EXPECT_EQ(p["euid"], 0);
  EXPECT_EQ(p["gid"], 100);
  EXPECT_EQ(p["comm"], "python3");
  EXPECT_EQ(p["exe"], "/usr/bin/python3.11");
  EXPECT_EQ(p["argv"], (json{"python3", "x.py"}));
  EXPECT_EQ(p["cwd"], "/work");
  EXPECT_EQ(p["profile"], "base");
  EXPECT_EQ(j["parent"], (json{{"pid", 1}, {"exe", "/usr/bin/bash"}}));
  EXPECT_EQ(j["file"]["path"], "/work/.env");
  EXPECT_EQ(j["file"]["flags"], (json{"O_WRONLY", "O_CREAT"}));
  EXPECT_EQ(j["file"]["mode"], "0644");
  EXPECT_FALSE(j.contains("exec"));
  EXPECT_FALSE(j.contains("network"));
  EXPECT_FALSE(j.contains("session"));
  // schema_version, seq and time lead every line, for humans and grep.
  EXPECT_EQ(line.rfind("{\"schema_version\":\"1.8\",\"seq\":7,\"time\":", 0), 0u) << line;
}

TEST(AuditEventTest, AllowHasNullErrnoAndOmitsEmptyObjects) {
  AuditEvent e;
  e.category = "network";
  e.operation = "connect";
  e.decision = "allow";
  e.enforced_by = "cgroup-bpf";
  e.default_rule = true;
  e.rule_id = "default-network";
  e.network.family = "inet";
  e.network.proto = "tcp";
  e.network.ip = "127.0.0.1";
  e.network.port = 8080;
  json j = json::parse(encodeEvent(e, SessionInfo{"id", "h"}, 1, timespec{0, 0}));
  EXPECT_TRUE(j["errno"].is_null());
  EXPECT_EQ(j["rule"]["default_rule"], true);
  EXPECT_FALSE(j.contains("file"));
  EXPECT_FALSE(j.contains("exec"));
  EXPECT_FALSE(j.contains("process"));
  EXPECT_FALSE(j.contains("syscall"));
  EXPECT_FALSE(j.contains("policy"));
  EXPECT_EQ(j["network"],
            (json{{"family", "inet"}, {"proto", "tcp"}, {"ip", "127.0.0.1"}, {"port", 8080}}));
}

TEST(AuditEventTest, TimeIsRfc3339NanosecondsUtc) {
  EXPECT_EQ(formatRfc3339(timespec{0, 5}), "1970-01-01T00:00:00.000000005Z");
  EXPECT_EQ(formatRfc3339(timespec{951782400, 999999999}), "2000-02-29T00:00:00.999999999Z");
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  std::regex re(R"(^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z$)");
  EXPECT_TRUE(std::regex_match(formatRfc3339(now), re)) << formatRfc3339(now);
}

TEST(AuditEventTest, InvalidUtf8IsReplacedAndKeptAsBase64) {
  ProcessInfo proc = testProcess();
  proc.argv = {"cat", std::string("caf\xe9")};  // Latin-1 é
  AuditEvent e;
  e.category = "file";
  e.operation = "unlink";
  e.decision = "allow";
  e.process = &proc;
  e.file.path = std::string(
      "/tmp/a\xff\xfe"
      "b");
  e.file.path2 = "/tmp/ok-\xc3\xa9";  // valid UTF-8 é: no _b64
  std::string line;
  ASSERT_NO_THROW(line = encodeEvent(e, SessionInfo{"id", "h"}, 1, timespec{0, 0}));
  json j = json::parse(line);
  EXPECT_EQ(j["file"]["path"],
            "/tmp/a\xEF\xBF\xBD\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(j["file"]["path_b64"], base64Encode(std::string("/tmp/a\xff\xfe"
                                                            "b")));
  EXPECT_EQ(j["file"]["path_b64"], "L3RtcC9h//5i");
  EXPECT_EQ(j["file"]["path2"], "/tmp/ok-\xc3\xa9");
  EXPECT_FALSE(j["file"].contains("path2_b64"));
  EXPECT_EQ(j["process"]["argv"], (json{"cat", "caf\xEF\xBF\xBD"}));
  EXPECT_EQ(j["process"]["argv_b64"], (json{"Y2F0", "Y2Fm6Q=="}));
}

TEST(AuditEventTest, Utf8Validation) {
  EXPECT_TRUE(isValidUtf8("plain"));
  EXPECT_TRUE(isValidUtf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));  // é € 😀
  EXPECT_FALSE(isValidUtf8("\xc0\xaf"));                             // overlong '/'
  EXPECT_FALSE(isValidUtf8("\xe0\x80\xaf"));                         // overlong 3-byte
  EXPECT_FALSE(isValidUtf8("\xed\xa0\x80"));                         // surrogate
  EXPECT_FALSE(isValidUtf8("\xf4\x90\x80\x80"));                     // > U+10FFFF
  EXPECT_FALSE(isValidUtf8("\xe2\x82"));                             // truncated
  EXPECT_EQ(toValidUtf8("a\xe2\x82"
                        "b"),
            "a\xEF\xBF\xBD\xEF\xBF\xBD"
            "b");
}

TEST(AuditEventTest, Base64) {
  EXPECT_EQ(base64Encode(""), "");
  EXPECT_EQ(base64Encode("f"), "Zg==");
  EXPECT_EQ(base64Encode("fo"), "Zm8=");
  EXPECT_EQ(base64Encode("foo"), "Zm9v");
  EXPECT_EQ(base64Encode("foobar"), "Zm9vYmFy");
}

TEST(AuditEventTest, FlagsAreSymbolic) {
  using V = std::vector<std::string>;
  EXPECT_EQ(openFlagNames(O_RDONLY), V{"O_RDONLY"});
  EXPECT_EQ(openFlagNames(O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC),
            (V{"O_WRONLY", "O_CREAT", "O_TRUNC", "O_CLOEXEC"}));
  EXPECT_EQ(openFlagNames(O_RDWR | O_SYNC), (V{"O_RDWR", "O_SYNC"}));
  EXPECT_EQ(openFlagNames(O_RDWR | O_DSYNC), (V{"O_RDWR", "O_DSYNC"}));
  EXPECT_EQ(openFlagNames(O_WRONLY | O_TMPFILE), (V{"O_WRONLY", "O_TMPFILE"}));
  EXPECT_EQ(openFlagNames(O_PATH | O_DIRECTORY | O_NOFOLLOW),
            (V{"O_RDONLY", "O_DIRECTORY", "O_NOFOLLOW", "O_PATH"}));
  EXPECT_EQ(openFlagNames(O_RDONLY | 0x40000000), (V{"O_RDONLY", "0x40000000"}));
  EXPECT_EQ(flagNames("rename", 1), V{"RENAME_NOREPLACE"});
  EXPECT_EQ(flagNames("rmdir", 0x200), V{"AT_REMOVEDIR"});
}

TEST(AuditEventTest, ErrnoNames) {
  EXPECT_EQ(errnoName(EACCES), "EACCES");
  EXPECT_EQ(errnoName(EPERM), "EPERM");
  EXPECT_EQ(errnoName(0), "");
  EXPECT_EQ(errnoName(4000), "E4000");
}

TEST(AuditEventTest, UnknownProcessFieldsAreNull) {
  ProcessInfo gone;  // what readProcessInfo returns for a vanished process
  gone.pid = gone.tid = 999999;
  AuditEvent e;
  e.category = "exec";
  e.operation = "exec";
  e.decision = "deny";
  e.process = &gone;
  e.exec.path = "/usr/bin/curl";
  e.exec.argv = {"curl", "http://example.invalid"};
  json j = json::parse(encodeEvent(e, SessionInfo{"id", "h"}, 1, timespec{0, 0}));
  EXPECT_EQ(j["process"]["pid"], 999999);
  EXPECT_TRUE(j["process"]["ppid"].is_null());
  EXPECT_TRUE(j["process"]["start_time"].is_null());
  EXPECT_TRUE(j["process"]["uid"].is_null());
  EXPECT_EQ(j["process"]["argv"], json::array());
  EXPECT_EQ(j["exec"]["argv"], (json{"curl", "http://example.invalid"}));
}

TEST(AuditEventTest, SessionEvents) {
  SessionInfo s = testSession();
  json start = json::parse(encodeEvent(
      sessionStartEvent({"make", "-j2"}, json{{"name", "code-sandbox"}, {"mode", "enforce"}},
                        {"landlock", "seccomp-notify"}),
      s, 1, timespec{0, 0}));
  EXPECT_EQ(start["category"], "session");
  EXPECT_EQ(start["operation"], "start");
  EXPECT_FALSE(start.contains("errno"));
  EXPECT_FALSE(start.contains("decision"));
  EXPECT_EQ(start["session"]["command"], (json{"make", "-j2"}));
  EXPECT_EQ(start["session"]["policy"]["mode"], "enforce");
  EXPECT_EQ(start["session"]["backends"], (json{"landlock", "seccomp-notify"}));
  EXPECT_EQ(start["session"]["agent_version"], "0.1.0");
  EXPECT_EQ(start["session"]["supervisor_pid"], getpid());

  AuditCounters c{10, 2, 1, 3, 4};
  json end =
      json::parse(encodeEvent(sessionEndEvent(ExitStatus{3, 0, false}, c), s, 11, timespec{0, 0}));
  EXPECT_EQ(end["operation"], "end");
  EXPECT_EQ(end["session"]["exit"], (json{{"code", 3}}));
  EXPECT_EQ(end["session"]["counters"],
            (json{{"decisions", 10},
                  {"denials", 2},
                  {"would_deny", 1},
                  {"dropped", 3},
                  {"unrecorded", 4}}));

  json killed = json::parse(
      encodeEvent(sessionEndEvent(ExitStatus::fromWaitStatus(SIGKILL), c), s, 12, timespec{0, 0}));
  EXPECT_TRUE(killed["session"]["exit"]["code"].is_null());
  EXPECT_EQ(killed["session"]["exit"]["signal"], "SIGKILL");
  EXPECT_EQ(ExitStatus::fromWaitStatus(7 << 8).code, 7);
}

TEST(AuditEventTest, DroppedRecord) {
  json d = json::parse(encodeDropped(SessionInfo{"id", "h"}, timespec{0, 0}, 5, 10, 14, 9));
  EXPECT_EQ(d["operation"], "dropped");
  EXPECT_FALSE(d.contains("seq"));
  EXPECT_EQ(d["event_id"], "id-dropped-10");
  EXPECT_EQ(d["dropped"], (json{{"count", 5}, {"first_seq", 10}, {"last_seq", 14}, {"total", 9}}));
}

TEST(AuditEventTest, SessionIdIsRandom128BitHex) {
  std::string a = newSessionId(), b = newSessionId();
  EXPECT_TRUE(std::regex_match(a, std::regex("^[0-9a-f]{32}$"))) << a;
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace sv::supervisor

namespace sv::supervisor {
namespace {

TEST(AuditEventTest, Sha256MatchesTheFipsVectors) {
  EXPECT_EQ(sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // 55/56/64 bytes: the padding boundaries.
  EXPECT_EQ(sha256Hex(std::string(55, 'x')).size(), 64u);
  EXPECT_NE(sha256Hex(std::string(55, 'x')), sha256Hex(std::string(56, 'x')));
}

TEST(AuditEventTest, ArchNamesAndBootId) {
  EXPECT_EQ(archName(AUDIT_ARCH_X86_64), "x86_64");
  EXPECT_EQ(archName(AUDIT_ARCH_I386), "i386");
  EXPECT_EQ(archName(0), "");
  const std::string id = readBootId();
  EXPECT_TRUE(std::regex_match(id, std::regex("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-"
                                              "[0-9a-f]{12}")))
      << id;
}

}  // namespace
}  // namespace sv::supervisor

namespace sv::supervisor {
namespace {

// The notify handler reuses one event per decision: after reset() it must
// encode exactly like a fresh one, whatever the previous decision set.
TEST(AuditEventTest, ResetEncodesLikeAFreshEvent) {
  ProcessInfo proc = testProcess();
  AuditEvent used;
  used.category = "exec";
  used.operation = "rename";
  used.syscall = "renameat2";
  used.syscall_nr = 316;
  used.arch = AUDIT_ARCH_X86_64;
  used.decision = "deny";
  used.enforced_by = "seccomp";
  used.err = EACCES;
  used.rule_id = "deny-write-env";
  used.rule_reason = "secrets stay out of the agent's reach";
  used.rule_name = ".env";
  used.default_rule = true;
  used.process = &proc;
  used.file = {"/ws/a-rather-long-path/.env", "/ws/.env.local", 2, 0600};
  used.exec.path = "/usr/bin/tool";
  used.exec.argv = {"tool", "--flag"};
  used.network.family = "inet";
  used.network.proto = "tcp";
  used.network.ip = "127.0.0.1";
  used.network.unix_path = "@x";
  used.network.port = 80;
  used.session.command = {"cmd"};
  used.session.has_exit = true;
  used.reset();
  AuditEvent fresh;
  const SessionInfo session = testSession();
  EXPECT_EQ(encodeEvent(used, session, 3, timespec{1, 2}),
            encodeEvent(fresh, session, 3, timespec{1, 2}));
  used.category = fresh.category = "file";
  used.decision = fresh.decision = "allow";
  used.file.path = fresh.file.path = "/ws/x";
  EXPECT_EQ(encodeEvent(used, session, 4, timespec{1, 2}),
            encodeEvent(fresh, session, 4, timespec{1, 2}));
}

}  // namespace
}  // namespace sv::supervisor
