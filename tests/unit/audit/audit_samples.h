// Sample events. A typical decision for the audit hot-path test and bench: a
// node process (3-element argv) denied a write to a dotenv file, ~760 bytes
// encoded. And a stream of every kind of event the backends emit, for the
// schema tests of every format (audit_schema_test.cpp).
#pragma once

#include <fcntl.h>
#include <linux/audit.h>
#include <signal.h>

#include <cerrno>
#include <memory>
#include <vector>

#include "supervisor/audit/audit_event.h"
#include "supervisor/audit/limits.h"

namespace sv::supervisor::samples {

inline ProcessInfo nodeProcess() {
  ProcessInfo p;
  p.pid = 4242;
  p.tid = 4243;
  p.ppid = 4200;
  p.start_time = 123456;
  p.uid = p.euid = p.gid = 1000;
  p.comm = "node";
  p.exe = "/usr/bin/node";
  p.cwd = "/home/user/work/project";
  p.argv = {"node", "/home/user/work/project/node_modules/.bin/jest", "--ci"};
  return p;
}

inline AuditEvent envWriteDenied(const ProcessInfo* p) {
  AuditEvent ev;
  ev.category = "file";
  ev.operation = "write";
  ev.syscall = "openat";
  ev.syscall_nr = 257;
  ev.decision = "deny";
  ev.enforced_by = "seccomp";
  ev.err = EACCES;
  ev.rule_id = "deny-write-env-files-in-the-workspace";
  ev.rule_reason = "environment files hold secrets";
  ev.process = p;
  ev.file.path = "/home/user/work/project/.env.production";
  ev.file.flags = O_WRONLY | O_CREAT | O_TRUNC;
  ev.file.mode = 0644;
  return ev;
}

// Every kind of event, as the backends fill them (notify_handler, lsm_backend,
// net_events, process_events): each file operation, exec (seccomp, bpf-lsm,
// the sched_process_exec re-check), process-tree execs, network
// (connect, sendmsg, socket, unix paths, abstract names, inet6), allow / deny /
// would-deny, processes that exited before /proc was read and network events
// with no process at all (file and exec decisions always name their caller),
// strings that are not UTF-8, values the redaction patterns of
// redactPatterns() hide, and argv past the size limits. Session start/end
// and the dropped record are not here: AuditLog writes those (see the test).
struct EventStream {
  ProcessInfo bash, gone, odd;  // `odd`: names and paths that are not UTF-8
  std::vector<AuditEvent> events;
};

// The audit.redact patterns the stream is meant to be encoded with.
inline const char* redactPatterns() { return R"(["--token=*", "**/secrets/**"])"; }

inline std::unique_ptr<EventStream> everyEventKind() {
  auto s = std::make_unique<EventStream>();
  ProcessInfo& p = s->bash;
  p.pid = 10;
  p.tid = 11;
  p.ppid = 1;
  p.start_time = 99;
  p.uid = 1000;
  p.euid = 0;
  p.gid = 100;
  p.comm = "bash";
  p.exe = "/usr/bin/bash";
  p.cwd = "/ws";
  p.argv = {"bash", "-c", "make --token=abc"};  // the token is redacted
  p.parent_exe = "/usr/bin/supervise";
  p.profile = "build";
  s->gone.pid = s->gone.tid = 12;  // exited before /proc was read: ids unknown
  ProcessInfo& o = s->odd;
  o = p;
  o.pid = o.tid = 13;
  o.comm = "t\xffol";
  o.exe = "/ws/bin/t\xffol";
  o.cwd = "/ws/d\xfe";
  o.argv = {"t\xffol", "x\xfe"};
  o.parent_exe = "/ws/bin/p\x80";
  auto& out = s->events;

  struct FileOp {
    const char* op;
    const char* syscall;
    int nr, flags;
  };
  const FileOp ops[] = {
      {"open", "openat", 257, O_RDONLY},        {"read", "openat", 257, O_RDONLY},
      {"write", "openat", 257, O_WRONLY | O_TRUNC}, {"create", "openat", 257, O_WRONLY | O_CREAT},
      {"unlink", "unlinkat", 263, 0},           {"rmdir", "unlinkat", 263, 0x200},
      {"rename", "renameat2", 316, 1},          {"link", "linkat", 265, 0},
      {"symlink", "symlinkat", 266, -1},        {"mkdir", "mkdirat", 258, -1},
      {"mknod", "mknodat", 259, -1},            {"truncate", "truncate", 76, -1},
      {"chmod", "fchmodat", 268, 0},            {"chown", "fchownat", 260, 0x100},
      {"utimes", "utimensat", 280, 0},          {"setxattr", "setxattr", 188, 1},
      {"removexattr", "removexattr", 197, -1},
  };
  const char* decisions[] = {"deny", "allow", "would-deny"};
  int i = 0;
  for (const FileOp& f : ops) {
    AuditEvent e;
    e.category = "file";
    e.operation = f.op;
    e.syscall = f.syscall;
    e.syscall_nr = f.nr;
    e.arch = AUDIT_ARCH_X86_64;
    e.decision = decisions[i++ % 3];
    e.enforced_by = "seccomp";
    e.err = e.decision == "deny" ? EACCES : 0;
    e.rule_id = "deny-write-env";
    e.rule_name = "filesystem.denyWrite .env";
    e.rule_reason = "secrets";
    e.process = &p;
    e.file.path = "/ws/.env";
    if (e.operation == "rename" || e.operation == "link" || e.operation == "symlink")
      e.file.path2 = "/ws/.env.bak";
    e.file.flags = f.flags;
    if (e.operation == "create" || e.operation == "mkdir" || e.operation == "chmod")
      e.file.mode = 0644;
    out.push_back(e);
  }
  {
    AuditEvent e = out[0];  // a default rule, an unknown process, an unknown flag bit
    e.decision = "allow";
    e.err = 0;
    e.rule_id = "default-allow-read";
    e.rule_name = "default: read inside a readable root";
    e.rule_reason = "";
    e.default_rule = true;
    e.process = &s->gone;
    e.file.flags = O_WRONLY | O_CREAT | 0x40000000;
    out.push_back(e);
    e.process = &p;
    e.syscall_nr = 0x40000000 | 257;  // x32
    out.push_back(e);
    AuditEvent l = out[2];  // bpf-lsm: no syscall, the kernel's view
    l.syscall.clear();
    l.syscall_nr = -1;
    l.arch = 0;
    l.enforced_by = "bpf-lsm";
    l.file.flags = -1;
    out.push_back(l);
    l.enforced_by = "landlock";
    out.push_back(l);
  }
  {
    AuditEvent e = out[6];  // rename of names that are not UTF-8, by a process with odd names
    e.process = &o;
    e.file.path = "/ws/\x80.env";
    e.file.path2 = "/ws/b\xff";
    out.push_back(e);
    e.process = &p;  // redacted paths (no _b64 for them)
    e.file.path = "/ws/secrets/k\xff";
    e.file.path2 = "/ws/secrets/b";
    out.push_back(e);
    e.file.path = "/ws/" + std::string(kAuditMaxPathBytes, 'a');  // cut: truncated
    e.file.path2.clear();
    out.push_back(e);
  }

  AuditEvent x;
  x.category = "exec";
  x.operation = "exec";
  x.syscall = "execve";
  x.syscall_nr = 59;
  x.arch = AUDIT_ARCH_X86_64;
  x.enforced_by = "seccomp";
  x.rule_id = "deny-ssh";
  x.rule_name = "exec.deny /usr/bin/ssh";
  x.rule_reason = "no remote shells";
  x.process = &p;
  x.exec.path = "/usr/bin/ssh";
  x.exec.argv = {"ssh", "host"};
  for (const char* d : decisions) {
    x.decision = d;
    x.err = x.decision == "deny" ? EACCES : 0;
    out.push_back(x);
  }
  {
    AuditEvent e = x;  // non-UTF-8, redacted, cut
    e.decision = "allow";
    e.err = 0;
    e.process = &o;
    e.exec.path = "/ws/bin/r\xfeun";
    e.exec.argv = {"r\xfeun", "--token=x"};
    out.push_back(e);
    e.exec.path = "/ws/secrets/run";
    e.exec.argv.assign(kAuditMaxArgs + 1, "--token=\xff");
    e.exec.argv[1] = std::string(kAuditMaxArgBytes - 1, 'a') + "\xff\xff";
    out.push_back(e);
    e = x;  // bpf-lsm exec: no syscall, no argv
    e.syscall.clear();
    e.syscall_nr = -1;
    e.arch = 0;
    e.enforced_by = "bpf-lsm";
    e.exec.argv.clear();
    out.push_back(e);
  }
  {
    // The exec re-check at sched_process_exec (process_events.cpp): a kill
    // (category exec), the approved binary and a process-tree exec (category
    // process), with the tracker's cut argv.
    AuditEvent r;
    r.category = "exec";
    r.operation = "exec";
    r.enforced_by = "bpf:sched_process_exec";
    r.decision = "deny";
    r.rule_id = "exec-recheck";
    r.rule_name = "exec re-check (sched_process_exec)";
    r.rule_reason = "the binary changed between execve and exec";
    r.process = &p;
    r.exec.path = "/ws/tool";
    r.exec.argv = {"tool", "a"};
    r.truncated = true;
    out.push_back(r);
    r.decision = "would-deny";
    r.rule_reason = "would kill: " + r.rule_reason;
    out.push_back(r);
    r.category = "process";
    r.decision = "allow";
    r.rule_reason = "the binary is the one approved at execve";
    r.truncated = false;
    out.push_back(r);
    r.rule_id = "process-exec";
    r.rule_name = "process tree exec";
    r.rule_reason = "exec in the session's process tree";
    r.process = &s->gone;
    out.push_back(r);
  }
  // The kernel's own denials (supervisor/kernel_denials): a Landlock read
  // outside the roots, a signal refused by Landlock scoping (with its
  // target), a seccomp refusal and a foreign-ABI kill, the last of a process
  // that exited before /proc was read.
  {
    AuditEvent k;
    k.category = "file";
    k.operation = "read";
    k.syscall = "openat";
    k.syscall_nr = 257;
    k.arch = AUDIT_ARCH_X86_64;
    k.decision = "deny";
    k.enforced_by = "landlock";
    k.err = EACCES;
    k.rule_id = "default-deny-read";
    k.rule_name = "default: read outside every readable root";
    k.rule_reason = "not under any readable root";
    k.default_rule = true;
    k.process = &p;
    k.file.path = "/root/.bashrc";
    out.push_back(k);
    k.file.path.clear();
    k.default_rule = false;
    k.category = "process";
    k.operation = "signal";
    k.syscall = "kill";
    k.syscall_nr = 62;
    k.err = EPERM;
    k.rule_id = "landlock-scope-signal";
    k.rule_name = "Landlock scope: signals";
    k.rule_reason = "the tree may signal its own processes only";
    k.target.pid = 1;
    k.target.comm = "systemd";
    out.push_back(k);
    k.target.pid = -1;
    k.target.comm.clear();
    k.operation = "syscall";
    k.syscall = "ptrace";
    k.syscall_nr = 101;
    k.enforced_by = "seccomp";
    k.rule_id = "seccomp:ptrace";
    k.rule_name = "seccomp filter: ptrace refused";
    k.rule_reason = "a sandboxed tree never needs this syscall";
    out.push_back(k);
    k.operation = "kill";
    k.syscall = "getpid";
    k.syscall_nr = 20;
    k.arch = AUDIT_ARCH_I386;
    k.err = 0;
    k.rule_id = "seccomp-foreign-abi";
    k.rule_name = "seccomp filter: foreign syscall ABI";
    k.rule_reason = "a second syscall ABI would bypass every per-number rule";
    k.process = &s->gone;
    out.push_back(k);
  }

  AuditEvent n;
  n.category = "network";
  n.operation = "connect";
  n.syscall = "connect";
  n.syscall_nr = 42;
  n.arch = AUDIT_ARCH_X86_64;
  n.enforced_by = "cgroup-bpf";
  n.rule_id = "allow-registry";
  n.rule_name = "network.allow registry.npmjs.org:443";
  n.rule_reason = "packages";
  n.process = &p;
  n.network.family = "inet";
  n.network.proto = "tcp";
  n.network.ip = "104.16.0.35";
  n.network.port = 443;
  n.decision = "allow";
  out.push_back(n);
  n.decision = "deny";
  n.err = EPERM;
  n.rule_id = "default-deny-connect";
  n.rule_name = "default: destination not in network.allow";
  n.default_rule = true;
  n.network.family = "inet6";
  n.network.ip = "2001:db8::1";
  out.push_back(n);
  n.decision = "would-deny";
  n.err = 0;
  n.operation = "sendmsg";
  n.syscall = "sendmsg";
  n.syscall_nr = 46;
  n.network.proto = "udp";
  n.network.port = 53;
  out.push_back(n);
  n.decision = "deny";
  n.err = EPERM;
  n.operation = "socket";
  n.syscall = "socket";
  n.syscall_nr = 41;
  n.rule_name = "default: raw, packet or ping socket";
  n.network.proto.clear();
  n.network.ip = "0.0.0.0";
  n.network.family = "inet";
  n.network.port = 0;
  out.push_back(n);
  n.operation = "connect";
  n.syscall = "connect";
  n.syscall_nr = 42;
  n.rule_id = "unix-socket-outside-writable-roots";
  n.rule_name = "default: unix socket outside every writable root";
  n.network = {};
  n.network.family = "unix";
  n.network.unix_path = "/run/docker.sock";
  out.push_back(n);
  n.network.unix_path = "@abstract\xff";
  n.process = &o;
  out.push_back(n);
  n.network.unix_path = "/ws/secrets/agent.sock";  // redacted
  n.process = nullptr;
  out.push_back(n);
  {
    AuditEvent l = out[out.size() - 7];  // bpf-lsm connect: no syscall, no protocol
    l.syscall.clear();
    l.syscall_nr = -1;
    l.arch = 0;
    l.enforced_by = "bpf-lsm";
    l.network.proto.clear();
    l.process = &s->gone;
    out.push_back(l);
  }
  return s;
}

}  // namespace sv::supervisor::samples
