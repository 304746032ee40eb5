// LsmBackend's pure parts, no kernel needed: the backend knob, the seccomp
// plan of a bpf-lsm session (which syscalls still go to user-notify), and
// the audit fields of an LSM decision.
#include "supervisor/session/lsm_backend.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <algorithm>
#include <cerrno>

#include "policy/load.h"
#include "supervisor/audit/syscall_name.h"
#include "tracer/seccomp/seccomp_filter.h"

namespace sv::supervisor {
namespace {

const std::vector<std::string> kAllHooks = {
    "file_open",      "bprm_check_security", "bprm_committed_creds",
    "task_alloc",     "path_mknod",          "path_unlink",
    "path_mkdir",     "path_rmdir",          "path_symlink",
    "path_rename",    "path_link",           "path_truncate",
    "path_chmod",     "path_chown",          "socket_connect",
    "socket_sendmsg", "unix_stream_connect", "unix_may_send"};

TEST(LsmBackendChoice, ParsesTheThreeNames) {
  EXPECT_EQ(parseBackendChoice("auto"), BackendChoice::Auto);
  EXPECT_EQ(parseBackendChoice("host"), BackendChoice::Host);
  EXPECT_EQ(parseBackendChoice("bpf-lsm"), BackendChoice::BpfLsm);
  EXPECT_EQ(parseBackendChoice("bpf"), std::nullopt);
  EXPECT_EQ(parseBackendChoice(""), std::nullopt);
}

TEST(LsmSeccompPlan, EveryHookAttachedLeavesOnlyRenamesLinksAndAttributesNotified) {
  policy::SeccompPlan host;
  host.notify_write_opens = true;
  host.notify_read_opens = true;
  host.notify_exec = true;
  host.allow_user_namespaces = false;
  const policy::SeccompPlan plan = lsmSeccompPlan(host, kAllHooks);
  EXPECT_FALSE(plan.notify_write_opens) << "no round trip for opens and path changes";
  EXPECT_FALSE(plan.notify_read_opens);
  EXPECT_FALSE(plan.notify_exec) << "exec rules and switches are decided in the kernel";
  EXPECT_TRUE(plan.notify_links_renames_and_attrs)
      << "renames (a moved directory's tree), link, utimes, xattrs: more than their hooks see";
  EXPECT_FALSE(plan.allow_user_namespaces) << "the kill/deny rules stay as they were";
}

// A directory move renames every path below it; path_rename judges the two
// names only, so the renames stay with the notify handler, which walks the
// tree. The other path calls are the LSM's alone.
TEST(LsmSeccompPlan, RenamesStayNotifiedOtherPathCallsDoNot) {
  const std::vector<int> nrs =
      tracer::notifiedSyscalls(lsmSeccompPlan(policy::SeccompPlan{}, kAllHooks));
  auto notified = [&](int nr) { return std::find(nrs.begin(), nrs.end(), nr) != nrs.end(); };
  for (int nr : {__NR_rename, __NR_renameat, __NR_renameat2, __NR_link, __NR_linkat})
    EXPECT_TRUE(notified(nr)) << "syscall " << nr;
  for (int nr : {__NR_openat, __NR_unlink, __NR_unlinkat, __NR_mkdir, __NR_mkdirat, __NR_symlink,
                 __NR_truncate, __NR_chmod, __NR_execve})
    EXPECT_FALSE(notified(nr)) << "syscall " << nr;
}

TEST(LsmSeccompPlan, AMissingPathHookKeepsThePathSyscallsNotified) {
  policy::SeccompPlan host;
  for (const char* missing : {"path_mknod", "path_chmod", "path_rename", "path_truncate"}) {
    std::vector<std::string> hooks = kAllHooks;
    hooks.erase(std::find(hooks.begin(), hooks.end(), missing));
    const policy::SeccompPlan plan = lsmSeccompPlan(host, hooks);
    EXPECT_TRUE(plan.notify_write_opens) << "without " << missing;
    EXPECT_FALSE(plan.notify_exec) << "without " << missing;
  }
}

TEST(LsmLandlockPlan, KeepsTheScopesAndOpensThePaths) {
  policy::LandlockPlan host;
  host.rules = {{"/ws", true, true, false}, {"/usr", true, false, true}};
  host.scope_abstract_unix = true;
  host.scope_signal = true;
  const policy::LandlockPlan plan = LsmBackend::landlockPlan(host);
  EXPECT_FALSE(plan.paths);
  EXPECT_TRUE(plan.rules.empty());
  EXPECT_TRUE(plan.scope_abstract_unix);
  EXPECT_TRUE(plan.scope_signal);
}

TEST(LsmBackendOptions, FollowThePolicy) {
  policy::LoadRequest r;
  r.preset = "code-sandbox";
  r.workspace = "/ws";
  r.home = "/root";
  r.overrides = {"mode=audit", "audit.level=deny"};
  policy::LoadResult res = policy::load(r);
  ASSERT_TRUE(res.ok());
  const LsmBackendOptions o = LsmBackendOptions::forSession(*res.policy, true);
  EXPECT_TRUE(o.audit_mode);
  EXPECT_TRUE(o.deny_events_only);
  EXPECT_TRUE(o.quiet);
  EXPECT_EQ(o.workspace, "/ws");
}

TEST(LsmBackend, HostChoiceLoadsNothing) {
  policy::LoadRequest r;
  r.preset = "code-sandbox";
  r.workspace = "/ws";
  r.home = "/root";
  policy::LoadResult res = policy::load(r);
  ASSERT_TRUE(res.ok());
  auto chosen = LsmBackend::select(BackendChoice::Host, res.policy, policy::compile(*res.policy),
                                   "/nonexistent", {});
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(*chosen, nullptr);
  // Forced, with no session cgroup: refused with a reason, nothing loaded.
  auto forced = LsmBackend::select(BackendChoice::BpfLsm, res.policy,
                                   policy::compile(*res.policy), "", {});
  ASSERT_FALSE(forced.ok());
  EXPECT_NE(forced.error().message().find("bpf-lsm"), std::string::npos);
}

// One LSM event of a kind, and the audit event made of it.
AuditEvent audited(policy::LsmOp op, uint8_t verdict, uint8_t hook, const std::string& rule,
                   const std::string& path = "", uint8_t flags = 0) {
  tracer::LsmEvent e;
  e.op = op;
  e.verdict = verdict;
  e.hook = hook;
  e.path = path;
  e.flags = flags;
  AuditEvent ev;
  fillLsmAuditEvent(e, rule, false, ev);
  return ev;
}

TEST(LsmAuditEvent, FileDenial) {
  const AuditEvent ev = audited(policy::LsmOp::Write, policy::kLsmDeny, tracer::kLsmHookFileOpen,
                                "deny-write-env", "/ws/.env");
  EXPECT_EQ(ev.category, "file");
  EXPECT_EQ(ev.operation, "write");
  EXPECT_EQ(ev.decision, "deny");
  EXPECT_EQ(ev.enforced_by, "bpf-lsm");
  EXPECT_EQ(ev.err, EACCES);
  EXPECT_EQ(ev.rule_id, "deny-write-env");
  EXPECT_FALSE(ev.default_rule);
  EXPECT_EQ(ev.file.path, "/ws/.env");
}

// The kernel's syscall number (orig_ax) names the call as user-notify's
// events do; outside a syscall (-1) the event has none.
TEST(LsmAuditEvent, NamesTheSyscallTheTaskWasIn) {
  tracer::LsmEvent e;
  e.op = policy::LsmOp::Write;
  e.verdict = policy::kLsmDeny;
  e.hook = tracer::kLsmHookFileOpen;
  e.syscall_nr = SYS_openat;
  AuditEvent ev;
  fillLsmAuditEvent(e, "deny-write-env", false, ev);
  EXPECT_EQ(ev.syscall, "openat");
  EXPECT_EQ(ev.syscall_nr, SYS_openat);
  EXPECT_EQ(ev.arch, kNativeAuditArch);

  e.syscall_nr = -1;
  AuditEvent none;
  fillLsmAuditEvent(e, "deny-write-env", false, none);
  EXPECT_EQ(none.syscall, "");
  EXPECT_EQ(none.syscall_nr, -1);
}

TEST(LsmAuditEvent, AuditModeIsWouldDenyWithoutErrno) {
  const AuditEvent ev = audited(policy::LsmOp::Read, policy::kLsmDeny, tracer::kLsmHookFileOpen,
                                "default-deny-read", "/srv/x", tracer::kLsmEventFlagAudit);
  EXPECT_EQ(ev.operation, "open");
  EXPECT_EQ(ev.decision, "would-deny");
  EXPECT_EQ(ev.err, 0);
  EXPECT_TRUE(ev.default_rule);
}

TEST(LsmAuditEvent, PathHooksNameTheirOperation) {
  const std::pair<uint8_t, const char*> cases[] = {
      {tracer::kLsmHookPathMknod, "create"},     {tracer::kLsmHookPathUnlink, "unlink"},
      {tracer::kLsmHookPathRename, "rename"},    {tracer::kLsmHookPathTruncate, "truncate"},
      {tracer::kLsmHookPathChmod, "chmod"},      {tracer::kLsmHookPathChown, "chown"},
      {tracer::kLsmHookPathSymlink, "symlink"},  {tracer::kLsmHookPathMkdir, "mkdir"}};
  for (const auto& [hook, name] : cases) {
    const AuditEvent ev = audited(policy::LsmOp::Write, policy::kLsmAllow, hook, "workspace");
    EXPECT_EQ(ev.operation, name);
    EXPECT_EQ(ev.decision, "allow");
    EXPECT_EQ(ev.err, 0);
  }
}

TEST(LsmAuditEvent, ExecAndNetwork) {
  const AuditEvent ev = audited(policy::LsmOp::Exec, policy::kLsmDeny,
                                tracer::kLsmHookBprmCheck, "default-deny-exec", "/srv/prog");
  EXPECT_EQ(ev.category, "exec");
  EXPECT_EQ(ev.operation, "exec");
  EXPECT_EQ(ev.exec.path, "/srv/prog");
  EXPECT_TRUE(ev.file.path.empty());

  tracer::LsmEvent net;
  net.op = policy::LsmOp::Connect;
  net.verdict = policy::kLsmDeny;
  net.hook = tracer::kLsmHookSocketSendmsg;
  net.family = AF_INET;
  net.addr = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 51, 100, 1};
  net.port = 53;
  AuditEvent nev;
  fillLsmAuditEvent(net, "default-deny-connect", false, nev);
  EXPECT_EQ(nev.category, "network");
  EXPECT_EQ(nev.operation, "sendmsg");
  EXPECT_EQ(nev.network.family, "inet");
  EXPECT_EQ(nev.network.proto, "udp");
  EXPECT_EQ(nev.network.ip, "198.51.100.1");
  EXPECT_EQ(nev.network.port, 53);
  EXPECT_EQ(nev.err, EPERM);  // as the cgroup programs refuse
}

// A unix peer is judged as a write of its bound path, and reported as the
// cgroup programs report a pathname socket: a network event with the path.
TEST(LsmAuditEvent, UnixPeerIsANetworkEventWithTheResolvedPath) {
  const AuditEvent ev =
      audited(policy::LsmOp::Write, policy::kLsmDeny, tracer::kLsmHookUnixStreamConnect,
              "default-deny-write", "/run/docker.sock");
  EXPECT_EQ(ev.category, "network");
  EXPECT_EQ(ev.operation, "connect");
  EXPECT_EQ(ev.network.family, "unix");
  EXPECT_EQ(ev.network.unix_path, "/run/docker.sock");
  EXPECT_TRUE(ev.file.path.empty());
  EXPECT_EQ(ev.rule_id, "unix-socket-outside-writable-roots");
  EXPECT_TRUE(ev.default_rule);
  EXPECT_EQ(ev.err, EACCES);

  const AuditEvent dgram = audited(policy::LsmOp::Write, policy::kLsmDeny,
                                   tracer::kLsmHookUnixMaySend, "deny-write-env", "/ws/.env");
  EXPECT_EQ(dgram.operation, "sendmsg");
  EXPECT_EQ(dgram.rule_id, "deny-write-env") << "an explicit rule keeps its id";
  EXPECT_FALSE(dgram.default_rule);
}

}  // namespace
}  // namespace sv::supervisor
