// --audit-format ocsf|ecs: the fields each OCSF class (1001, 1007, 4001 with
// the Security Control profile, 6002) and ECS require are present and right.
// (That every event validates against the upstream schemas is
// audit_schema_test's job.)
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/audit.h>

#include <nlohmann/json.hpp>

#include "supervisor/audit/formats/formats.h"

namespace sv::supervisor {
namespace {

using nlohmann::json;

SessionInfo session() {
  return SessionInfo{"0123456789abcdef0123456789abcdef", "build-host", "code-sandbox",
                     std::string(64, 'a'), "0.1.0", "11111111-2222-3333-4444-555555555555"};
}

ProcessInfo proc() {
  ProcessInfo p;
  p.pid = 42;
  p.tid = 43;
  p.ppid = 1;
  p.start_time = 5;
  p.uid = 1000;
  p.euid = 0;
  p.gid = 100;
  p.comm = "bash";
  p.exe = "/usr/bin/bash";
  p.cwd = "/ws";
  p.argv = {"bash", "-c", "echo x > .env"};
  p.parent_exe = "/usr/bin/supervise";
  return p;
}

AuditEvent fileDeny(const ProcessInfo* p) {
  AuditEvent e;
  e.category = "file";
  e.operation = "write";
  e.syscall = "openat";
  e.syscall_nr = 257;
  e.arch = AUDIT_ARCH_X86_64;
  e.decision = "deny";
  e.enforced_by = "seccomp";
  e.err = EACCES;
  e.rule_id = "deny-write-env";
  e.rule_reason = "secrets";
  e.process = p;
  e.file.path = "/ws/.env";
  e.file.flags = O_WRONLY | O_CREAT;
  return e;
}

AuditEvent execEvent(const ProcessInfo* p) {
  AuditEvent e;
  e.category = "exec";
  e.operation = "exec";
  e.decision = "would-deny";
  e.enforced_by = "seccomp";
  e.rule_id = "deny-ssh";
  e.process = p;
  e.exec.path = "/usr/bin/ssh";
  e.exec.argv = {"ssh", "example"};
  return e;
}

AuditEvent connectAllow(const ProcessInfo* p) {
  AuditEvent e;
  e.category = "network";
  e.operation = "connect";
  e.decision = "allow";
  e.enforced_by = "cgroup-bpf";
  e.rule_id = "allow-registry";
  e.process = p;
  e.network.family = "inet";
  e.network.proto = "tcp";
  e.network.ip = "10.1.2.3";
  e.network.port = 443;
  return e;
}

json encode(AuditFormat f, const AuditEvent& e, uint64_t seq = 9) {
  std::string out;
  encodeEventAs(f, out, e, session(), seq, timespec{1795948391, 123456789});
  return json::parse(out);
}

void expectOcsfBase(const json& j, int class_uid, int activity_id, uint64_t seq = 9) {
  EXPECT_EQ(j["class_uid"], class_uid) << j.dump();
  EXPECT_EQ(j["activity_id"], activity_id) << j.dump();
  EXPECT_EQ(j["type_uid"], class_uid * 100 + activity_id);
  EXPECT_TRUE(j["category_uid"].is_number());
  EXPECT_TRUE(j["severity_id"].is_number());
  EXPECT_EQ(j["time"], int64_t(1795948391123));
  EXPECT_EQ(j["metadata"]["version"], "1.8.0");  // and valid OCSF 1.1.0 as well
  EXPECT_EQ(j["metadata"]["product"]["name"], "supervise");
  EXPECT_EQ(j["metadata"]["uid"], "0123456789abcdef0123456789abcdef-" + std::to_string(seq));
  EXPECT_EQ(j["metadata"]["sequence"], seq);
  EXPECT_EQ(j["device"]["hostname"], "build-host");
}

TEST(AuditFormatTest, OcsfFileSystemActivityDenied) {
  ProcessInfo p = proc();
  json j = encode(AuditFormat::Ocsf, fileDeny(&p));
  expectOcsfBase(j, 1001, 3);  // Update
  EXPECT_EQ(j["category_uid"], 1);
  EXPECT_EQ(j["action_id"], 2);
  EXPECT_EQ(j["action"], "Denied");
  EXPECT_EQ(j["disposition_id"], 2);  // Blocked
  EXPECT_EQ(j["status_id"], 2);
  EXPECT_EQ(j["status_code"], "EACCES");
  // policy: an OCSF attribute of these classes only from 1.4.0 on.
  EXPECT_FALSE(j.contains("policy"));
  EXPECT_EQ(j["unmapped"]["policy"]["name"], "code-sandbox");
  EXPECT_EQ(j["unmapped"]["policy"]["uid"], std::string(64, 'a'));
  EXPECT_EQ(j["file"]["path"], "/ws/.env");
  EXPECT_EQ(j["file"]["name"], ".env");
  EXPECT_EQ(j["actor"]["process"]["pid"], 42);
  EXPECT_FALSE(j["actor"]["process"].contains("tid"));  // deprecated in 1.8.0; ptid is not in 1.1.0
  EXPECT_EQ(j["unmapped"]["tid"], 43);
  EXPECT_EQ(j["actor"]["process"]["file"]["path"], "/usr/bin/bash");
  EXPECT_EQ(j["actor"]["process"]["cmd_line"], "bash -c echo x > .env");
  EXPECT_EQ(j["actor"]["process"]["user"]["uid"], "0");
  EXPECT_EQ(j["actor"]["process"]["parent_process"]["pid"], 1);
  EXPECT_EQ(j["metadata"]["profiles"], (json{"security_control", "host", "datetime"}));
  EXPECT_EQ(j["time_dt"], "2026-11-29T10:33:11.123456789Z");  // the datetime profile
  EXPECT_EQ(j["unmapped"]["rule_id"], "deny-write-env");
  EXPECT_EQ(j["unmapped"]["file_flags"], (json{"O_WRONLY", "O_CREAT"}));
  EXPECT_EQ(j["unmapped"]["arch"], "x86_64");
}

TEST(AuditFormatTest, OcsfProcessActivityWouldDeny) {
  ProcessInfo p = proc();
  json j = encode(AuditFormat::Ocsf, execEvent(&p));
  expectOcsfBase(j, 1007, 1);  // Launch
  EXPECT_EQ(j["action_id"], 1);  // audit mode: allowed...
  EXPECT_EQ(j["disposition_id"], 15);  // ...but detected
  EXPECT_EQ(j["unmapped"]["policy"]["is_applied"], false);
  EXPECT_EQ(j["process"]["file"]["path"], "/usr/bin/ssh");
  EXPECT_EQ(j["process"]["cmd_line"], "ssh example");
  EXPECT_EQ(j["actor"]["process"]["pid"], 42);
}

TEST(AuditFormatTest, OcsfNetworkActivityAllowed) {
  ProcessInfo p = proc();
  json j = encode(AuditFormat::Ocsf, connectAllow(&p));
  expectOcsfBase(j, 4001, 1);  // Open
  EXPECT_EQ(j["category_uid"], 4);
  EXPECT_EQ(j["action_id"], 1);
  EXPECT_EQ(j["disposition_id"], 1);
  EXPECT_EQ(j["dst_endpoint"], (json{{"ip", "10.1.2.3"}, {"port", 443}}));
  EXPECT_EQ(j["src_endpoint"], (json{{"hostname", "build-host"}}));  // required in 1.1.0
  EXPECT_EQ(j["connection_info"]["protocol_name"], "tcp");
  EXPECT_EQ(j["connection_info"]["direction_id"], 2);
  EXPECT_EQ(j["firewall_rule"]["uid"], "allow-registry");
}

TEST(AuditFormatTest, OcsfSessionAndDroppedAreApplicationLifecycle) {
  json start = encode(AuditFormat::Ocsf, sessionStartEvent({"make"}, nullptr, {}), 1);
  expectOcsfBase(start, 6002, 3, 1);
  EXPECT_FALSE(start.contains("action_id"));
  EXPECT_EQ(start["unmapped"]["command"], (json{"make"}));
  json end = encode(AuditFormat::Ocsf, sessionEndEvent(ExitStatus{3, 0, false}, {5, 1, 0, 2}), 9);
  expectOcsfBase(end, 6002, 4);
  EXPECT_EQ(end["unmapped"]["exit_code"], 3);
  EXPECT_EQ(end["unmapped"]["counters"]["dropped"], 2);
  json d = json::parse(encodeDroppedAs(AuditFormat::Ocsf, session(), {1, 0}, 3, 4, 6, 3));
  EXPECT_EQ(d["class_uid"], 6002);
  EXPECT_FALSE(d["metadata"].contains("sequence"));
  EXPECT_EQ(d["unmapped"]["dropped"]["count"], 3);
  EXPECT_EQ(d["unmapped"]["dropped"]["first_seq"], 4);
}

TEST(AuditFormatTest, EcsFileDenied) {
  ProcessInfo p = proc();
  json j = encode(AuditFormat::Ecs, fileDeny(&p));
  EXPECT_EQ(j["@timestamp"], "2026-11-29T10:33:11.123Z");  // an ECS date: milliseconds
  EXPECT_EQ(j["ecs"]["version"], "8.11.0");
  EXPECT_EQ(j["event"]["kind"], "event");
  EXPECT_EQ(j["event"]["category"], (json{"file", "intrusion_detection"}));
  EXPECT_EQ(j["event"]["type"], (json{"denied", "change"}));
  EXPECT_EQ(j["event"]["action"], "write");
  EXPECT_EQ(j["event"]["outcome"], "failure");
  EXPECT_EQ(j["event"]["id"], "0123456789abcdef0123456789abcdef-9");
  EXPECT_EQ(j["event"]["sequence"], 9);
  EXPECT_EQ(j["rule"]["id"], "deny-write-env");
  EXPECT_EQ(j["rule"]["description"], "secrets");
  EXPECT_EQ(j["rule"]["ruleset"], "code-sandbox");
  EXPECT_EQ(j["process"]["pid"], 42);
  EXPECT_EQ(j["process"]["executable"], "/usr/bin/bash");
  EXPECT_EQ(j["process"]["args"], (json{"bash", "-c", "echo x > .env"}));
  EXPECT_EQ(j["process"]["user"]["id"], "0");
  EXPECT_EQ(j["process"]["real_user"]["id"], "1000");
  EXPECT_EQ(j["process"]["real_group"]["id"], "100");
  EXPECT_FALSE(j["process"].contains("group"));  // the effective group, only from ECS 8.16
  EXPECT_EQ(j["process"]["parent"]["pid"], 1);
  EXPECT_EQ(j["process"]["working_directory"], "/ws");
  EXPECT_EQ(j["file"]["path"], "/ws/.env");
  EXPECT_EQ(j["file"]["name"], ".env");
  EXPECT_EQ(j["error"]["code"], "EACCES");
  EXPECT_EQ(j["host"]["boot"]["id"], "11111111-2222-3333-4444-555555555555");
  EXPECT_EQ(j["supervise"]["syscall"]["name"], "openat");
  EXPECT_EQ(j["supervise"]["decision"], "deny");
}

TEST(AuditFormatTest, EcsExecAndConnect) {
  ProcessInfo p = proc();
  json x = encode(AuditFormat::Ecs, execEvent(&p));
  EXPECT_EQ(x["event"]["category"], (json{"process", "intrusion_detection"}));
  EXPECT_EQ(x["event"]["type"], (json{"allowed", "start"}));  // would-deny: it ran
  EXPECT_EQ(x["process"]["executable"], "/usr/bin/ssh");
  EXPECT_EQ(x["process"]["name"], "ssh");
  EXPECT_EQ(x["supervise"]["decision"], "would-deny");
  json c = encode(AuditFormat::Ecs, connectAllow(&p));
  EXPECT_EQ(c["event"]["category"], (json{"network", "intrusion_detection"}));
  EXPECT_EQ(c["event"]["type"], (json{"allowed", "connection"}));
  EXPECT_EQ(c["event"]["outcome"], "success");
  EXPECT_EQ(c["destination"]["ip"], "10.1.2.3");
  EXPECT_EQ(c["destination"]["port"], 443);
  EXPECT_EQ(c["network"]["transport"], "tcp");
  EXPECT_EQ(c["network"]["type"], "ipv4");
  json s = encode(AuditFormat::Ecs, sessionEndEvent(ExitStatus{0, 0, false}, {}), 3);
  EXPECT_EQ(s["event"]["action"], "session-end");
  EXPECT_EQ(s["event"]["type"], (json{"end"}));
  EXPECT_EQ(s["event"]["category"], (json{"process"}));  // no decision
}

// Neither schema has <name>_b64 siblings: the exact bytes go to the free
// namespace, keyed by the attribute they belong to.
TEST(AuditFormatTest, BytesThatAreNotUtf8GoToTheFreeNamespace) {
  ProcessInfo p = proc();
  p.comm = "b\xffsh";
  p.argv = {"bash", "\xfe"};
  AuditEvent e = fileDeny(&p);
  e.file.path = "/ws/\x80";
  json o = encode(AuditFormat::Ocsf, e);
  EXPECT_EQ(o["file"]["path"], "/ws/\xEF\xBF\xBD");
  EXPECT_FALSE(o["file"].contains("path_b64"));
  EXPECT_FALSE(o["actor"]["process"].contains("name_b64"));
  EXPECT_EQ(o["unmapped"]["b64"]["file.path"], base64Encode("/ws/\x80"));
  EXPECT_EQ(o["unmapped"]["b64"]["file.name"], base64Encode("\x80"));
  EXPECT_EQ(o["unmapped"]["b64"]["actor.process.name"], base64Encode("b\xffsh"));
  json c = encode(AuditFormat::Ecs, e);
  EXPECT_FALSE(c["file"].contains("path_b64"));
  EXPECT_FALSE(c["process"].contains("args_b64"));
  EXPECT_EQ(c["supervise"]["b64"]["file.path"], base64Encode("/ws/\x80"));
  EXPECT_EQ(c["supervise"]["b64"]["process.name"], base64Encode("b\xffsh"));
  EXPECT_EQ(c["supervise"]["b64"]["process.args"],
            (json{base64Encode("bash"), base64Encode("\xfe")}));
  const ProcessInfo plain = proc();
  EXPECT_FALSE(encode(AuditFormat::Ecs, fileDeny(&plain))["supervise"].contains("b64"));
  EXPECT_FALSE(encode(AuditFormat::Ocsf, fileDeny(&plain))["unmapped"].contains("b64"));
}

TEST(AuditFormatTest, ParseFormatNames) {
  EXPECT_EQ(parseAuditFormat("ocsf"), AuditFormat::Ocsf);
  EXPECT_EQ(parseAuditFormat("ecs"), AuditFormat::Ecs);
  EXPECT_EQ(parseAuditFormat("native"), AuditFormat::Native);
  EXPECT_FALSE(parseAuditFormat("cef").has_value());
}

}  // namespace
}  // namespace sv::supervisor
