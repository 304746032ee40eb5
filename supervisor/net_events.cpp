// NetEventAuditor: see net_events.h.
#include "supervisor/net_events.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <string>

#include "policy/cidr.h"
#include "policy/engine.h"
#include "supervisor/denial_line.h"

namespace sv::supervisor {

void NetEventAuditor::drain() {
  net_.consume([this](const tracer::NetEvent& e) { onEvent(e); });
}

void NetEventAuditor::onEvent(const tracer::NetEvent& e) {
  const bool deny = e.decision == tracer::kNetDeny;
  AuditEvent ev;
  ev.category = "network";
  const bool unix_path = e.op == tracer::kNetOpUnixConnect || e.op == tracer::kNetOpUnixSendmsg;
  ev.operation = e.op == tracer::kNetOpSendmsg || e.op == tracer::kNetOpUnixSendmsg ? "sendmsg"
                 : e.op == tracer::kNetOpSockCreate                                ? "socket"
                                                                                   : "connect";
  ev.decision = deny ? (audit_mode_ ? "would-deny" : "deny") : "allow";
  ev.enforced_by = "cgroup-bpf";
  ev.err = deny && !audit_mode_ ? EPERM : 0;
  ev.default_rule = e.rule_index == tracer::kNetRuleNone;
  ev.rule_id = ev.default_rule ? std::string(policy::kDefaultDenyConnect)
                               : net_.ruleIdAt(e.rule_index);
  if (unix_path) {
    // A pathname unix socket is judged as a file: the writable roots decide.
    ev.network.family = "unix";
    ev.network.unix_path = e.unix_path;
    if (ev.default_rule) ev.rule_id = "unix-socket-outside-writable-roots";
  } else {
    ev.network.family = e.family == AF_INET6 ? "inet6" : "inet";
    ev.network.proto = e.protocol == IPPROTO_UDP ? "udp" : e.protocol == IPPROTO_TCP ? "tcp" : "";
    ev.network.ip = policy::ipToString(e.addr);
    ev.network.port = e.port;
  }
  std::shared_ptr<const ProcessInfo> process;
  if (e.tgid) {
    process = processes_.lookup(static_cast<int>(e.tgid), static_cast<int>(e.pid));
    // The plan that decided names the process's profile (its cgroup was
    // moved on the switch); plan 0 is the base's and that of every profile
    // without network rules, which keep what the cache knows.
    const std::string& profile = net_.planProfile(e.plan);
    if (process && profile != process->profile &&
        (!profile.empty() || net_.hasPlan(process->profile))) {
      processes_.setProfile(static_cast<int>(e.tgid), profile);  // updates *process too
    }
    ev.process = process.get();
  }
  audit_.emit(ev);
  // A pathname socket that does not exist would have failed the call anyway
  // (ENOENT), so the line would explain no failure: glibc probes nscd's
  // socket on every user or group lookup (`ls -l`, `id`). Audited all the same.
  // (A relative path names a place under the process's cwd, not ours: shown.)
  const bool missing_socket = unix_path && !e.unix_path.empty() && e.unix_path[0] == '/' &&
                              ::access(e.unix_path.c_str(), F_OK) != 0 && errno == ENOENT;
  if (deny && !quiet_ && e.op != tracer::kNetOpSockCreate && !missing_socket) {
    const std::string target =
        unix_path ? "unix socket " + e.unix_path : ev.network.ip + ":" + std::to_string(e.port);
    printDenial(audit_mode_ ? "would deny" : "denied", "connect to", target, ev.rule_id, "");
  }
}

}  // namespace sv::supervisor
