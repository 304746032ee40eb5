// NetEventAuditor: see net_events.h.
#include "supervisor/net/net_events.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include <string>

#include "policy/cidr.h"
#include "policy/engine.h"
#include "supervisor/audit/denial_line.h"
#include "supervisor/audit/syscall_name.h"

namespace sv::supervisor {
namespace {

// The hook that fired names the syscall, up to what the kernel shows it:
// cgroup connect4/6 runs for connect(2) only; sendmsg4/6 runs for sendto(2),
// sendmsg(2) and sendmmsg(2) alike (an unconnected UDP datagram), so those
// are all reported as "sendmsg" with its number; sock_create runs for
// socket(2) (and socketpair(2) does not reach it for inet families).
// The arch is the supervisor's own: the seccomp filter kills every syscall of
// another ABI (i386 int 0x80, x32) before a socket hook could see it.
struct NetSyscall {
  const char* name;
  int nr;
};
NetSyscall netSyscall(uint8_t op) {
  switch (op) {
    case tracer::kNetOpSendmsg:
    case tracer::kNetOpUnixSendmsg: return {"sendmsg", SYS_sendmsg};
    case tracer::kNetOpSockCreate: return {"socket", SYS_socket};
    default: return {"connect", SYS_connect};
  }
}

// A raw, packet or ICMP ping socket: judged at creation, by no policy entry.
constexpr std::string_view kRawName = "default: raw, packet or ping socket";
constexpr std::string_view kRawReason = "raw, packet and ICMP sockets bypass the connect rules";

}  // namespace

void NetEventAuditor::watch(Supervision& loop, std::function<void()> first) {
  auto drain_all = [this, first = std::move(first)] {
    if (first) first();
    drain();
  };
  loop.watchReadable(net_.eventFd(), drain_all);
  loop.atStop(drain_all);
}

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
  const NetSyscall sys = netSyscall(e.op);
  ev.syscall = sys.name;
  ev.syscall_nr = sys.nr;
  ev.arch = kNativeAuditArch;
  ev.decision = deny ? (audit_mode_ ? "would-deny" : "deny") : "allow";
  ev.enforced_by = "cgroup-bpf";
  ev.err = deny && !audit_mode_ ? EPERM : 0;
  // Without a rule index the mode decided (the engine's ids for it: no
  // default rule, the policy said so) or no entry matched (the default).
  const bool no_rule = e.rule_index == tracer::kNetRuleNone;
  const bool by_mode =
      no_rule && (e.reason == tracer::kNetReasonModeNone || e.reason == tracer::kNetReasonModeAll);
  ev.default_rule = no_rule && !by_mode;
  if (!no_rule)
    ev.rule_id = net_.ruleIdAt(e.rule_index);
  else if (by_mode)
    ev.rule_id = e.reason == tracer::kNetReasonModeNone ? policy::kDenyNetworkNone
                                                        : policy::kAllowAll;
  else
    ev.rule_id = policy::kDefaultDenyConnect;
  if (unix_path) {
    // A pathname unix socket is judged as a file: the writable roots decide.
    ev.network.family = "unix";
    ev.network.unix_path = e.unix_path;
    if (ev.default_rule) ev.rule_id = policy::kDefaultDenyUnixSocket;
  } else {
    ev.network.family = e.family == AF_INET6 ? "inet6" : "inet";
    ev.network.proto = e.protocol == IPPROTO_UDP ? "udp" : e.protocol == IPPROTO_TCP ? "tcp" : "";
    ev.network.ip = policy::ipToString(e.addr);
    ev.network.port = e.port;
  }
  if (ev.default_rule && e.reason == tracer::kNetReasonRawSocket) {
    ev.rule_name = kRawName;
    ev.rule_reason = kRawReason;
  } else if (ev.rule_name.empty()) {
    const policy::RuleText text = engine_.ruleText(ev.rule_id);
    ev.rule_name = text.name;
    ev.rule_reason = text.reason;
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
  const uint64_t seq = audit_.emit(ev);
  // A pathname socket that does not exist would have failed the call anyway
  // (ENOENT), so the line would explain no failure: glibc probes nscd's
  // socket on every user or group lookup (`ls -l`, `id`). Audited all the same.
  // (A relative path names a place under the process's cwd, not ours: shown.)
  const bool missing_socket = unix_path && !e.unix_path.empty() && e.unix_path[0] == '/' &&
                              ::access(e.unix_path.c_str(), F_OK) != 0 && errno == ENOENT;
  if (deny && !quiet_ && e.op != tracer::kNetOpSockCreate && !missing_socket) {
    const std::string target =
        unix_path ? "unix socket " + e.unix_path : ev.network.ip + ":" + std::to_string(e.port);
    printDenial(audit_mode_ ? "would deny" : "denied", "connect to", target, ev.rule_id,
                ev.rule_reason, {audit_.session().session_id, seq});
  }
}

}  // namespace sv::supervisor
