// Every kind of event the encoder writes validates against the JSON Schema in
// docs/schema/audit-event.schema.json (checked by validate_events.py with
// python3-jsonschema, Draft 2020-12): decisions of each category, unknown
// process fields, non-UTF-8 names, redacted and truncated strings, session
// start/end, and the dropped record.
//
// And the same stream (samples::everyEventKind(), plus session start/end and
// a dropped record) in --audit-format ocsf and ecs validates against the
// upstream schemas it claims, copied under tests/schemas/: OCSF 1.8.0 and
// 1.1.0, ECS 8.11.0 and the current ecs_flat.yml (validate_formats.py, which
// also fails on a set of bad events, one per check). SV_KEEP_AUDIT_STREAM=DIR
// keeps the three streams there (native.jsonl, ocsf.jsonl, ecs.jsonl).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "policy/load.h"
#include "supervisor/audit/policy_json.h"
#include "supervisor/audit/audit_log.h"
#include "tests/unit/audit/audit_samples.h"
#include "tests/unit/audit/audit_test_util.h"

namespace sv::supervisor {
namespace {

int runValidator(const std::string& file, const std::string& require) {
  const std::string cmd = std::string(SV_PYTHON " ") + SV_VALIDATOR + " " + SV_SCHEMA + " " + file +
                          " --require " + require + " 1>&2";
  const int st = std::system(cmd.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(AuditSchemaTest, EveryEventKindValidates) {
  char path[] = "/tmp/sv-audit-schema-XXXXXX";
  UniqueFd tmp(mkstemp(path));
  ASSERT_TRUE(tmp);
  policy::LoadRequest req;
  req.workspace = "/ws";
  req.home = "/home/u";
  req.files.push_back({"p.json", R"({"audit": {"redact": ["--token=*", "**/secrets/**"]}})"});
  auto loaded = policy::load(req);
  ASSERT_TRUE(loaded.ok());
  SessionInfo info{newSessionId(), "host", loaded.policy->name, policyDigest(*loaded.policy),
                   "0.1.0", readBootId(), Redactor(loaded.policy->audit.redact)};
  {
    AuditLogOptions chained;
    chained.chain = true;  // every line carries "chain" (audit.chain)
    AuditLog log(info, chained);
    ASSERT_TRUE(log.addFileSink(path).ok());
    // backend_matrix rows as doctor.cpp featureRowsJson() writes them
    // (doctor.cpp is not in sv_audit; AuditStream.StartEventCarriesDoctorsMatrix
    // validates a real one).
    const nlohmann::ordered_json matrix = nlohmann::ordered_json::parse(R"json([
      {"id": "file_roots", "label": "file roots", "used": true, "enforceable": true,
       "backend": "landlock", "detail": "read/write roots in the kernel (ABI 6)"},
      {"id": "network.allowlist", "label": "network: allowlist", "used": false,
       "enforceable": false, "backend": null,
       "detail": "cgroup socket hooks: not tried: the policy needs no network filter"}])json");
    log.emit(sessionStartEvent({"make", "-j2", "\xff"}, effectivePolicyJson(*loaded.policy),
                               {"seccomp", "landlock"}, matrix,
                               {{"self-protect:audit-file", "/ws/a\xff.jsonl", "write"},
                                {"self-protect:audit-spool", "/var/tmp/supervise-spool-*", "write"}},
                               {true,
                                {{"GITHUB_TOKEN", "env-secret:github-token", "GitHub token"},
                                 {"X\xff_TOKEN", "env-secret:token", "looks like a token"}},
                                {"LANG"}}));
    ProcessInfo p;
    p.pid = 10;
    p.tid = 11;
    p.ppid = 1;
    p.start_time = 99;
    p.uid = p.euid = p.gid = 0;
    p.comm = "bash";
    p.exe = "/usr/bin/bash";
    p.cwd = "/ws";
    p.argv = {"bash", "-c", "x\xfe"};
    p.parent_exe = "/usr/bin/supervise";
    ProcessInfo gone;  // exited before /proc was read
    gone.pid = gone.tid = 12;

    AuditEvent f;
    f.category = "file";
    f.operation = "rename";
    f.syscall = "renameat2";
    f.syscall_nr = 316;
    f.arch = AUDIT_ARCH_X86_64;
    f.decision = "deny";
    f.enforced_by = "seccomp";
    f.err = EACCES;
    f.rule_id = "deny-write-env";
    f.rule_reason = "secrets";
    f.process = &p;
    f.file.path = "/ws/.env";
    f.file.path2 = "/ws/\x80.env";
    f.file.flags = 1;
    log.emit(f);
    f.operation = "open";
    f.file = {};
    f.file.path = "/ws/a";
    f.file.flags = O_WRONLY | O_CREAT | 0x40000000;
    f.file.mode = 0644;
    f.decision = "allow";
    f.err = 0;
    f.default_rule = true;
    f.rule_id = "default-allow-read";
    f.process = &gone;
    log.emit(f);

    AuditEvent x;
    x.category = "exec";
    x.operation = "exec";
    x.syscall = "execve";
    x.syscall_nr = 59;
    x.arch = AUDIT_ARCH_X86_64;
    x.decision = "would-deny";
    x.enforced_by = "seccomp";
    x.rule_id = "deny-ssh";
    x.process = &p;
    x.exec.path = "/usr/bin/ssh";
    x.exec.argv = {"ssh", "host"};
    log.emit(x);
    x.exec.path = "/ws/secrets/run";                              // [REDACTED]
    x.exec.argv.assign(kAuditMaxArgs + 1, "--token=\xff");         // [REDACTED], truncated
    x.exec.argv[1] = std::string(kAuditMaxArgBytes - 1, 'a') + "\xff\xff";  // cut, not UTF-8
    log.emit(x);

    AuditEvent n;
    n.category = "network";
    n.operation = "connect";
    n.decision = "deny";
    n.enforced_by = "cgroup-bpf";
    n.err = EPERM;
    n.rule_id = "default-deny-connect";
    n.default_rule = true;
    n.network.family = "inet6";
    n.network.proto = "tcp";
    n.network.ip = "2001:db8::1";
    n.network.port = 443;
    n.process = &p;
    log.emit(n);
    n.network = {};
    n.network.family = "unix";
    n.network.unix_path = "@abstract";
    log.emit(n);

    AuditEvent pr;
    pr.category = "process";
    pr.operation = "ptrace";
    pr.decision = "deny";
    pr.enforced_by = "seccomp";
    pr.err = EPERM;
    pr.rule_id = "deny-ptrace";
    pr.process = &p;
    log.emit(pr);
    log.finish(ExitStatus::fromWaitStatus(SIGKILL));
  }
  {
    std::ofstream out(path, std::ios::app);
    out << encodeDropped(info, timespec{1, 2}, 3, 4, 6, 3) << "\n";
  }
  std::ifstream in(path);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(all.find(R"("path":"[REDACTED]","argv":["[REDACTED]","aaa)"), std::string::npos);
  // truncated last but for chain (the stream is chained: audit.chain).
  EXPECT_NE(all.find(R"("truncated":true,"chain":")"), std::string::npos);
  EXPECT_NE(all.find(R"("self_protected":[{"id":"self-protect:audit-file")"), std::string::npos);
  EXPECT_NE(all.find(R"("environment":{"applied":true,"removed":[{"name":"GITHUB_TOKEN","rule":{"id":"env-secret:github-token","reason":"GitHub token"}},{"name":"X)"),
            std::string::npos);
  EXPECT_NE(all.find(R"(_TOKEN","name_b64":")"), std::string::npos);
  EXPECT_NE(all.find(R"("argv_b64":[)"), std::string::npos);
  EXPECT_EQ(runValidator(path, "file,exec,network,process,session:start,session:end,session:dropped"),
            0);
  unlink(path);
}

TEST(AuditSchemaTest, TheValidatorRejectsABadEvent) {
  char path[] = "/tmp/sv-audit-schema-XXXXXX";
  UniqueFd tmp(mkstemp(path));
  ASSERT_TRUE(tmp);
  const std::string bad =
      R"({"schema_version":"1.6","seq":1,"time":"2026-11-29T10:33:11Z","event_id":"x",)"
      R"("session_id":"s","host":{"name":"h","boot_id":""},"agent":{"name":"supervise",)"
      R"("version":"1"},"category":"file","operation":"open","decision":"maybe"})"
      "\n";
  ASSERT_EQ(write(tmp.get(), bad.data(), bad.size()), ssize_t(bad.size()));
  EXPECT_EQ(runValidator(path, "file"), 1);  // time without ns, bad decision, no rule
  unlink(path);
}

// The validator's output (stdout and stderr) and exit status.
struct Validation {
  int status = -1;
  std::string output;
};

Validation runFormatValidator(const std::string& args) {
  const std::string cmd = std::string(SV_PYTHON " ") + SV_FORMAT_VALIDATOR + " " + args + " 2>&1";
  Validation v;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return v;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) v.output.append(buf.data(), n);
  const int st = pclose(pipe);
  v.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return v;
}

const std::string kSchemas = SV_SCHEMAS_DIR;
const char* const kOcsfVersions[] = {"ocsf-1.8.0", "ocsf-1.1.0"};
const char* const kEcsVersions[] = {"ecs-8.11.0.json", "ecs-current.json"};
// Every class and activity the stream must cover.
const char* const kOcsfKinds =
    "1001:1,1001:2,1001:3,1001:4,1001:5,1001:6,1001:7,1001:14,1001:99,1007:1,"
    "4001:1,4001:6,4001:99,6002:3,6002:4,6002:99";

// Writes the stream in `format` to `path`: session start, every event kind,
// session end (AuditLog), then a dropped record.
void writeStream(AuditFormat format, const std::string& path) {
  policy::LoadRequest req;
  req.workspace = "/ws";
  req.home = "/home/u";
  req.files.push_back(
      {"p.json", std::string(R"({"audit": {"redact": )") + samples::redactPatterns() + "}}"});
  auto loaded = policy::load(req);
  ASSERT_TRUE(loaded.ok());
  SessionInfo info{newSessionId(), "host", loaded.policy->name, policyDigest(*loaded.policy),
                   "0.1.0", readBootId(), Redactor(loaded.policy->audit.redact)};
  const auto stream = samples::everyEventKind();
  {
    AuditLogOptions options;
    options.format = format;
    options.chain = true;  // unmapped.chain / supervise.chain on every line
    AuditLog log(info, options);
    ASSERT_TRUE(log.addFileSink(path).ok());
    log.emit(sessionStartEvent({"make", "-j2", "\xff", "--token=x"},
                               effectivePolicyJson(*loaded.policy), {"seccomp", "landlock"},
                               nullptr, {{"self-protect:audit-file", "/ws/audit.jsonl", "write"}},
                               {false, {{"A\xff_SECRET", "env-secret:secret", "looks like a secret"}},
                                {}}));
    for (const AuditEvent& e : stream->events) log.emit(e);
    // The exec daemon's reload (docs/serve.md): its new policy in the event.
    log.setPolicy(loaded.policy->name, policyDigest(*loaded.policy));
    log.emit(policyReloadEvent(effectivePolicyJson(*loaded.policy), policyDigest(*loaded.policy)));
    log.finish(ExitStatus::fromWaitStatus(SIGKILL));
  }
  {
    // A command of the exec daemon: command_id and client in every event.
    SessionInfo command = info;
    command.session_id = newSessionId();
    command.command_id = info.session_id + "-1";
    command.client_pid = 4242;
    command.client_uid = 1000;
    AuditLogOptions options;
    options.format = format;
    AuditLog log(command, options);
    ASSERT_TRUE(log.addFileSink(path).ok());
    log.emit(sessionStartEvent({"bash", "-c", "make"}, effectivePolicyJson(*loaded.policy),
                               {"seccomp", "landlock"}));
    for (const AuditEvent& e : stream->events) log.emit(e);
    log.finish(ExitStatus::fromWaitStatus(1 << 8));
  }
  std::ofstream out(path, std::ios::app);
  out << encodeDroppedAs(format, info, timespec{1795948391, 2}, 3, 4, 6, 3) << "\n";
  AuditLogOptions options;
  options.format = format;
  AuditLog again(info, options);  // a session that exited normally
  ASSERT_TRUE(again.addFileSink(path).ok());
  again.finish(ExitStatus::fromWaitStatus(3 << 8));
}

class FormatStream : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* keep = std::getenv("SV_KEEP_AUDIT_STREAM")) {
      dir_ = keep;
    } else {
      char tmpl[] = "/tmp/sv-audit-formats-XXXXXX";
      ASSERT_NE(mkdtemp(tmpl), nullptr);
      dir_ = tmpl;
      remove_ = true;
    }
    for (auto [format, name] : {std::pair{AuditFormat::Native, "native"},
                                std::pair{AuditFormat::Ocsf, "ocsf"},
                                std::pair{AuditFormat::Ecs, "ecs"}}) {
      const std::string path = dir_ + "/" + name + ".jsonl";
      unlink(path.c_str());
      writeStream(format, path);
    }
  }
  void TearDown() override {
    if (remove_) std::system(("rm -rf " + dir_).c_str());
  }
  std::string dir_;
  bool remove_ = false;
};

TEST_F(FormatStream, NativeValidates) {
  EXPECT_EQ(runValidator(dir_ + "/native.jsonl",
                         "file,exec,network,process,session:start,session:end,session:dropped"),
            0);
}

TEST_F(FormatStream, OcsfValidatesInBothVersions) {
  for (const char* version : kOcsfVersions) {
    const Validation v = runFormatValidator("ocsf " + kSchemas + "/" + version + " " + dir_ +
                                            "/ocsf.jsonl --require " + kOcsfKinds);
    EXPECT_EQ(v.status, 0) << version << ":\n" << v.output;
    EXPECT_NE(v.output.find(" 0 errors"), std::string::npos) << v.output;
  }
}

TEST_F(FormatStream, EcsValidatesInBothVersions) {
  for (const char* version : kEcsVersions) {
    const Validation v =
        runFormatValidator("ecs " + kSchemas + "/ecs/" + version + " " + dir_ + "/ecs.jsonl");
    EXPECT_EQ(v.status, 0) << version << ":\n" << v.output;
    EXPECT_NE(v.output.find(" 0 errors"), std::string::npos) << v.output;
  }
}

// One bad event per check: the validator must name each problem.
TEST(FormatValidator, EveryOcsfCheckFires) {
  test::TempDir dir;
  const std::string path = dir.path() + "/bad.jsonl";
  std::ofstream(path) <<
      // class_uid unknown
      R"({"class_uid":1099,"category_uid":1,"activity_id":1,"type_uid":109901})" "\n"
      // category, type_uid, class_name, sibling caption, enum value, missing required, unknown
      // attribute, type, deprecated, profile not listed, unknown profile, null, bad ip, port
      // range, object attribute unknown, constraint, metadata.version warning
      R"({"class_uid":1001,"category_uid":4,"class_name":"Files","activity_id":3,)"
      R"("activity_name":"Read","type_uid":100102,"severity_id":42,"time":"yesterday",)"
      R"("time_dt":"2026-11-29T10:33:11Z","bogus":1,)"
      R"("metadata":{"version":"0.9.0","product":{"name":"supervise"},"profiles":["nope"]},)"
      R"("actor":{"process":{"tid":7,"pid":null,"name":"x","file":{"path":"/a","name":"a",)"
      R"("type_id":0,"path_b64":"AA=="}}},"action_id":2,)"
      R"("device":{"type_id":0,"hostname":"h"},)"
      R"("file":{"path":"/a","type_id":0}})" "\n"
      R"({"class_uid":4001,"category_uid":4,"activity_id":1,"type_uid":400101,"severity_id":1,)"
      R"("time":1,"metadata":{"version":"1.8.0","product":{"name":"s"}},)"
      R"("device":{"type_id":0,"hostname":"h"},"actor":{"process":{"pid":1}},)"
      R"("src_endpoint":{"port":7},"dst_endpoint":{"ip":"not-an-ip","port":70000}})" "\n";
  const std::string expected[] = {
      "class_uid: 1099 is no class",
      "category_uid: 4: class 1001 is in category 1",
      "type_uid: 100102, expected class_uid * 100 + activity_id = 100103",
      "class_name: 'Files', the class is 'File System Activity'",
      "activity_name: 'Read', the caption of activity_id 3 is 'Update'",
      "severity_id: 42 is not a value of severity_id",
      "time: \"yesterday\" is not a timestamp_t",
      "time_dt: an attribute of profile 'datetime'",
      "bogus: not an attribute of class file_activity",
      "metadata.profiles: 'nope' is no profile",
      "metadata.version: warning: '0.9.0' declared",
      "actor.process.tid: deprecated since 1.6.0",
      "actor.process.pid: null is not a integer_t",
      "actor.process.file.path_b64: not an attribute of object file",
      "action_id: an attribute of profile 'security_control'",
      "file.name: required by object file, missing",
      "metadata.uid",  // not required: must not be reported (checked below)
      "src_endpoint: object network_endpoint needs at least one of ip",
      "dst_endpoint.ip: 'not-an-ip' does not match the ip_t pattern",
      "dst_endpoint.port: 70000 outside port_t range",
      "no event of 1007",
  };
  const Validation v = runFormatValidator("ocsf " + kSchemas + "/ocsf-1.8.0 " + path +
                                          " --require 1001,1007");
  EXPECT_EQ(v.status, 1) << v.output;
  for (const std::string& e : expected) {
    if (e == "metadata.uid") {
      EXPECT_EQ(v.output.find(e), std::string::npos) << v.output;
      continue;
    }
    EXPECT_NE(v.output.find(e), std::string::npos) << "expected: " << e << "\n" << v.output;
  }
  // 1.1.0: profile attributes of classes that lack the profile, and required
  // attributes there (src_endpoint of network events).
  std::ofstream(path) <<
      R"({"class_uid":4001,"category_uid":4,"activity_id":1,"type_uid":400101,"severity_id":1,)"
      R"("time":1,"metadata":{"version":"1.1.0","product":{"name":"s"},)"
      R"("profiles":["security_control"]},"policy":{"name":"p"},)"
      R"("device":{"type_id":0,"hostname":"h"},"dst_endpoint":{"ip":"10.0.0.1"}})" "\n";
  const Validation old = runFormatValidator("ocsf " + kSchemas + "/ocsf-1.1.0 " + path);
  EXPECT_EQ(old.status, 1) << old.output;
  EXPECT_NE(old.output.find("policy: not an attribute of class network_activity"),
            std::string::npos) << old.output;
  EXPECT_NE(old.output.find("src_endpoint: required by class network_activity, missing"),
            std::string::npos) << old.output;
}

TEST(FormatValidator, EveryEcsCheckFires) {
  test::TempDir dir;
  const std::string path = dir.path() + "/bad.jsonl";
  std::ofstream(path) <<
      R"({"@timestamp":"2026-11-29T10:33:11.123456789Z","ecs":{"version":"8.11.0"},)"
      R"("event":{"kind":"alarm","category":["file"],"type":["denied","change"],)"
      R"("outcome":"maybe","sequence":"9"},"process":{"pid":1,"group":{"id":"100"},)"
      R"("args":"a"},"file":{"path_b64":"AA==","name":["a"]},"source":{"ip":"300.1.1.1"},)"
      R"("supervise":{"anything":{"goes":1}},"labels":{"session_id":"s"}})" "\n"
      R"({"ecs":{"version":"8.11.0"},"event":{"category":["process"],"type":["connection"]}})"
      "\n";
  const std::string expected[] = {
      "@timestamp: \"2026-11-29T10:33:11.123456789Z\": an ECS date is RFC 3339 with at most 3",
      "event.kind: 'alarm' is not an allowed value",
      "event.type: 'denied' is an expected type of none of the categories ['file']",
      "event.outcome: 'maybe' is not an allowed value",
      "event.sequence: \"9\" is not of ECS type long",
      "process.group.id: no such ECS field",
      "process.args: ECS expects an array",
      "file.path_b64: no such ECS field",
      "file.name: an array, ECS expects one value",
      "source.ip: \"300.1.1.1\" is not of ECS type ip",
      "@timestamp: required by ECS, missing",
      "event.category: 'process' has none of its expected types",
  };
  const Validation v = runFormatValidator("ecs " + kSchemas + "/ecs/ecs-8.11.0.json " + path);
  EXPECT_EQ(v.status, 1) << v.output;
  for (const std::string& e : expected)
    EXPECT_NE(v.output.find(e), std::string::npos) << "expected: " << e << "\n" << v.output;
  EXPECT_EQ(v.output.find("supervise.anything"), std::string::npos) << v.output;
  EXPECT_EQ(v.output.find("labels.session_id"), std::string::npos) << v.output;
  // process.group.id is the effective group from ECS 8.16 on.
  const Validation now = runFormatValidator("ecs " + kSchemas + "/ecs/ecs-current.json " + path);
  EXPECT_EQ(now.output.find("process.group.id"), std::string::npos) << now.output;
}

}  // namespace
}  // namespace sv::supervisor
