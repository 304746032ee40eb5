// ProcessTable and ProcessEvents; see process_events.h.
#include "supervisor/proc/process_events.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "common/unique_fd.h"
#include "supervisor/audit/denial_line.h"
#include "tracer/bpf/exec_file_id.h"
#include "tracer/probe.h"

namespace sv::supervisor {

using tracer::ExecVerdict;
using tracer::ProcEvent;
using tracer::ProcEventType;

namespace {

// The binary's absolute path once the process has left /proc: the exec'd
// path with its symlinks resolved (/bin/sh -> /usr/bin/dash), but only if
// that still names the file that ran (the kernel's file id from the event);
// otherwise the path as exec'd, which is all the event knows.
std::string exeOfExited(const ProcEvent& e) {
  if (e.filename.empty() || e.filename[0] != '/' || e.file.ino == 0) return e.filename;
  std::unique_ptr<char, decltype(&std::free)> real(::realpath(e.filename.c_str(), nullptr),
                                                    &std::free);
  if (!real) return e.filename;
  UniqueFd fd(::open(real.get(), O_PATH | O_CLOEXEC));
  if (!fd) return e.filename;
  auto id = tracer::execFileIdOf(fd.get());
  return id && *id == e.file ? std::string(real.get()) : e.filename;
}

}  // namespace

ProcessRecord& ProcessTable::upsert(pid_t pid, uint64_t start_time) {
  ProcessRecord& r = records_[pid];
  if (r.pid != pid || (start_time && r.start_time && r.start_time != start_time)) {
    r = ProcessRecord{};  // a new process with a reused pid
    r.pid = pid;
  }
  if (start_time) r.start_time = start_time;
  r.exited = false;
  return r;
}

void ProcessTable::onFork(pid_t pid, pid_t ppid, uint64_t start_time, std::string comm) {
  ProcessRecord& r = upsert(pid, start_time);
  r.ppid = ppid;
  r.comm = std::move(comm);
  // A child runs its parent's image until it execs.
  if (const ProcessRecord* parent = find(ppid)) {
    r.exe = parent->exe;
    r.argv = parent->argv;
  }
}

void ProcessTable::onExec(pid_t pid, pid_t ppid, uint64_t start_time, std::string comm,
                          std::string exe, std::vector<std::string> argv) {
  ProcessRecord& r = upsert(pid, start_time);
  r.ppid = ppid;
  r.comm = std::move(comm);
  r.exe = std::move(exe);
  r.argv = std::move(argv);
}

void ProcessTable::onExit(pid_t pid, uint64_t start_time) {
  auto it = records_.find(pid);
  if (it == records_.end() || (start_time && it->second.start_time != start_time)) return;
  it->second.exited = true;
  exited_.emplace_back(pid, it->second.start_time);
  while (exited_.size() > kMaxExited) {
    auto [old_pid, old_start] = exited_.front();
    exited_.pop_front();
    auto old = records_.find(old_pid);
    // Only if that pid was not reused by a live process since.
    if (old != records_.end() && old->second.exited && old->second.start_time == old_start)
      records_.erase(old);
  }
}

const ProcessRecord* ProcessTable::find(pid_t pid, uint64_t start_time) const {
  auto it = records_.find(pid);
  if (it == records_.end()) return nullptr;
  if (start_time && it->second.start_time && it->second.start_time != start_time) return nullptr;
  return &it->second;
}

ProcessEvents::ProcessEvents(AuditLog& audit, ProcessEventsOptions options)
    : audit_(audit), options_(std::move(options)) {
  if (options_.supervisor_exe.empty()) {
    char buf[4096];
    const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf);
    if (n > 0) options_.supervisor_exe.assign(buf, size_t(n));
  }
  if (options_.session_processes)
    options_.session_processes->setImageSource(
        [this](int pid, uint64_t start_time, ProcessInfo& info) {
          const ProcessRecord* r = table_.find(pid, start_time);
          if (!r) return;
          if (info.exe.empty()) info.exe = r->exe;
          if (info.argv.empty()) info.argv = r->argv;
          if (info.comm.empty()) info.comm = r->comm;
          if (info.ppid < 0) info.ppid = r->ppid;
          if (!info.start_time) info.start_time = r->start_time;
        });
}

