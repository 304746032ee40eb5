// Process events: what the kernel's process tracker reports, turned into the
// session's process table and its exec audit events.
//
// The tracker (tracer/bpf/proc_tracker.h) reports every fork, exec and exit in
// the session cgroup with the data captured in the kernel at that moment
// (pid, parent, start time, the exec'd path and argv), so a process that
// exited long before the event is read is still named, with its parent.
// ProcessTable keeps those records (exited ones too, bounded); ProcessEvents
// feeds it and writes one audit event per exec (category "process",
// operation "exec") and, for an exec the in-kernel re-check killed, a denial
// (category "exec", enforced_by kExecRecheckEnforcer). Runs on the loop
// thread; nothing here throws past onEvent.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "policy/compile.h"
#include "policy/model.h"
#include "supervisor/audit/audit_log.h"
#include "supervisor/proc/process_info.h"
#include "supervisor/loop/supervision.h"
#include "tracer/bpf/proc_tracker.h"

namespace sv::supervisor {

// enforced_by of events decided by the exec re-check: the program's name.
inline constexpr std::string_view kExecRecheckEnforcer = "bpf:sched_process_exec";
inline constexpr std::string_view kExecRecheckRule = "exec-recheck";
inline constexpr std::string_view kExecRecheckName = "exec re-check (sched_process_exec)";

struct ProcessRecord {
  pid_t pid = 0, ppid = -1;
  uint64_t start_time = 0;  // clock ticks since boot (ProcessInfo::start_time)
  std::string comm, exe;
  std::vector<std::string> argv;
  bool exited = false;
};

// pid → the latest process with that pid. Records of exited processes stay
// until kMaxExited more have exited after them, so late events still resolve.
class ProcessTable {
 public:
  static constexpr size_t kMaxExited = 4096;

  void onFork(pid_t pid, pid_t ppid, uint64_t start_time, std::string comm);
  // Updates (or creates) the record of `pid` for its new image.
  void onExec(pid_t pid, pid_t ppid, uint64_t start_time, std::string comm, std::string exe,
              std::vector<std::string> argv);
  void onExit(pid_t pid, uint64_t start_time);

  // The record of pid, or nullptr; with start_time != 0, only that instance.
  const ProcessRecord* find(pid_t pid, uint64_t start_time = 0) const;
  size_t size() const { return records_.size(); }

 private:
  ProcessRecord& upsert(pid_t pid, uint64_t start_time);
  std::unordered_map<pid_t, ProcessRecord> records_;
  std::deque<std::pair<pid_t, uint64_t>> exited_;  // oldest first
};

struct ProcessEventsOptions {
  bool audit_mode = false;  // policy mode audit: a failed re-check is a would-deny
  bool quiet = false;       // no denial line on stderr
  bool audit_execs = true;  // an audit event per exec (audit.level != deny)
  std::string supervisor_exe;  // parent exe of the command itself
  std::string process_root;    // the tree's root as we name it (readProcessInfo)
  // The session's cache that names processes in network and LSM events:
  // each exec drops the process's entry, which would show the old image, and
  // the table answers for processes that left /proc (ImageSource).
  ProcessCache* session_processes = nullptr;
};

class ProcessEvents {
 public:
  ProcessEvents(AuditLog& audit, ProcessEventsOptions options);
  ~ProcessEvents();
  ProcessEvents(const ProcessEvents&) = delete;  // the session cache points here
  ProcessEvents& operator=(const ProcessEvents&) = delete;

  // Drains `tracker` on the loop when it wakes it (a refused exec, a
  // quarter-full ring), every kDrainPeriodMs, and once at the end.
  void watch(Supervision& loop, tracer::ProcTracker& tracker);
  static constexpr uint64_t kDrainPeriodMs = 100;

  // One tracker event: updates the table, emits what it warrants. Never throws.
  void onEvent(const tracer::ProcEvent& event) noexcept;
  // Drains `tracker` (for the loop's readable callback and the final drain).
  void drain(tracer::ProcTracker& tracker) noexcept;

  const ProcessTable& table() const { return table_; }
  uint64_t kills() const { return kills_; }

 private:
  void emitExec(const tracer::ProcEvent& event);
  // The process as the audit event shows it: /proc while it is the same
  // process, the kernel's data otherwise.
  ProcessInfo describe(const tracer::ProcEvent& event) const;

  AuditLog& audit_;
  ProcessEventsOptions options_;
  ProcessTable table_;
  uint64_t kills_ = 0;
};

// The session's tracker, loaded on a thread of its own while the rest of
// the set-up runs (scanning the kernel BTF, loading and attaching cost a few
// ms). finish() joins it; the session calls it before launching the command,
// so the programs are attached before the tree's first exec.
class ProcTrackerLoad {
 public:
  // Starts loading unless there is no cgroup (cgroup_fd < 0) or tests
  // disabled "bpf". The exec re-check is on when every exec of the tree is
  // sent to the notify handler (fail-closed sessions with exec notification).
  ProcTrackerLoad(const policy::Policy& policy, const policy::CompiledPolicy& compiled,
                  int cgroup_fd);
  ~ProcTrackerLoad();
  ProcTrackerLoad(const ProcTrackerLoad&) = delete;
  ProcTrackerLoad& operator=(const ProcTrackerLoad&) = delete;

  // Waits for the load. false when the policy needs the re-check (it has
  // exec rules) and it could not be loaded: the session must not run;
  // `say` was told why.
  bool finish(const std::function<void(const std::string&)>& say);
  tracer::ProcTracker* tracker() { return tracker_ ? &*tracker_ : nullptr; }
  // The tracker when it re-checks execs (for NotifyOptions::exec_recheck).
  tracer::ProcTracker* recheck() { return tracker_ && tracker_->recheck() ? &*tracker_ : nullptr; }
  double loadMs() const { return load_ms_; }

 private:
  bool required_ = false;
  std::thread thread_;
  std::optional<tracer::ProcTracker> tracker_;
  std::string error_;
  double load_ms_ = 0;
};

}  // namespace sv::supervisor
