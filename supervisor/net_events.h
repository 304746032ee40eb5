// NetEventAuditor: the cgroup BPF network filter's decisions, audited.
//
// Each ring-buffer record of tracer::NetFilter becomes one audit event
// (enforced_by cgroup-bpf) and, for a denied connect or sendmsg, the same
// one-line notice on stderr that the user-notify handler prints for files.
// The kernel reports the id of the rule that decided; the engine gives its
// name and reason. The operation names the syscall: see kNetSyscalls in
// net_events.cpp for what the cgroup hooks cannot tell apart.
#pragma once

#include "policy/engine.h"
#include "supervisor/audit_log.h"
#include "supervisor/process_info.h"
#include "tracer/net_filter.h"

namespace sv::supervisor {

class NetEventAuditor {
 public:
  NetEventAuditor(tracer::NetFilter& net, AuditLog& audit, ProcessCache& processes,
                  const policy::Engine& engine, bool audit_mode, bool quiet)
      : net_(net),
        audit_(audit),
        processes_(processes),
        engine_(engine),
        audit_mode_(audit_mode),
        quiet_(quiet) {}

  // Audits every record waiting in the ring. Call when its fd is readable,
  // and once more after the command exited.
  void drain();

 private:
  void onEvent(const tracer::NetEvent& e);

  tracer::NetFilter& net_;
  AuditLog& audit_;
  ProcessCache& processes_;
  const policy::Engine& engine_;
  const bool audit_mode_;
  const bool quiet_;
};

}  // namespace sv::supervisor
