// The kernel's own denials as audit events (see kernel_denials.h).
#include "supervisor/kernel_denials/kernel_denials.h"

#include <errno.h>
#include <poll.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "common/read_file.h"
#include "policy/model.h"
#include "supervisor/audit/denial_line.h"
#include "supervisor/audit/syscall_name.h"

namespace sv::supervisor {
namespace {

namespace ka = tracer::kernel_audit;

// AUDIT_TRUSTED_APP: the type of the end marker (AuditControl::sendUserMessage).
constexpr uint16_t kMarkerType = 1121;
// How long the end waits for its marker: kauditd sends within milliseconds;
// a filter rule of the host's auditd that drops user messages would make it
// wait for nothing, so it is bounded.
constexpr int kMarkerWaitMs = 2000;
// Landlock records of a task without an audit context never get an EOE: the
// assembler completes them this long after newer records.
constexpr uint64_t kCompleteAfterMs = 500;

// The rule ids of what the kernel refuses without a policy rule of its own.
// (Reads, writes and execs outside the roots take the engine's rule.)
struct KernelRule {
  const char* id;
  const char* name;
  const char* reason;
};
constexpr KernelRule kScopeSignal{
    "landlock-scope-signal", "Landlock scope: signals",
    "the tree may signal its own processes only, not the supervisor or the rest of the host"};
constexpr KernelRule kScopeAbstractSocket{
    "landlock-scope-abstract-unix-socket", "Landlock scope: abstract unix sockets",
    "abstract unix sockets outside the tree are out of its reach"};
constexpr KernelRule kForeignAbi{
    "seccomp-foreign-abi", "seccomp filter: foreign syscall ABI",
    "a second syscall ABI (i386, x32) would bypass every per-number rule: the process is killed"};
constexpr const char* kSeccompReason = "a sandboxed tree never needs this syscall";

bool has(const std::vector<std::string>& blockers, std::string_view what) {
  for (const auto& b : blockers)
    if (b == what) return true;
  return false;
}

// What a Landlock file-system denial was, by its blockers.
struct FsOperation {
  const char* category;
  const char* operation;
  policy::Operation op;
};
FsOperation fsOperation(const std::vector<std::string>& blockers) {
  using policy::Operation;
  if (has(blockers, "fs.execute")) return {"exec", "exec", Operation::Exec};
  if (has(blockers, "fs.read_file") || has(blockers, "fs.read_dir"))
    return {"file", "read", Operation::Read};
  constexpr std::pair<std::string_view, const char*> kWrites[] = {
      {"fs.write_file", "write"},  {"fs.truncate", "truncate"},   {"fs.make_dir", "mkdir"},
      {"fs.make_sym", "symlink"},  {"fs.remove_file", "unlink"},  {"fs.remove_dir", "rmdir"},
      {"fs.refer", "rename"},      {"fs.ioctl_dev", "ioctl"},     {"fs.make_reg", "create"},
      {"fs.make_sock", "create"},  {"fs.make_fifo", "create"},    {"fs.make_char", "create"},
      {"fs.make_block", "create"},
  };
  for (const auto& [blocker, name] : kWrites)
    if (has(blockers, blocker)) return {"file", name, Operation::Write};
  return {"file", "write", Operation::Write};
}

}  // namespace

Result<std::unique_ptr<KernelDenials>> KernelDenials::start() {
  auto audit_switch = ka::AuditSwitch::acquire();
  if (!audit_switch) return audit_switch.error();
  auto control = ka::AuditControl::open();
  if (!control) return control.error();
  auto listener = ka::AuditListener::open();
  if (!listener) return listener.error();
  // The switch read the status just now: each AUDIT_GET reply costs the
  // kernel a thread of its own (0.5-4 ms here), so it is not asked again.
  const uint32_t lost = audit_switch->report().before.lost;
  return std::unique_ptr<KernelDenials>(new KernelDenials(
      std::move(*audit_switch), std::move(*control), std::move(*listener), lost));
}

KernelDenials::KernelDenials(ka::AuditSwitch audit_switch, ka::AuditControl control,
                             ka::AuditListener listener, uint32_t lost_at_start)
    : switch_(std::move(audit_switch)),
      control_(std::move(control)),
      listener_(std::move(listener)),
      lost_at_start_(lost_at_start) {}

KernelDenials::~KernelDenials() {
  // The status finish() read spares the switch an AUDIT_GET of its own.
  (void)switch_.release(status_at_end_);
}

std::string KernelDenials::describe() const { return switch_.report().describe(); }

uint64_t KernelDenials::lost() const {
  // The kernel's counter is host-wide (another auditd user's loss counts too):
  // an upper bound of ours, reported as such.
  const uint32_t lost_at_end = status_at_end_ ? status_at_end_->lost : lost_at_start_;
  return listener_.overruns() + (lost_at_end - lost_at_start_);
}

void KernelDenials::watch(Supervision& loop, AuditLog& audit, ProcessCache& processes,
                          const policy::Engine& engine, KernelDenialsOptions options) {
  audit_ = &audit;
  processes_ = &processes;
  engine_ = &engine;
  options_ = std::move(options);
  filter_.emplace(options_.root_pid);
  cgroup_needle_ = "/" + options_.session_cgroup;
  marker_ = "supervise-kernel-denials-end-" + std::to_string(::getpid()) + "-" +
            std::to_string(reinterpret_cast<uintptr_t>(this));
  loop.watchReadable(listener_.fd(), [this] {
    drain();
    flush(false);
  });
  loop.addTimer(250, [this] { flush(false); });
}

bool KernelDenials::drain() {
  bool marker_seen = false;
  ka::RecordAssembler::Output out;
  (void)listener_.drain([&](uint16_t type, std::string_view text) {
    if (type == kMarkerType) {
      if (text.find(marker_) != std::string_view::npos) marker_seen = true;
      return;
    }
    assembler_.feed(type, text, out);
  });
  emitDenials(out);
  return marker_seen;
}

void KernelDenials::flush(bool all) {
  ka::RecordAssembler::Output out;
  if (all)
    assembler_.flushAll(out);
  else
    assembler_.flushOlderThan(kCompleteAfterMs, out);
  emitDenials(out);
}

void KernelDenials::finish() {
  if (finished_ || !audit_) return;
  finished_ = true;
  // Everything the tree did is in the kernel's queue by now (it is gone):
  // the marker comes out behind the last of it.
  bool seen = false;
  if (control_.sendUserMessage(marker_)) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kMarkerWaitMs);
    while (!seen && std::chrono::steady_clock::now() < deadline) {
      pollfd p{listener_.fd(), POLLIN, 0};
      if (::poll(&p, 1, 50) > 0) seen = drain();
    }
  }
  if (!seen) seen = drain();
  flush(true);
  // The kernel's lost counter as of now: the tree is gone.
  reportLost();
  if (!seen)
    std::fprintf(stderr,
                 "supervise: audit: the kernel's denial records may be incomplete (no end "
                 "marker within %d ms)\n",
                 kMarkerWaitMs);
}

