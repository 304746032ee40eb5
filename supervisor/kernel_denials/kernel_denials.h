// KernelDenials: the kernel's own denials of the tree, audited.
//
// Landlock (reads, writes and execs outside the roots, signal and abstract
// socket scoping) and the seccomp filter (ptrace, bpf, io_uring, mount,
// user namespaces, foreign ABIs, ...) refuse in the kernel, without asking
// the supervisor. The kernel writes an audit record of each refusal while
// kernel audit is on; this source turns audit on for the session where it was
// off (tracer/kernel_audit/audit_switch.h: never auditd's registration,
// restored by the last session), reads the records from the read-only
// multicast group, keeps the session's own and emits each as an ordinary
// decision event (decision deny, enforced_by landlock / seccomp, the engine's
// rule for the request where it has one) plus the stderr denial line.
//
// Counted, not sampled: at the end of the session a marker record is sent
// through the same kernel queue and read back, so no denial is still in
// flight; a full socket buffer or the kernel's own `lost` counter growing
// during the session is reported (stderr and the session end), never silent.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/result.h"
#include "policy/compile.h"
#include "policy/engine.h"
#include "supervisor/audit/audit_log.h"
#include "supervisor/loop/supervision.h"
#include "supervisor/proc/process_info.h"
#include "tracer/kernel_audit/audit_netlink.h"
#include "tracer/kernel_audit/audit_records.h"
#include "tracer/kernel_audit/audit_switch.h"

namespace sv::supervisor {

struct KernelDenialsOptions {
  bool audit_mode = false;     // the policy's mode: a kernel denial is a denial all the same
  bool quiet = false;          // no denial lines on stderr
  std::string workspace;       // for shorter paths in denial lines
  std::string session_cgroup;  // the session cgroup's name: whose seccomp records are ours
  pid_t root_pid = -1;         // the command: it created the session's Landlock domain
  // Whether a pid that is gone from /proc was one of the session's (the
  // kernel's process tracker saw it fork in the session cgroup). A process
  // the seccomp filter killed is usually reaped before its record is read.
  std::function<bool(pid_t)> was_in_session;
};

class KernelDenials {
 public:
  // Turns kernel audit on where it is off and opens the listener. Call
  // before the command is cloned (a task gets its audit context at fork). An
  // error says why the kernel's own denials go unrecorded here.
  static Result<std::unique_ptr<KernelDenials>> start();
  ~KernelDenials();

  // What was done to the host's audit state, for the session-start event.
  std::string describe() const;

  // Starts reading for the session: the records go to `audit` as events.
  void watch(Supervision& loop, AuditLog& audit, ProcessCache& processes,
             const policy::Engine& engine, KernelDenialsOptions options);

  // The command has exited: reads until every record queued before now has
  // arrived (bounded), completes what is open, and says on stderr what was
  // lost. Before the trail's end and the exit status: the tear-down after an
  // early exit (exit_handoff.h) has no stderr left to say it on.
  void finish();

  uint64_t lost() const;  // socket overruns + growth of the kernel's lost counter

 private:
  KernelDenials(tracer::kernel_audit::AuditSwitch audit_switch,
                tracer::kernel_audit::AuditControl control,
                tracer::kernel_audit::AuditListener listener, uint32_t lost_at_start);
  // Reads what waits; returns true when the end marker was among it.
  bool drain();
  void flush(bool all);
  void emitDenials(tracer::kernel_audit::RecordAssembler::Output& out);
  void emit(const tracer::kernel_audit::KernelDenial& d);
  bool inSession(int64_t pid) const;
  // Reads the kernel's lost counter (an AUDIT_GET: the kernel answers it
  // from a thread it starts for the reply) and says what was lost.
  void reportLost();

  tracer::kernel_audit::AuditSwitch switch_;
  tracer::kernel_audit::AuditControl control_;
  tracer::kernel_audit::AuditListener listener_;
  tracer::kernel_audit::RecordAssembler assembler_;
  std::optional<tracer::kernel_audit::SessionFilter> filter_;
  uint32_t lost_at_start_ = 0;
  std::string marker_;
  bool finished_ = false;
  // The status finish() read (the lost counter at the end): the switch's
  // release needs no AUDIT_GET of its own.
  std::optional<tracer::kernel_audit::AuditStatus> status_at_end_;

  AuditLog* audit_ = nullptr;
  ProcessCache* processes_ = nullptr;
  const policy::Engine* engine_ = nullptr;
  KernelDenialsOptions options_;
  std::string cgroup_needle_;  // "/<session cgroup>", looked for in /proc/PID/cgroup
};

}  // namespace sv::supervisor
