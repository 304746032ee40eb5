// Every kind of event the encoder writes validates against the JSON Schema in
// docs/schema/audit-event.schema.json (checked by validate_events.py with
// python3-jsonschema, Draft 2020-12): decisions of each category, unknown
// process fields, non-UTF-8 names, redacted and truncated strings, session
// start/end, and the dropped record.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "policy/load.h"
#include "supervisor/audit/policy_json.h"
#include "supervisor/audit/audit_log.h"

namespace sv::supervisor {
namespace {

int runValidator(const std::string& file, const std::string& require) {
  const std::string cmd = std::string("python3 ") + SV_VALIDATOR + " " + SV_SCHEMA + " " + file +
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
    AuditLog log(info);
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
                               {"seccomp", "landlock"}, matrix));
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
  EXPECT_NE(all.find(R"("truncated":true})"), std::string::npos);
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
      R"({"schema_version":"1.3","seq":1,"time":"2026-11-29T10:33:11Z","event_id":"x",)"
      R"("session_id":"s","host":{"name":"h","boot_id":""},"agent":{"name":"supervise",)"
      R"("version":"1"},"category":"file","operation":"open","decision":"maybe"})"
      "\n";
  ASSERT_EQ(write(tmp.get(), bad.data(), bad.size()), ssize_t(bad.size()));
  EXPECT_EQ(runValidator(path, "file"), 1);  // time without ns, bad decision, no rule
  unlink(path);
}

}  // namespace
}  // namespace sv::supervisor