void KernelDenials::reportLost() {
  if (auto status = control_.getStatus()) status_at_end_ = *status;
  if (const uint64_t n = lost())
    std::fprintf(stderr,
                 "supervise: audit: %llu kernel audit record(s) lost during the session "
                 "(socket overruns, or the host's audit backlog)\n",
                 static_cast<unsigned long long>(n));
}

void KernelDenials::emitDenials(ka::RecordAssembler::Output& out) {
  if (!filter_) return;
  for (const auto& domain : out.domains) filter_->observe(domain);
  for (const auto& denial : out.denials)
    if (filter_->accept(denial, [this](int64_t pid) { return inSession(pid); })) emit(denial);
}

// A process of the session lives in the session cgroup or one below it
// (profiles): "0::/.../supervise-<id>[/...]" in /proc/PID/cgroup.
bool KernelDenials::inSession(int64_t pid) const {
  if (pid <= 0 || options_.session_cgroup.empty()) return pid == options_.root_pid;
  char path[64], buf[1024];
  std::snprintf(path, sizeof path, "/proc/%lld/cgroup", static_cast<long long>(pid));
  const ssize_t n = readFilePrefix(path, buf, sizeof buf);
  if (n <= 0)
    return pid == options_.root_pid ||
           (options_.was_in_session && options_.was_in_session(static_cast<pid_t>(pid)));
  const std::string_view text(buf, static_cast<size_t>(n));
  for (size_t at = text.find(cgroup_needle_); at != std::string_view::npos;
       at = text.find(cgroup_needle_, at + 1)) {
    const size_t end = at + cgroup_needle_.size();
    if (end == text.size() || text[end] == '/' || text[end] == '\n') return true;
  }
  return false;
}