ProcessEvents::~ProcessEvents() {
  if (options_.session_processes) options_.session_processes->setImageSource(nullptr);
}

void ProcessEvents::watch(Supervision& loop, tracer::ProcTracker& tracker) {
  loop.watchReadable(tracker.eventFd(), [this, &tracker] { drain(tracker); });
  // Routine events wake nobody (bpf/progs/proc.bpf.c, sv_proc_submit): they
  // are taken here, by whoever needs the table first, and at the end.
  loop.addTimer(kDrainPeriodMs, [this, &tracker] { drain(tracker); });
  loop.atStop([this, &tracker] { drain(tracker); });
}

void ProcessEvents::drain(tracer::ProcTracker& tracker) noexcept {
  try {
    tracker.consume([this](const ProcEvent& e) { onEvent(e); });
  } catch (...) {
    // onEvent does not throw; a failed allocation in the adapter loses this batch only.
  }
}

void ProcessEvents::onEvent(const ProcEvent& e) noexcept {
  try {
    switch (e.type) {
      case ProcEventType::Fork:
        table_.onFork(e.tgid, e.ppid, e.start_time_ticks, e.comm);
        break;
      case ProcEventType::Exec:
        if (options_.session_processes) options_.session_processes->invalidate(e.tgid);
        emitExec(e);
        break;
      case ProcEventType::Exit:
        table_.onExit(e.tgid, e.start_time_ticks);
        break;
    }
  } catch (...) {
    // Out of memory: this event is lost, the loop goes on.
  }
}

ProcessInfo ProcessEvents::describe(const ProcEvent& e) const {
  ProcessInfo info;
  // /proc has what the kernel event lacks (uids, cwd, the absolute exe)
  // only while the pid is still this process.
  if (readStartTime(e.tgid) == e.start_time_ticks)
    info = readProcessInfo(e.tgid, e.tgid, options_.process_root);
  info.pid = e.tgid;
  info.tid = e.tgid;  // after exec the process is its one thread
  info.ppid = e.ppid;
  info.start_time = e.start_time_ticks;
  if (info.comm.empty()) info.comm = e.comm;
  if (info.exe.empty()) info.exe = exeOfExited(e);
  if (!e.argv.empty()) info.argv = e.argv;  // as exec'd, not as rewritten since
  if (const ProcessRecord* parent = table_.find(e.ppid)) {
    info.parent_exe = parent->exe;
  } else if (info.parent_exe.empty() && e.ppid == ::getpid()) {
    info.parent_exe = options_.supervisor_exe;
  }
  return info;
}

