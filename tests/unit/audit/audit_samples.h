// A typical decision for the audit hot-path test and bench: a node process
// (3-element argv) denied a write to a dotenv file, ~760 bytes encoded.
#pragma once

#include <fcntl.h>

#include <cerrno>

#include "supervisor/audit/audit_event.h"

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

}  // namespace sv::supervisor::samples
