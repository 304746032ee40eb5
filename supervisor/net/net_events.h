// NetEventAuditor: the cgroup BPF network filter's decisions, audited.
//
// Each ring-buffer record of tracer::NetFilter becomes one audit event
// (enforced_by cgroup-bpf) and, for a denied connect or sendmsg, the same
// one-line notice on stderr that the user-notify handler prints for files.
// The kernel reports the id of the rule that decided; the engine gives its
// name and reason. The operation names the syscall: see kNetSyscalls in
// net_events.cpp for what the cgroup hooks cannot tell apart.
#pragma once

#include <functional>

#include "policy/engine.h"
#include "supervisor/audit/audit_log.h"
#include "supervisor/loop/supervision.h"
#include "supervisor/proc/process_info.h"
#include "tracer/bpf/net_filter.h"

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

  // Audits the filter's records as they arrive and once more when the loop
  // stops. `first` runs before each drain (the process events: a connect
  // made after an exec must name the new image).
  void watch(Supervision& loop, std::function<void()> first = {});

  // Audits every record waiting in the ring.
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