void ProcessEvents::emitExec(const ProcEvent& e) {
  const bool failed = e.verdict == ExecVerdict::Mismatch || e.verdict == ExecVerdict::Unapproved ||
                      e.verdict == ExecVerdict::ArgsMismatch;
  // /proc (or, once the process is gone, the binary's resolved path) only for
  // an event that is written: ~100 us a process here, for nothing when no
  // sink is open. The table, which names processes only in events, then
  // keeps the path as exec'd.
  const bool written = audit_.encodes() && (failed || options_.audit_execs);
  ProcessInfo info;
  if (written) info = describe(e);
  table_.onExec(e.tgid, e.ppid, e.start_time_ticks, e.comm, written ? info.exe : e.filename,
                e.argv);

  AuditEvent ev;
  ev.enforced_by = kExecRecheckEnforcer;
  ev.exec.path = e.filename;
  ev.exec.argv = e.argv;
  ev.truncated = e.args_truncated;  // the tracker's buffer held only the start of argv
  ev.process = written ? &info : nullptr;
  if (!failed) {
    if (!options_.audit_execs) return;
    ev.category = "process";
    ev.operation = "exec";
    ev.decision = "allow";
    if (e.verdict == ExecVerdict::Approved) {
      ev.rule_id = kExecRecheckRule;
      ev.rule_name = kExecRecheckName;
      ev.rule_reason = "the binary is the one approved at execve";
    } else {
      ev.rule_id = "process-exec";
      ev.rule_name = "process tree exec";
      ev.rule_reason = "exec in the session's process tree";
    }
    audit_.emit(ev);
    return;
  }

  ++kills_;
  const bool enforced = e.killed;
  ev.category = "exec";
  ev.operation = "exec";
  ev.decision = e.audit_only || options_.audit_mode ? "would-deny" : "deny";
  ev.rule_id = kExecRecheckRule;
  ev.rule_name = kExecRecheckName;
  ev.rule_reason =
      e.verdict == ExecVerdict::Mismatch
          ? "the binary about to run is not the file approved at execve (a path swapped after "
            "the check, or an interpreter nobody judged: binfmt_misc); killed before it ran"
      : e.verdict == ExecVerdict::ArgsMismatch
          ? "the loader's arguments are not the ones approved at execve (the program it loads "
            "swapped after the check); killed before it ran"
          : "exec that the supervisor never approved; killed before it ran";
  if (e.audit_only) ev.rule_reason = "would kill: " + ev.rule_reason;
  if (e.kill_failed) {
    // The kernel refused the signal: the binary may have started. Kill it
    // from here (late, but it must not go on) and say so.
    if (readStartTime(e.tgid) == e.start_time_ticks) ::kill(e.tgid, SIGKILL);
    ev.rule_reason += "; in-kernel SIGKILL failed (" + std::string(std::strerror(e.kill_err)) +
                      "), killed from user space";
  }
  const uint64_t seq = audit_.emit(ev);
  if (!options_.quiet) {
    printDenial(enforced ? "killed" : "would kill", "exec of", e.filename, kExecRecheckRule,
                ev.rule_reason, {audit_.session().session_id, seq});
  }
}

namespace {

// Exec rules a racing thread could get around without the re-check (the
// presets' defaults are Landlock's EXECUTE roots, which hold on their own).
bool hasExecRules(const policy::Policy& policy) {
  auto any = [](const policy::ExecRules& r) {
    return !r.allow.empty() || !r.deny.empty() || !r.switches.empty();
  };
  if (any(policy.exec)) return true;
  for (const auto& [_, profile] : policy.profiles)
    if (any(profile.exec)) return true;
  return false;
}

}  // namespace

ProcTrackerLoad::ProcTrackerLoad(const policy::Policy& policy,
                                 const policy::CompiledPolicy& compiled, int cgroup_fd) {
  const bool fail_closed = policy.fallback != policy::Fallback::UnsafeHostProcess;
  tracer::ProcTrackerOptions options;
  // Every exec is approved by the notify handler only when execs are
  // notified; otherwise the re-check would kill them all.
  options.recheck = fail_closed && compiled.seccomp.notify_exec;
  options.audit_only = policy.mode == policy::Mode::Audit;
  required_ = options.recheck && hasExecRules(policy);
  if (cgroup_fd < 0) {
    error_ = "unavailable (needs a session cgroup)";
    return;
  }
  // "bpf-proc" alone: tests (and start-up measurements) without the tracker.
  if (tracer::testDisabled("bpf") || tracer::testDisabled("bpf-proc")) {
    error_ = tracer::kDisabledByTest;
    return;
  }
  thread_ = std::thread([this, cgroup_fd, options] {
    const auto start = std::chrono::steady_clock::now();
    auto loaded = tracer::ProcTracker::load(cgroup_fd, options);
    load_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                   .count();
    if (loaded)
      tracker_.emplace(std::move(*loaded));
    else
      error_ = loaded.error().message();
  });
}

ProcTrackerLoad::~ProcTrackerLoad() {
  if (thread_.joinable()) thread_.join();
}

bool ProcTrackerLoad::finish(const std::function<void(const std::string&)>& say) {
  if (thread_.joinable()) thread_.join();
  if (tracker_ || !required_) return true;
  say("cannot enforce the policy: in-kernel exec re-check (BPF raw tracepoint "
      "sched_process_exec), needed for exec rules to hold against a racing thread: " + error_);
  return false;
}

}  // namespace sv::supervisor