void KernelDenials::emit(const ka::KernelDenial& d) {
  AuditEvent ev;
  ev.decision = "deny";  // the kernel enforced it whatever the policy's mode
  const ka::SyscallRecord* sys = d.syscall_record ? &*d.syscall_record : nullptr;
  ev.arch = sys ? sys->arch : d.arch;
  ev.syscall_nr = static_cast<int>(sys ? sys->syscall : d.syscall_nr);
  ev.syscall = syscallName(ev.arch, ev.syscall_nr);
  std::shared_ptr<const ProcessInfo> process;
  std::optional<ProcessInfo> gone;  // a process that exited before we looked
  if (d.pid) {
    process = processes_->lookup(static_cast<int>(*d.pid), static_cast<int>(*d.pid));
    if (!process || process->exe.empty()) {
      gone.emplace(process ? *process : ProcessInfo{});
      gone->pid = gone->tid = static_cast<int>(*d.pid);
      if (gone->comm.empty()) gone->comm = d.comm;
      if (gone->exe.empty()) gone->exe = d.exe;
      if (sys && gone->ppid < 0) gone->ppid = static_cast<int>(sys->ppid);
    }
    ev.process = gone ? &*gone : process.get();
  }
  const std::string profile = ev.process ? ev.process->profile : std::string();
  auto setRule = [&ev](const KernelRule& rule) {
    ev.rule_id = rule.id;
    ev.rule_name = rule.name;
    ev.rule_reason = rule.reason;
  };
  std::string target;  // what the denial line names
  const char* verb = "access to";
  switch (d.kind) {
    case ka::DenialKind::kLandlockFs: {
      ev.enforced_by = "landlock";
      const FsOperation fs = fsOperation(d.blockers);
      ev.category = fs.category;
      ev.operation = fs.operation;
      ev.err = sys && !sys->success && sys->exit < 0 ? static_cast<int>(-sys->exit) : EACCES;
      const std::string path = d.path.value_or("");
      if (fs.op == policy::Operation::Exec)
        ev.exec.path = path;
      else
        ev.file.path = path;
      // The rule that stands for it: the engine's answer for the same request
      // (a path outside every root is its default rule).
      policy::Request req;
      req.op = fs.op;
      req.path = path;
      req.profile = profile;
      const policy::Decision decision = engine_->decide(req);
      std::string_view rule_id = decision.rule_id;
      if (decision.verdict == policy::Verdict::Allow)  // e.g. the parent of a create
        rule_id = fs.op == policy::Operation::Read   ? policy::kDefaultDenyRead
                  : fs.op == policy::Operation::Exec ? policy::kDefaultDenyExec
                                                     : policy::kDefaultDenyWrite;
      ev.rule_id = std::string(rule_id);
      const policy::RuleText text = engine_->ruleText(rule_id);
      ev.rule_name = std::string(text.name);
      ev.rule_reason = std::string(text.reason);
      ev.default_rule = rule_id == policy::kDefaultDenyRead ||
                        rule_id == policy::kDefaultDenyWrite || rule_id == policy::kDefaultDenyExec;
      verb = fs.op == policy::Operation::Exec   ? "exec of"
             : fs.op == policy::Operation::Read ? "read of"
                                                : "write to";
      target = std::string(relativeToWorkspace(path, options_.workspace));
      break;
    }
    case ka::DenialKind::kLandlockScope:
      ev.enforced_by = "landlock";
      ev.err = EPERM;
      if (has(d.blockers, "scope.signal")) {
        ev.category = "process";
        ev.operation = "signal";
        setRule(kScopeSignal);
        ev.target.pid = d.opid ? static_cast<int>(*d.opid) : -1;
        ev.target.comm = d.ocomm.value_or("");
        verb = "signal to";
        target = "pid " + std::to_string(ev.target.pid) +
                 (ev.target.comm.empty() ? "" : " (" + ev.target.comm + ")");
      } else {
        ev.category = "network";
        ev.operation = "connect";
        ev.network.family = "unix";
        std::string name = d.path.value_or("");
        if (!name.empty() && name[0] == '\0') name[0] = '@';
        ev.network.unix_path = name;
        setRule(kScopeAbstractSocket);
        verb = "connect to";
        target = name;
      }
      break;
    case ka::DenialKind::kSeccomp: {
      ev.enforced_by = "seccomp";
      ev.category = "process";
      const bool kill = d.action == ka::SeccompAction::kKillProcess ||
                        d.action == ka::SeccompAction::kKillThread;
      if (kill) {
        ev.operation = "kill";
        setRule(kForeignAbi);
        verb = "syscall";
        target = (ev.syscall.empty() ? "#" + std::to_string(ev.syscall_nr) : ev.syscall) +
                 " of a foreign ABI";
      } else {
        // The filter's refusals all answer EPERM (tracer/seccomp/seccomp_filter.cpp); the
        // record carries the action, not its errno.
        ev.operation = "syscall";
        ev.err = d.errno_value ? d.errno_value : EPERM;
        ev.rule_id = "seccomp:" + (ev.syscall.empty() ? std::to_string(ev.syscall_nr) : ev.syscall);
        ev.rule_name = "seccomp filter: " + ev.rule_id.substr(8) + " refused";
        ev.rule_reason = kSeccompReason;
        verb = "syscall";
        target = ev.rule_id.substr(8);
      }
      break;
    }
    default:
      ev.enforced_by = "landlock";
      ev.category = "file";
      ev.operation = "other";
      ev.err = EACCES;
      ev.rule_id = "landlock";
      verb = "access to";
      target = d.path.value_or("");
      break;
  }
  const uint64_t seq = audit_->emit(ev);
  if (!options_.quiet)
    printDenial(ev.operation == "kill" ? "killed for" : "denied", verb, target, ev.rule_id,
                ev.rule_reason, {audit_->session().session_id, seq});
}

}  // namespace sv::supervisor
