// LsmBackend: see lsm_backend.h.
#include "supervisor/session/lsm_backend.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "policy/cidr.h"
#include "policy/compile_lsm.h"
#include "supervisor/audit/denial_line.h"
#include "supervisor/audit/syscall_name.h"
#include "tracer/probe.h"

namespace sv::supervisor {
namespace {

bool hasHook(const std::vector<std::string>& hooks, std::string_view name) {
  return std::find(hooks.begin(), hooks.end(), name) != hooks.end();
}

// A pathname unix socket's peer, judged as a write of its bound path.
bool isUnixPeer(const tracer::LsmEvent& e) {
  return e.hook == tracer::kLsmHookUnixStreamConnect || e.hook == tracer::kLsmHookUnixMaySend;
}

// The rule of a create refused below a directory the notify handler is
// moving (LsmFilter::markMoving).
constexpr std::string_view kRenameInProgress = "rename-in-progress";

// The operation an event reports, named as the user-notify handler names it.
const char* operationOf(const tracer::LsmEvent& e) {
  switch (e.hook) {
    case tracer::kLsmHookFileOpen: return e.op == policy::LsmOp::Write ? "write" : "open";
    case tracer::kLsmHookPathMknod: return "create";
    case tracer::kLsmHookPathUnlink: return "unlink";
    case tracer::kLsmHookPathMkdir: return "mkdir";
    case tracer::kLsmHookPathRmdir: return "rmdir";
    case tracer::kLsmHookPathRename: return "rename";
    case tracer::kLsmHookPathLink: return "link";
    case tracer::kLsmHookPathSymlink: return "symlink";
    case tracer::kLsmHookPathTruncate: return "truncate";
    case tracer::kLsmHookPathChmod: return "chmod";
    case tracer::kLsmHookPathChown: return "chown";
    case tracer::kLsmHookBprmCheck:
    case tracer::kLsmHookMmapFile: return "exec";
    case tracer::kLsmHookSocketConnect: return "connect";
    case tracer::kLsmHookSocketSendmsg: return "sendmsg";
    case tracer::kLsmHookUnixStreamConnect: return "connect";
    // Also a datagram connect(2): the hook does not tell it from a send.
    case tracer::kLsmHookUnixMaySend: return "sendmsg";
  }
  return "access";
}

std::string_view verbOf(policy::LsmOp op) {
  switch (op) {
    case policy::LsmOp::Read: return "read of";
    case policy::LsmOp::Write: return "write to";
    case policy::LsmOp::Exec:
    case policy::LsmOp::Switch: return "exec of";
    case policy::LsmOp::Connect: return "connect to";
  }
  return "access to";
}

}  // namespace

std::optional<BackendChoice> parseBackendChoice(std::string_view text) {
  if (text == "auto") return BackendChoice::Auto;
  if (text == "host") return BackendChoice::Host;
  if (text == "bpf-lsm") return BackendChoice::BpfLsm;
  if (text == "ptrace") return BackendChoice::Ptrace;
  return std::nullopt;
}

policy::SeccompPlan lsmSeccompPlan(const policy::SeccompPlan& host,
                                   const std::vector<std::string>& hooks) {
  policy::SeccompPlan plan = host;
  // file_open judges every open (read or write intent), bprm_check_security
  // every exec, profile switches included, and mmap_file the program of a
  // dynamic loader run as one: required hooks, so a loaded filter always
  // has them.
  plan.notify_read_opens = false;
  plan.notify_exec = false;
  // Without path_mknod (no bpf_path_d_path kfunc) a denied O_CREAT would be
  // judged by file_open after the file exists; without one of the others a
  // route to a protected file would be open. Then user-notify keeps them.
  plan.notify_write_opens = host.notify_write_opens && !tracer::hasEveryLsmPathHook(hooks);
  // Hooks that see a dentry without its path cannot match path rules: the
  // source of a hard link (a second, unprotected name for .env would let it
  // be written), utime(s)/utimensat (inode_setattr) and the xattr calls
  // (inode_setxattr). And path_rename judges the two names only: moving a
  // directory renames every protected path below it (`mv .git g; echo >>
  // g/config; mv g .git`, or the workspace from its writable parent), which
  // BPF cannot walk. The notify handler judges the moved tree under both
  // names and renames from the parents it pinned; the supervisor is outside
  // the session cgroup, so the LSM does not judge its rename again. Those
  // syscalls stay notified; they are rare.
  plan.notify_links_renames_and_attrs = host.notify_write_opens;
  return plan;
}

LsmBackendOptions LsmBackendOptions::forSession(const policy::Policy& policy, bool quiet) {
  LsmBackendOptions o;
  o.audit_mode = policy.mode == policy::Mode::Audit;
  o.deny_events_only = policy.audit.level == policy::AuditLevel::Deny;
  o.quiet = quiet;
  o.workspace = policy.workspace;
  return o;
}

policy::LandlockPlan LsmBackend::landlockPlan(const policy::LandlockPlan& host) {
  policy::LandlockPlan plan = host;
  plan.rules.clear();
  plan.paths = false;
  return plan;
}

bool LsmBackend::decidesNetwork() const {
  return hasHook(hooks(), "socket_connect") && hasHook(hooks(), "socket_sendmsg");
}

Result<std::unique_ptr<LsmBackend>> LsmBackend::select(
    BackendChoice choice, std::shared_ptr<const policy::Policy> policy,
    const policy::CompiledPolicy& compiled, const std::string& cgroup_dir,
    const LsmBackendOptions& options, std::string* why_not) {
  if (choice == BackendChoice::Host || choice == BackendChoice::Ptrace)
    return std::unique_ptr<LsmBackend>();
  auto unavailable = [&](std::string why) -> Result<std::unique_ptr<LsmBackend>> {
    if (choice == BackendChoice::BpfLsm) return Error{ENOTSUP, "bpf-lsm backend: " + why};
    if (why_not) *why_not = std::move(why);
    return std::unique_ptr<LsmBackend>();
  };
  if (tracer::testDisabled("bpf-lsm")) return unavailable(tracer::kDisabledByTest);
  if (cgroup_dir.empty()) return unavailable("needs a session cgroup (cgroup v2)");
  // For `auto`, the probe first: it is cheap where the BPF LSM is off or
  // refused (every host of the development kind), while compiling the path
  // DFAs costs tens of milliseconds of every session's start-up. A forced
  // backend skips the probe's extra load (seconds in a TCG guest) but not
  // the check of the active LSM list: without `bpf` there, programs attach
  // and silently enforce nothing.
  std::string detail;
  auto usable = choice == BackendChoice::Auto ? tracer::probeBpfLsm(&detail)
                                              : tracer::bpfLsmActive(&detail);
  if (!usable) return unavailable(usable.error().message());
  if (!*usable) return unavailable(detail);
  auto id = tracer::cgroupIdOf(cgroup_dir);
  if (!id) return unavailable(id.error().message());
  const policy::LsmPlan plan = policy::compileLsm(*policy, compiled);
  tracer::LsmFilterOptions filter_options;
  filter_options.audit_only = options.audit_mode;
  filter_options.deny_events_only = options.deny_events_only;
  // Domain entries (github.com:22) become addresses only at run time, in the
  // cgroup programs' allowlist (dns_allow.h), and the DNS proxy redirect
  // happens there too: with any of them the network stays with cgroup-bpf.
  bool hosts = !compiled.network.hosts.empty();
  for (const auto& [_, plan] : compiled.profile_network) hosts = hosts || !plan.hosts.empty();
  filter_options.network = !hosts;
  auto filter = tracer::LsmFilter::load(plan, *id, filter_options);
  if (!filter) return unavailable("LSM programs do not load: " + filter.error().message());
  return std::make_unique<LsmBackend>(std::move(*filter), std::move(policy), options);
}

LsmBackend::LsmBackend(tracer::LsmFilter filter, std::shared_ptr<const policy::Policy> policy,
                       const LsmBackendOptions& options)
    : filter_(std::move(filter)), policy_(policy), engine_(policy), options_(options) {}

void LsmBackend::attach(Supervision& loop, AuditLog& audit, ProcessCache& processes) {
  audit_ = &audit;
  processes_ = &processes;
  loop.watchReadable(filter_.eventFd(), [this] { drain(); });
  // Allows are written without a wake-up until 64 KiB wait: the timer bounds
  // how late they reach the audit trail.
  loop.addTimer(100, [this] { drain(); });
  loop.atStop([this] { drain(); });
}

int LsmBackend::drain() {
  if (!audit_) return 0;
  return filter_.consume([this](const tracer::LsmEvent& e) { onEvent(e); });
}

void fillLsmAuditEvent(const tracer::LsmEvent& e, const std::string& rule_id, bool audit_mode,
                       AuditEvent& ev) {
  const bool deny = e.verdict == policy::kLsmDeny;
  const bool enforced = deny && !(e.flags & tracer::kLsmEventFlagAudit) && !audit_mode;
  const bool network = e.op == policy::LsmOp::Connect;
  const bool unix_peer = isUnixPeer(e);
  const bool exec = e.op == policy::LsmOp::Exec || e.op == policy::LsmOp::Switch;
  ev.category = network || unix_peer ? "network" : exec ? "exec" : "file";
  ev.operation = operationOf(e);
  ev.decision = !deny ? "allow" : enforced ? "deny" : "would-deny";
  ev.enforced_by = kEnforcedByBpfLsm;
  // Connects and sends are refused with EPERM, as by the cgroup programs.
  ev.err = !enforced ? 0 : network ? EPERM : EACCES;
  ev.rule_id = rule_id;
  ev.default_rule = policy::isDefaultRule(rule_id);
  if (e.syscall_nr >= 0) {
    ev.arch = kNativeAuditArch;
    ev.syscall_nr = e.syscall_nr;
    ev.syscall = syscallName(kNativeAuditArch, e.syscall_nr);
  }
  if (unix_peer) {
    // The cgroup programs' event for the same decision, with the resolved path.
    ev.network.family = "unix";
    ev.network.unix_path = e.path;
    if (rule_id == policy::kDefaultDenyWrite) ev.rule_id = policy::kDefaultDenyUnixSocket;
  } else if (network) {
    ev.network.family = e.family == AF_INET6 ? "inet6" : "inet";
    ev.network.proto = e.hook == tracer::kLsmHookSocketSendmsg ? "udp" : "";
    ev.network.ip = policy::ipToString(e.addr);
    ev.network.port = e.port;
  } else if (exec) {
    ev.exec.path = e.path;
  } else {
    ev.file.path = e.path;
  }
}

void LsmBackend::onEvent(const tracer::LsmEvent& e) {
  AuditEvent& ev = event_;
  ev.reset();
  const bool moving = e.flags & tracer::kLsmEventFlagMoving;
  fillLsmAuditEvent(e, moving ? std::string(kRenameInProgress) : filter_.ruleIdAt(e.rule_index),
                    options_.audit_mode, ev);
  // The kernel knows the rule's id, not its name or reason: the policy has them.
  const policy::RuleText text = engine_.ruleText(ev.rule_id);
  ev.rule_name.assign(text.name);
  ev.rule_reason.assign(moving ? "a create below a directory being moved, while its tree is "
                                 "checked for protected paths"
                               : text.reason);
  const bool deny = e.verdict == policy::kLsmDeny;
  std::shared_ptr<const ProcessInfo> process;
  if (e.tgid && processes_) {
    const std::string& profile = filter_.profileAt(e.profile);
    process = processes_->lookup(static_cast<int>(e.tgid), static_cast<int>(e.pid));
    // The kernel switched the profile on exec; the process table learns it here.
    if (process && process->profile != profile) {
      processes_->setProfile(static_cast<int>(e.tgid), profile);
      process = processes_->lookup(static_cast<int>(e.tgid), static_cast<int>(e.pid));
    }
    ev.process = process.get();
  }
  const uint64_t seq = audit_->emit(ev);
  ev.process = nullptr;
  if (deny) reportDenial(e, ev, seq);
}

void LsmBackend::reportDenial(const tracer::LsmEvent& e, const AuditEvent& ev, uint64_t seq) {
  if (options_.quiet) return;
  const bool unix_peer = isUnixPeer(e);
  const std::string shown =
      e.op == policy::LsmOp::Connect ? ev.network.ip + ":" + std::to_string(e.port)
      : unix_peer                    ? "unix socket " + e.path
                                     : std::string(relativeToWorkspace(e.path, options_.workspace));
  printDenial(ev.decision == "deny" ? "denied" : "would deny",
              unix_peer ? "connect to" : verbOf(e.op), shown, ev.rule_id, ev.rule_reason,
              {audit_->session().session_id, seq});
}

}  // namespace sv::supervisor
