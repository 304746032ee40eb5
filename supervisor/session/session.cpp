// Session: probe, confine, launch, supervise, report; see session.h.
//
// runSession() is a list of named steps over one SessionState, in the order
// the set-up must happen. Each step is one function that either leaves the
// state ready for the next or returns the exit status to stop with; the
// state's members are declared in step order, so an early return tears down
// exactly what was built, in reverse (and the command, launched but not yet
// let go, leaves unrun).
#include "supervisor/session/session.h"

#include <linux/capability.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <optional>
#include <thread>

#include "policy/compile.h"
#include "policy/engine.h"
#include "policy/env_rules.h"
#include "supervisor/audit/audit_log.h"
#include "supervisor/audit/policy_json.h"
#include "supervisor/audit/sha256.h"
#include "supervisor/host/feature_matrix.h"
#include "supervisor/kernel_denials/kernel_denials.h"
#include "supervisor/loop/supervision.h"
#include "supervisor/net/dns_allow.h"
#include "supervisor/net/net_events.h"
#include "supervisor/net/profile_network.h"
#include "supervisor/notify/notify_handler.h"
#include "supervisor/notify/notify_thread.h"
#include "supervisor/notify/target_path.h"
#include "supervisor/proc/process_events.h"
#include "supervisor/session/exit_handoff.h"
#include "supervisor/session/launcher.h"
#include "supervisor/session/lsm_backend.h"
#include "supervisor/ptrace/trace_thread.h"
#include "tracer/ptrace/trace_filter.h"
#include "supervisor/session/watchdog.h"
#include "supervisor/session/write_recheck.h"
#include "tracer/bpf/exec_file_id.h"
#include "tracer/bpf/net_filter.h"
#include "tracer/capabilities.h"
#include "common/kernel_abi.h"
#include "tracer/cgroup.h"
#include "tracer/landlock.h"
#include "tracer/mount_floor.h"
#include "tracer/probe.h"
#include "tracer/seccomp/notify.h"
#include "tracer/seccomp/seccomp_filter.h"
#include "tracer/seccomp/seccomp_programs.h"

extern char** environ;

namespace sv::supervisor {

// Everything one session builds, in the order it is built (and torn down in
// reverse). A step that returns early leaves the later members empty.
struct SessionState {
  explicit SessionState(const SessionOptions& o)
      : options(o),
        policy(*o.policy),
        unsafe(policy.fallback == policy::Fallback::UnsafeHostProcess),
        engine(o.policy) {}

  bool auditOnly() const { return policy.mode == policy::Mode::Audit; }

  const SessionOptions& options;
  const policy::Policy& policy;
  const bool unsafe;  // fallback: unsafe-host-process
  const policy::Engine engine;
  std::string exe;  // the command, resolved like a shell would

  // probe, cgroup, backend
  tracer::HostFeatures host;
  policy::CompiledPolicy compiled;
  const std::string session_id = newSessionId();
  // The cgroup's name also names the session's v1 pids cgroup and scopes /proc.
  const std::string cgroup_name = "supervise-" + session_id.substr(0, 12);
  std::optional<tracer::SessionCgroup> cgroup;
  std::string cgroup_error;
  std::optional<tracer::PidsCgroupV1> pids_v1;
  std::unique_ptr<LsmBackend> lsm;
  bool ptrace = false;  // the ptrace backend: seccomp stops answered by a tracer
  std::optional<ProcTrackerLoad> proc;

  // confinement and launch
  UniqueFd ruleset;
  std::optional<std::vector<sock_filter>> filter;
  std::unique_ptr<KernelDenials> kernel_denials;  // null: the kernel's denials go unrecorded
  std::string kernel_audit_error;                 // why, then
  std::future<Result<std::unique_ptr<KernelDenials>>> kernel_denials_starting;

  // The effective policy as the start event carries it, and its digest, which
  // every event carries (policyRecord()).
  struct PolicyRecord {
    nlohmann::ordered_json json;
    std::string text;  // json serialized once: hashed, and written in the start event
    std::string sha256;
  };
  std::optional<PolicyRecord> policy_record;
  std::optional<std::vector<sock_filter>> log_filter;  // the refusals, logged by the kernel
  uint64_t keep_capabilities = 0;
  sigset_t old_mask{};
  UniqueFd sigfd;
  LaunchSpec spec;
  SessionEnvironment environment;  // what the launch did to the command's environment
  std::optional<Launched> launched;
  // The roots as a private mount namespace, where Landlock is missing.
  std::optional<tracer::StagingDir> staging;
  std::optional<tracer::MountFloorPlan> mount_floor;
  std::string mount_floor_error;  // empty: not needed, or planned
  std::string process_root;       // the command's root as we name it, read once it is set up
  mode_t command_umask = 022;     // the command's at start: it was cloned with ours
  // The command's mount table for the exec re-check's file identities, where
  // it has a mount namespace of its own (shareMountTableOf).
  std::optional<tracer::MountNamespaceShare> mount_table;
  // The command's own mount namespace, where the protected names get bound
  // read-only so that the kernel re-checks the write opens the handler lets
  // through (write_recheck.h); the binding runs once the command does.
  std::optional<WriteRecheckPlan> write_recheck_plan;

  // network
  bool needs_net = false;
  bool lsm_net = false;  // the BPF LSM judges connects
  std::optional<policy::NetworkPlan> floor;
  const std::map<std::string, policy::NetworkPlan> no_profile_plans;
  std::optional<tracer::NetFilter> net;
  std::optional<ProfileNetwork> profile_net;
  std::string net_error = "unavailable (needs a session cgroup)";
  std::unique_ptr<DnsAllow> dns;

  // audit and watchdog
  std::optional<AuditLog> audit;
  std::optional<Watchdog> watchdog;

  // supervision
  Supervision supervision;
  ProcessCache processes;
  std::optional<tracer::NotifyListener> listener;
  std::optional<ListenerAnswer> listener_answer;
  std::optional<PtraceAnswer> ptrace_answer;
  std::optional<NotifyHandler> handler;
  std::unique_ptr<NotifyThread> notify_thread;  // declared after handler: stops first
  std::unique_ptr<TraceThread> trace_thread;    // the same, under ptrace
  std::unique_ptr<WriteRecheck> write_recheck;  // after handler: stops first
  std::optional<ProcessEvents> proc_events;
  std::optional<NetEventAuditor> net_events;

  const policy::NetworkPlan& baseNetwork() const { return floor ? *floor : compiled.network; }
  const std::map<std::string, policy::NetworkPlan>& profileNetworks() const {
    return lsm_net ? no_profile_plans : compiled.profile_network;
  }
};

namespace {

using policy::NetworkMode;

// Processes and threads the tree may have at once: far above what builds,
// test runners and language servers use, far below what exhausts a host.
constexpr int kSessionPidsMax = 4096;

void say(const std::string& line) { std::fprintf(stderr, "supervise: %s\n", line.c_str()); }

// What the policy needs from the host, and whether the host has it.
struct Requirement {
  std::string feature;
  bool available;
  std::string detail;
};

// The probe's own note for a feature ("landlock: unavailable (...)"), if any.
std::string probeNote(const tracer::HostFeatures& host, std::string_view prefix,
                      std::string fallback) {
  for (const auto& note : host.notes)
    if (note.starts_with(prefix)) return note.substr(prefix.size());
  return fallback;
}

std::vector<Requirement> requirements(const policy::Policy& policy,
                                      const tracer::HostFeatures& host, bool ptrace,
                                      const std::string& mount_floor_error, bool cgroup_ok,
                                      const std::string& cgroup_detail, bool net_ok,
                                      const std::string& net_detail) {
  std::vector<Requirement> out;
  if (ptrace)
    out.push_back({"seccomp with ptrace (--backend ptrace)", host.seccomp_trace,
                   probeNote(host, "ptrace: ", "unavailable")});
  else
    out.push_back({"seccomp user-notify", host.seccomp_notify && host.notify_addfd,
                   probeNote(host, "seccomp-notify: ", "unavailable")});
  // The floor under raced decisions: Landlock, else the mount namespace.
  out.push_back({"a filesystem floor (Landlock, or a private mount namespace)",
                 host.landlock_abi > 0 || mount_floor_error.empty(),
                 "Landlock " + probeNote(host, "landlock: ", "unavailable") + "; mount namespace " +
                     mount_floor_error});
  out.push_back({"a session cgroup (cgroup v2)", cgroup_ok,
                 cgroup_detail.empty() ? probeNote(host, "cgroup: ", "unavailable") : cgroup_detail});
  if (policy.network.mode.value_or(NetworkMode::All) != NetworkMode::All)
    out.push_back({"cgroup socket BPF programs (network policy)", net_ok, net_detail});
  return out;
}

// Sets the supervisor's effective capabilities to `mask` within its
// permitted set (which is never reduced, so they can come back).
void setOwnEffectiveCapabilities(uint64_t mask) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return;
  const uint64_t permitted = data[0].permitted | (uint64_t(data[1].permitted) << 32);
  const uint64_t effective = permitted & mask;
  data[0].effective = static_cast<uint32_t>(effective);
  data[1].effective = static_cast<uint32_t>(effective >> 32);
  (void)::syscall(SYS_capset, &header, data);
}

// After launch the supervisor acts for the command (emulated opens, renames):
// it must not be mightier than the command. Clear the effective capability
// set, keeping CAP_SYS_PTRACE (reading the memory of a reparented daemon
// under Yama) and whatever the policy let the command keep.
void lowerOwnCapabilities(uint64_t keep) {
  setOwnEffectiveCapabilities(keep | (1ULL << CAP_SYS_PTRACE));
}

// The command is gone: take back what lowerOwnCapabilities() set aside, for
// tearing down the session cgroup (cgroupfs refuses rmdir without them here).
void restoreOwnCapabilities() { setOwnEffectiveCapabilities(~0ULL); }

// Ends the audit trail. A sink that broke (disk full, receiver gone for
// good) cannot carry the report of its own loss: stderr does.
void finishAudit(AuditLog& audit, const ExitStatus& exit) {
  audit.finish(exit);
  for (const Error& e : audit.sinkErrors()) say("audit: " + e.message());
  if (const uint64_t lost = audit.counters().dropped)
    say("audit: " + std::to_string(lost) + " audit record(s) lost");
}

std::string envOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

std::string hostName() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

// A step returns nothing to go on, or the exit status to stop with.
using StepResult = std::optional<int>;
constexpr StepResult kNext = std::nullopt;

// A failure once the command is set up and the trail has its start event:
// nothing of the tree may run on, and the trail gets its end.
int failStarted(SessionState& s, const std::string& why) {
  say(why);
  if (s.cgroup) (void)s.cgroup->kill();
  finishAudit(*s.audit, ExitStatus{kExitSupervisorError, 0, false});
  return kExitSupervisorError;
}

// The command must exist before anything is set up: 127/126 like a shell.
StepResult findCommand(SessionState& s) {
  if (s.options.command.empty()) {
    say("no command given (usage: supervise [options] -- command [args...])");
    return kExitSupervisorError;
  }
  auto exe = findExecutable(s.options.command[0], envOr("PATH", "/usr/local/bin:/usr/bin:/bin"));
  if (!exe) {
    const int err = exe.error().code;
    say(s.options.command[0] + ": " + (err == ENOENT ? "command not found" : std::strerror(err)));
    return err == ENOENT ? kExitNotFound : kExitCannotRun;
  }
  s.exe = std::move(*exe);
  return kNext;
}

// Fail-closed sessions prove the host by setting themselves up (see
// probeHostForSession); the unsafe fallback must know up front what to skip.
StepResult probeHost(SessionState& s) {
  s.host = s.unsafe ? tracer::probeHost() : tracer::probeHostForSession();
  s.compiled = policy::compile(s.policy);  // seccomp plan: see chooseBackend()
  return kNext;
}

// Session cgroup first: the network filter attaches to it. A fork bomb must
// not take the host down: bound the tree's pids, in the session cgroup where
// it has the pids controller, else in a v1 pids cgroup of its own (hybrid
// hosts). Neither: the tree is unbounded, which `doctor` reports.
StepResult createCgroup(SessionState& s) {
  if (s.host.cgroup_writable) {
    auto created = tracer::SessionCgroup::create(s.cgroup_name);
    if (created)
      s.cgroup.emplace(std::move(*created));
    else
      s.cgroup_error = created.error().message();
  }
  if (s.cgroup && !s.cgroup->setPidsMax(kSessionPidsMax)) {
    auto created = tracer::PidsCgroupV1::create(s.cgroup_name, kSessionPidsMax);
    if (created) s.pids_v1.emplace(std::move(*created));
  }
  return kNext;
}

// bpf-lsm decides files, exec and connect in the kernel where it runs;
// user-notify then keeps only what its hooks cannot see (lsm_backend.h).
// Process tracking and the exec re-check load on a thread meanwhile
// (process_events.h).
StepResult chooseBackend(SessionState& s) {
  const BackendChoice choice = parseBackendChoice(s.options.backend).value_or(BackendChoice::Auto);
  auto chosen = LsmBackend::select(
      choice, s.options.policy,
      s.compiled, s.cgroup ? s.cgroup->path() : std::string(),
      LsmBackendOptions::forSession(s.policy, s.options.quiet));
  if (!chosen) {
    say("cannot enforce the policy: " + chosen.error().message() +
        " (`supervise doctor` shows what this host can enforce)");
    return kExitSupervisorError;
  }
  s.lsm = std::move(*chosen);
  // ptrace: asked for, or the fallback where user-notify is missing.
  s.ptrace = choice == BackendChoice::Ptrace ||
             (choice == BackendChoice::Auto && !s.lsm && !s.host.seccomp_notify &&
              s.host.seccomp_trace);
  if (s.ptrace && choice == BackendChoice::Auto)
    say("note: seccomp user-notify is unavailable here (" +
        probeNote(s.host, "seccomp-notify: ", "unavailable") +
        "): the ptrace backend decides instead (docs/enforcement.md, \"The ptrace backend\")");
  if (s.lsm) {
    s.compiled.seccomp = s.lsm->seccompPlan(s.compiled.seccomp);
    s.compiled.landlock = LsmBackend::landlockPlan(s.compiled.landlock);
  }
  s.proc.emplace(s.policy, s.compiled, s.cgroup ? s.cgroup->dirFd() : -1);
  return kNext;
}

// Where Landlock is missing the same plan becomes a private mount namespace
// (tracer/mount_floor.h): the floor under a raced decision stays.
void planMountFloor(SessionState& s) {
  if (!tracer::mountFloorAvailable(&s.mount_floor_error)) return;
  auto staging = tracer::StagingDir::create(s.compiled.landlock);
  if (!staging) {
    s.mount_floor_error = staging.error().message();
    return;
  }
  // Self-protection binds in every mode; mode audit blocks nothing else.
  std::vector<policy::PathRule> protect = s.policy.self_protect.deny_write;
  if (!s.auditOnly())
    protect.insert(protect.end(), s.policy.filesystem.deny_write.begin(),
                   s.policy.filesystem.deny_write.end());
  std::error_code ec;
  const std::string cwd = std::filesystem::current_path(ec).string();
  auto planned = tracer::planMountFloor(s.compiled.landlock, protect, staging->path(), cwd);
  if (!planned) {
    s.mount_floor_error = planned.error().message();
    return;
  }
  if (planned->names_truncated)
    say("note: mount floor: more than " + std::to_string(tracer::kMaxWalkEntries) +
        " entries below the writable roots: protected names beyond them are decided by the "
        "notify path alone");
  s.staging.emplace(std::move(*staging));
  s.mount_floor.emplace(std::move(*planned));
}

// The Landlock ruleset (or the mount floor), the seccomp program and the
// capabilities the command keeps: what the child applies to itself before
// its execve.
StepResult prepareConfinement(SessionState& s) {
  if (s.host.landlock_abi > 0) {
    auto built = tracer::buildLandlockRuleset(s.compiled.landlock, s.host.landlock_abi);
    if (!built) {
      say("landlock: " + built.error().message());
      if (!s.unsafe) return kExitSupervisorError;
    } else {
      s.ruleset = std::move(*built);
    }
  }
  if (!s.ruleset && s.compiled.landlock.paths) planMountFloor(s);
  if (s.ptrace && s.host.seccomp_trace) {
    auto traced = tracer::traceFilterOf(tracer::prebuiltSeccompFilter(s.compiled.seccomp));
    if (!traced) {
      say("seccomp: " + traced.error().message());
      return kExitSupervisorError;
    }
    s.filter = std::move(*traced);
  } else if (!s.ptrace && s.host.seccomp_notify) {
    s.filter = tracer::prebuiltSeccompFilter(s.compiled.seccomp);
  }
  auto keep = tracer::capabilityMask(s.policy.keep_capabilities);
  if (!keep) {
    say("capabilities: " + keep.error().message());
    return kExitPolicyError;
  }
  s.keep_capabilities = *keep;
  return kNext;
}

SessionState::PolicyRecord& policyRecord(SessionState& s) {
  if (!s.policy_record) {
    s.policy_record.emplace(SessionState::PolicyRecord{effectivePolicyJson(s.policy), "", ""});
    s.policy_record->text = effectivePolicyText(s.policy_record->json);
    s.policy_record->sha256 = sha256Hex(s.policy_record->text);
  }
  return *s.policy_record;
}

// Kernel audit (kernel_denials.h) must be on before the command is cloned (a
// task gets its audit context at fork); the kernel answers the AUDIT_GET it
// needs from a kernel thread it spawns for the reply (1.5-3 ms here, 20
// under load). So it starts on a thread of its own at once, and the probe,
// cgroup, backend and confinement steps overlap it (docs/performance.md).
StepResult beginKernelDenials(SessionState& s) {
  if (!tracer::testDisabled("kernel-audit"))
    s.kernel_denials_starting = std::async(std::launch::async, [] { return KernelDenials::start(); });
  return kNext;
}

// The effective policy's JSON and digest for the audit trail (~1 ms), built
// here: the thread would otherwise wait for kernel audit's reply.
StepResult buildPolicyRecord(SessionState& s) {
  policyRecord(s);
  return kNext;
}

// The kernel's own denials (Landlock, the seccomp filter) are recorded
// through kernel audit: its start begun above, or here (a ready session).
StepResult startKernelDenials(SessionState& s) {
  if (tracer::testDisabled("kernel-audit")) {
    s.kernel_audit_error = tracer::kDisabledByTest;
    return kNext;
  }
  auto started = s.kernel_denials_starting.valid() ? s.kernel_denials_starting.get()
                                                   : KernelDenials::start();
  if (started)
    s.kernel_denials = std::move(*started);
  else
    s.kernel_audit_error = started.error().message();
  return kNext;
}

// Planned at the launch, not when a ready session is prepared: the walk must
// see the names that exist when the command starts.
void planWriteRecheckFor(SessionState& s) {
  std::error_code ec;
  auto planned = planWriteRecheck({.policy = s.policy,
                                   .landlock = s.compiled.landlock,
                                   .landlock_ruleset = bool(s.ruleset),
                                   .notify_decides_files = !s.ptrace && !s.lsm && s.filter,
                                   .cwd = std::filesystem::current_path(ec).string(),
                                   .session_cgroup = s.cgroup ? s.cgroup_name : ""});
  if (planned)
    s.write_recheck_plan.emplace(std::move(*planned));
  else if (std::getenv("SUPERVISE_TIME_SETUP"))
    say("set-up write opens emulated: " + planned.error().message());
}

// Signals we forward arrive on a signalfd; the command starts with our old
// mask. The child sets itself up (launcher.h) while the network, audit and
// watchdog are set up here; it execs only on letCommandGo().
StepResult launchCommand(SessionState& s) {
  sigset_t forwarded;
  sigemptyset(&forwarded);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&forwarded, sig);
  ::sigprocmask(SIG_BLOCK, &forwarded, &s.old_mask);
  s.sigfd = UniqueFd(::signalfd(-1, &forwarded, SFD_NONBLOCK | SFD_CLOEXEC));

  LaunchSpec& spec = s.spec;
  spec.exe = s.exe;
  spec.argv = s.options.command;
  // environment.*: decided once, here; the start event names what went
  // (env_rules.h). A later exec keeps what the tree passes it.
  std::vector<std::string> inherited;
  for (char** e = environ; *e; ++e) inherited.emplace_back(*e);
  policy::EnvFilterResult env = policy::filterEnvironment(s.policy, inherited);
  spec.env = std::move(env.env);
  s.environment.applied = env.applied;
  s.environment.set = std::move(env.set);
  for (auto& r : env.removed)
    s.environment.removed.push_back({std::move(r.name), std::move(r.rule_id), std::move(r.reason)});
  spec.cgroup_fd = s.cgroup ? s.cgroup->dirFd() : -1;
  spec.pids_cgroup_tasks_fd = s.pids_v1 ? s.pids_v1->tasksFd() : -1;
  spec.landlock_ruleset_fd = s.ruleset ? s.ruleset.get() : -1;
  spec.mount_floor = s.mount_floor ? &*s.mount_floor : nullptr;
  planWriteRecheckFor(s);
  spec.own_mount_namespace = s.write_recheck_plan.has_value();
  spec.seccomp_filter = s.filter ? &*s.filter : nullptr;
  if (s.kernel_denials) {
    if (s.host.landlock_abi >= tracer::abi::kLandlockAbiWithAudit)
      spec.landlock_flags = tracer::abi::kLandlockRestrictSelfLogNewExecOn;
    if (s.filter) {
      s.log_filter = tracer::prebuiltRefusalLogFilter(s.compiled.seccomp);
      spec.seccomp_log_filter = &*s.log_filter;
    }
  }
  spec.keep_capabilities = s.keep_capabilities;
  // A command of the exec daemon starts as from a shell: nothing blocked
  // (the daemon's own mask is no business of the client's command).
  if (s.options.daemon)
    sigemptyset(&spec.child_sigmask);
  else
    spec.child_sigmask = s.old_mask;
  auto launched = launch(spec);
  if (!launched) {
    say("cannot start " + s.options.command[0] + ": " + launched.error().message());
    return kExitSupervisorError;
  }
  s.launched.emplace(std::move(*launched));
  return kNext;
}

// Each profile gets its own plan in the kernel (profile_network.h): a
// process moved into its profile's cgroup at a notified exec is judged by
// it. Under bpf-lsm judging connects, execs are not notified; the LSM
// applies each task's profile itself, and the cgroup programs, a second
// line, get the floor of every plan (what no profile allows).
StepResult loadNetworkFilter(SessionState& s) {
  s.lsm_net = s.lsm && s.lsm->decidesNetwork();
  if (s.lsm_net) s.floor = policy::networkFloor(s.compiled);
  s.needs_net = s.policy.network.mode.value_or(NetworkMode::All) != NetworkMode::All ||
                ProfileNetwork::anyOwnRules(s.policy);
  if (tracer::testDisabled("bpf")) {
    s.net_error = tracer::kDisabledByTest;
    return kNext;
  }
  if (!s.needs_net || !s.cgroup) return kNext;
  tracer::NetFilterOptions net_options;
  // Under bpf-lsm the LSM decides (and reports) connects first; the cgroup
  // programs stay as a second line and report only what they alone refuse.
  net_options.deny_events_only = s.policy.audit.level == policy::AuditLevel::Deny || s.lsm_net;
  // audit.level deny still records every connect (allowed ones too).
  net_options.report_connects = !s.lsm_net;
  net_options.audit_only = s.auditOnly();  // would-deny, never block
  addDnsProxyOptions(s.baseNetwork(), s.profileNetworks(), net_options);  // dns_allow.h
  net_options.unix_paths = !tracer::testDisabled("bpf-unix");  // as on a kernel < 6.7
  auto loaded = tracer::NetFilter::load(s.baseNetwork(), s.profileNetworks(), s.cgroup->dirFd(),
                                        net_options);
  if (!loaded) {
    s.net_error = loaded.error().message();
    return kNext;
  }
  s.net.emplace(std::move(*loaded));
  auto bound = ProfileNetwork::bind(*s.cgroup, *s.net, s.profileNetworks());
  // A process moved into a profile's cgroup must stay judged by the BPF LSM.
  Status judged;
  if (bound && s.lsm)
    for (uint64_t id : bound->cgroupIds())
      if (judged.ok()) judged = s.lsm->filter().addSession(id);
  if (bound && judged.ok()) {
    s.profile_net.emplace(std::move(*bound));
  } else {
    s.net.reset();
    s.net_error = "per-profile network rules: " + (bound ? judged.error() : bound.error()).message();
  }
  return kNext;
}

// Domain entries, the base's and every profile's (each learned address goes
// to the plans naming its host): the DNS proxy stands in for the resolvers
// before the tree runs.
StepResult startDnsProxy(SessionState& s) {
  if (!s.net || !anyHosts(s.baseNetwork(), s.profileNetworks())) return kNext;
  auto started = DnsAllow::start(*s.net, dnsAllowOptionsFor(s.baseNetwork(), s.profileNetworks()));
  if (started) {
    s.dns = std::move(*started);
  } else {
    s.net.reset();
    s.net_error = "domain entries: " + started.error().message();
  }
  return kNext;
}

// Fail closed: every mechanism the policy relies on, or nothing runs.
StepResult failClosed(SessionState& s) {
  bool missing = false;
  for (const auto& r : requirements(s.policy, s.host, s.ptrace, s.mount_floor_error,
                                    s.cgroup.has_value(), s.cgroup_error,
                                    s.net.has_value(), s.net_error)) {
    if (r.available) continue;
    missing = true;
    say(std::string(s.unsafe ? "WARNING: running without " : "cannot enforce the policy: ") +
        r.feature + ": " + r.detail);
  }
  if (missing && !s.unsafe) {
    say("refusing to run the command unconfined; `supervise doctor` shows what this host "
        "can enforce (fallback: unsafe-host-process would run it anyway)");
    return kExitSupervisorError;
  }
  if (missing) say("WARNING: fallback unsafe-host-process: the command runs partly unconfined");
  if (s.dns && s.dns->resolverCount() == 0)
    say("note: no nameserver in /etc/resolv.conf: host names in network.allow allow nothing");
  if (s.net && !s.net->unixPathsEnforced())
    say("note: pathname unix sockets are not judged here: " + s.net->unixPathsDetail());
  return kNext;
}

StepResult openAudit(SessionState& s) {
  if (auto st = openSessionAudit(s.audit, s.options, s.policy, s.session_id,
                                 policyRecord(s).sha256);
      !st) {
    say("audit: " + st.error().message());
    return kExitSupervisorError;
  }
  return kNext;
}

StepResult startWatchdog(SessionState& s) {
  if (!s.cgroup) return kNext;
  auto started = Watchdog::start(s.cgroup->path(), s.pids_v1 ? s.pids_v1->path() : std::string());
  if (!started) {
    say("watchdog: " + started.error().message());
    return kExitSupervisorError;
  }
  s.watchdog.emplace(std::move(*started));
  return kNext;
}

// The process tracker attaches before the first exec.
StepResult finishProcessTracking(SessionState& s) {
  if (!s.proc->finish(say)) return kExitSupervisorError;
  return kNext;
}

// The start event: the command, the effective policy, the backends and
// doctor's matrix from what this set-up proved (no probe of its own).
StepResult emitSessionStart(SessionState& s) {
  // No sink open: the event only takes its seq (1), as with one; what it
  // would carry (the host's feature matrix, ~0.2 ms) is not worked out.
  if (!s.audit->encodes()) {
    s.audit->emit(sessionStartEvent(s.options.command, {}, {}, {}, {}, {}));
    return kNext;
  }
  std::vector<std::string> backends;
  for (const char* b : {s.lsm ? "bpf-lsm" : "", s.filter ? "seccomp" : "",
                        s.ptrace ? "ptrace" : "",
                        s.ruleset ? "landlock" : "", s.mount_floor ? "mountns" : "",
                        s.net ? "cgroup-bpf" : "",
                        s.proc->tracker() ? "bpf-proc" : ""})
    if (*b) backends.emplace_back(b);
  const std::vector<std::string> lsm_hooks = s.lsm ? s.lsm->hooks() : std::vector<std::string>{};
  const HostCaps caps = sessionHostCaps({.host = s.host,
                                         .seccomp_filter = s.filter.has_value(),
                                         .ptrace = s.ptrace,
                                         .landlock_ruleset = bool(s.ruleset),
                                         .mount_floor = s.mount_floor.has_value(),
                                         .mount_floor_error = s.mount_floor_error,
                                         .cgroup_dir_fd = s.cgroup ? s.cgroup->dirFd() : -1,
                                         .cgroup_error = s.cgroup_error,
                                         .net_needed = s.needs_net,
                                         .net_filter = s.net.has_value(),
                                         .net_error = s.net_error,
                                         .proc_tracker = s.proc->tracker() != nullptr,
                                         .bpf_lsm = s.lsm != nullptr,
                                         .lsm_hooks = lsm_hooks,
                                         .kernel_audit = s.kernel_denials != nullptr,
                                         .kernel_audit_detail =
                                             s.kernel_denials ? s.kernel_denials->describe()
                                                              : s.kernel_audit_error});
  SessionState::PolicyRecord& record = policyRecord(s);
  AuditEvent start = sessionStartEvent(
      s.options.command, std::move(record.json), std::move(backends),
      nlohmann::ordered_json(featureRowsJson(featureMatrix(caps, s.policy))),
      selfProtectedPaths(s.policy), s.environment);
  start.session.policy_text = std::move(record.text);
  s.audit->emit(start);
  return kNext;
}

// Where the command has a mount namespace of its own (the write re-check's,
// the mount floor's), the files it execs sit on mounts with other ids than
// ours: the exec re-check's file identities look those up in its mount
// table too (tracer/bpf/exec_file_id.h). Without it a btrfs file's device
// would come from stat, which is not the superblock's there.
// The share ends with the session, which lets its namespace go.
Status shareMountTableOf(SessionState& s, pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  struct stat ours {}, its {};
  if (::stat("/proc/self/ns/mnt", &ours) != 0) return errnoError("stat /proc/self/ns/mnt");
  if (::stat((proc + "/ns/mnt").c_str(), &its) != 0) return errnoError("stat " + proc + "/ns/mnt");
  if (ours.st_ino == its.st_ino && ours.st_dev == its.st_dev) return {};
  UniqueFd mountinfo(::open((proc + "/mountinfo").c_str(), O_RDONLY | O_CLOEXEC));
  if (!mountinfo) return errnoError("open " + proc + "/mountinfo");
  s.mount_table.emplace(std::move(mountinfo));
  return {};
}

// Only once the child is cloned (it copied our fds, signal dispositions,
// umask): an ignored SIGPIPE would survive its execve. From here on the
// supervisor acts for the command and must not be mightier than it.
StepResult awaitChildSetUp(SessionState& s) {
  auto cannotStart = [&s](const Error& error) {
    say("cannot start " + s.options.command[0] + ": " + error.message());
    finishAudit(*s.audit, ExitStatus{kExitSupervisorError, 0, false});
    return kExitSupervisorError;
  };
  if (auto st = awaitSetUp(*s.launched); !st) return cannotStart(st.error());
  // The floor's root, when we run chrooted, has our root's name in the
  // command's namespace; every name we read of its objects starts with it.
  auto root = processRoot(s.launched->pid);
  if (!root) return cannotStart(root.error());
  s.process_root = std::move(*root);
  s.processes.setProcessRoot(s.process_root);
  if (auto shared = shareMountTableOf(s, s.launched->pid); !shared)
    return cannotStart(shared.error());
  // The handler's opens then walk the command's mounts, where the protected
  // names are bound: an fd it hands over never leads past a bind.
  if (s.write_recheck_plan) {
    auto ns_root = openProcessRoot(s.launched->pid);
    if (!ns_root) return cannotStart(ns_root.error());
    setTargetRoot(std::move(*ns_root));
    s.write_recheck_plan->process_root = s.process_root;
  }
  s.ruleset.reset();
  s.staging.reset();  // the child has pivoted out of it
  ::signal(SIGPIPE, SIG_IGN);
  lowerOwnCapabilities(s.keep_capabilities);
  s.command_umask = ::umask(0);  // emulated creates apply the target's umask themselves
  return kNext;
}

// What the handler needs of the session, on either backend.
NotifyOptions notifyOptionsFor(SessionState& s) {
  NotifyOptions notify_options;
  notify_options.audit_mode = s.auditOnly();
  notify_options.quiet = s.options.quiet;
  notify_options.audit_allows = s.policy.audit.level != policy::AuditLevel::Deny;
  notify_options.workspace = s.policy.workspace;
  notify_options.root_pid = s.launched->pid;
  if (s.options.daemon) notify_options.root_profile = s.options.daemon->profile;
  if (s.cgroup) notify_options.session_cgroup = s.cgroup_name;
  notify_options.process_root = s.process_root;
  notify_options.exec_recheck = s.proc->recheck();
  if (tracer::notifiesUmask(s.compiled.seccomp)) notify_options.watched_umask = s.command_umask;
  if (s.lsm) {  // the LSM switches profiles at exec, unseen here
    notify_options.profile_of = [&lsm = s.lsm](pid_t tgid) {
      auto profile = lsm->filter().taskProfile(tgid);
      return profile ? lsm->filter().profileAt(*profile) : std::string();
    };
    // Creates are decided in the kernel: held off below a directory the
    // handler moves (not in audit mode, which refuses nothing).
    if (!s.auditOnly())
      notify_options.hold_moving_directory =
          [&lsm = s.lsm](int dir_fd) -> Result<std::shared_ptr<void>> {
        auto mark = lsm->filter().markMoving(dir_fd);
        if (!mark) return mark.error();
        return std::shared_ptr<void>(
            std::make_shared<tracer::LsmFilter::MovingDirectory>(std::move(*mark)));
      };
  }
  if (s.profile_net) {
    notify_options.on_profile_switch = [&profile_net = s.profile_net](
                                           pid_t tgid, std::string_view from, std::string_view to) {
      return profile_net->onSwitch(tgid, from, to);
    };
  }
  return notify_options;
}

// The ptrace backend: the same handler, answering the seccomp stops of a
// tracing thread, which seizes the command before it may exec.
StepResult startTracer(SessionState& s) {
  s.launched->listener.reset();  // the filter returns RET_TRACE, never USER_NOTIF
  s.ptrace_answer.emplace();
  s.handler.emplace(s.engine, *s.ptrace_answer, *s.audit, notifyOptionsFor(s));
  auto started = TraceThread::start(*s.handler, *s.ptrace_answer, *s.audit, s.launched->pid,
                                    TraceOptions{.audit_mode = s.auditOnly(),
                                                 .quiet = s.options.quiet,
                                                 .process_root = s.process_root});
  if (!started) return failStarted(s, "ptrace: " + started.error().message());
  s.trace_thread = std::move(*started);
  return kNext;
}

// The user-notify listener and the thread that answers it. No notified
// syscall has been answered yet (each one waits for us), so the command has
// done only what the filter allows outright: failing closed here is still in
// time.
StepResult startNotify(SessionState& s) {
  if (s.ptrace) return startTracer(s);
  if (!s.launched->listener) return kNext;
  auto created = tracer::NotifyListener::create(std::move(s.launched->listener));
  if (!created) return failStarted(s, "seccomp listener: " + created.error().message());
  s.listener.emplace(std::move(*created));
  if (!tracer::notifyAddFdSendSupported(s.listener->fd()))
    return failStarted(s,
                       "cannot enforce the policy: seccomp user-notify: ADDFD with SEND "
                       "unsupported (kernel < 5.14?); the command was stopped before its first "
                       "decision");
  // Optional: a latency win where the kernel has it (off only to measure it, tools/bench).
  if (!tracer::testDisabled("sync-wakeup")) (void)s.listener->enableSyncWakeUp();
  s.listener_answer.emplace(*s.listener);
  s.handler.emplace(s.engine, *s.listener_answer, *s.audit, notifyOptionsFor(s));
  auto started = NotifyThread::start(*s.handler, s.listener->fd());
  if (!started) return failStarted(s, "notify thread: " + started.error().message());
  s.notify_thread = std::move(*started);
  return kNext;
}

// The exec daemon ends this command (session.h, FromDaemon::abort_fd): the
// whole tree goes at once; the loop then ends as for any exit, so the trail
// gets its end event.
void abortForDaemon(SessionState& s) {
  char why = 0;
  if (::read(s.options.daemon->abort_fd, &why, 1) != 1) why = 0;
  if (why == kAbortTimeout)
    say("timed out: the command was killed (supervise exec --timeout)");
  else if (why == kAbortDrain)
    say("the exec daemon is shutting down: the command was killed");
  else
    say("the client went away: the command was killed");
  if (s.cgroup && s.cgroup->kill()) return;
  ::kill(s.launched->pid, SIGKILL);  // no cgroup (unsafe fallback): the command at least
}

// Every event source registers itself on the loop.
StepResult hookEventSources(SessionState& s) {
  tracer::ProcTracker* tracker = s.proc->tracker();
  if (tracker) {
    s.proc_events.emplace(*s.audit,
                          ProcessEventsOptions{.audit_mode = s.auditOnly(),
                                               .quiet = s.options.quiet,
                                               .audit_execs = s.policy.audit.level !=
                                                              policy::AuditLevel::Deny,
                                               .process_root = s.process_root,
                                               .session_processes = &s.processes});
    s.proc_events->watch(s.supervision, *tracker);
  }
  if (s.net) {
    s.net_events.emplace(*s.net, *s.audit, s.processes, s.engine, s.auditOnly(),
                         s.options.quiet);
    // Execs first: a connect made after an exec must name the new image.
    s.net_events->watch(s.supervision, [&s, tracker] {
      if (s.proc_events) s.proc_events->drain(*tracker);
    });
  }
  if (s.dns) s.dns->watch(s.supervision);
  if (s.lsm) s.lsm->attach(s.supervision, *s.audit, s.processes);
  if (s.kernel_denials)
    s.kernel_denials->watch(s.supervision, *s.audit, s.processes, s.engine,
                            KernelDenialsOptions{.audit_mode = s.auditOnly(),
                                                 .quiet = s.options.quiet,
                                                 .workspace = s.policy.workspace,
                                                 .session_cgroup = s.cgroup ? s.cgroup_name : "",
                                                 .root_pid = s.launched->pid,
                                                 .was_in_session = [&s, tracker](pid_t pid) {
                                                   if (!s.proc_events) return false;
                                                   s.proc_events->drain(*tracker);
                                                   return s.proc_events->table().find(pid) !=
                                                          nullptr;
                                                 }});
  s.audit->watch(s.supervision, [](const Error& e) { say("audit: " + e.message()); });
  if (s.trace_thread)  // the tracer's wait reaps the command: it reports the exit
    s.supervision.watchChild(s.launched->pid, s.trace_thread->exitFd(),
                             [&t = *s.trace_thread] { return t.rootExit(); });
  else
    s.supervision.watchChild(s.launched->pid, s.launched->pidfd.get());
  s.supervision.watchSignals(s.sigfd.get());
  if (s.options.daemon && s.options.daemon->abort_fd >= 0)
    s.supervision.watchOnce(s.options.daemon->abort_fd, [&s] { abortForDaemon(s); });
  return kNext;
}

// supervise exec --profile: the command starts in a profile, as if an exec
// had switched it there (docs/serve.md): the handler's table (notifyOptionsFor),
// the audit cache, and the profile's network plan (its cgroup), all before
// the command runs its first instruction.
StepResult enterStartProfile(SessionState& s) {
  const std::string profile = s.options.daemon ? s.options.daemon->profile : "";
  if (profile.empty()) return kNext;
  // Under bpf-lsm the kernel holds a task's profile in task storage: set for
  // the stopped first process, its exec is judged (and may switch) from there.
  if (s.lsm) {
    const std::optional<uint32_t> index = s.lsm->filter().profileIndex(profile);
    if (!index) return failStarted(s, "cannot start in profile " + profile + ": not in bpf-lsm's tables");
    if (auto st = s.lsm->filter().setTaskProfile(s.launched->pidfd.get(), *index); !st)
      return failStarted(s, "cannot start in profile " + profile + ": " + st.error().message());
  }
  if (s.profile_net)
    if (auto st = s.profile_net->onSwitch(s.launched->pid, "", profile); !st)
      return failStarted(s, "cannot start in profile " + profile + ": " + st.error().message());
  s.processes.setProfile(s.launched->pid, profile);
  return kNext;
}

// A command done within this never pays for the walk (write_recheck.h).
constexpr std::chrono::milliseconds kWriteRecheckDelay{100};

StepResult letCommandGo(SessionState& s) {
  // Tests (the e2e and escape suites) bind before the command starts, so
  // that every case of theirs meets the kernel's re-check.
  const char* test_mode = std::getenv("SUPERVISE_TEST_WRITE_RECHECK");
  const bool before_start = test_mode && std::string_view(test_mode) == "before-start";
  if (s.write_recheck_plan && s.handler && s.launched->pidfd) {
    NotifyHandler* handler = &*s.handler;
    const bool read_write = s.write_recheck_plan->read_write;
    if (before_start) {
      if (bindProtectedNames(*s.write_recheck_plan, s.launched->pidfd.get()))
        handler->enableKernelRechecks(read_write);
    } else if (UniqueFd pidfd(::fcntl(s.launched->pidfd.get(), F_DUPFD_CLOEXEC, 0)); pidfd) {
      s.write_recheck = std::make_unique<WriteRecheck>(
          std::move(*s.write_recheck_plan), std::move(pidfd), kWriteRecheckDelay,
          [handler, read_write] { handler->enableKernelRechecks(read_write); });
    }
  }
  if (auto st = startCommand(*s.launched); !st)
    return failStarted(s, "cannot start " + s.options.command[0] + ": " + st.error().message());
  return kNext;
}

// Runs the loop until the command exits, then ends the session: whatever
// the tree left behind goes with it, and the exit status is the command's.
int superviseUntilExit(SessionState& s) {
  auto exited = s.supervision.run();
  if (exited) commandExited(*s.launched);
  restoreOwnCapabilities();

  // The command is gone: whatever it left behind goes with it, then nothing
  // is left to ask the notify thread anything.
  if (s.cgroup) (void)s.cgroup->kill();
  s.notify_thread.reset();
  s.trace_thread.reset();
  int code = kExitSupervisorError;
  ExitStatus status;
  if (exited) {
    if (exited->si_code == CLD_EXITED) {
      code = exited->si_status;
      status = ExitStatus{code, 0, false};
    } else {
      code = 128 + exited->si_status;
      status = ExitStatus{-1, exited->si_status, exited->si_code == CLD_DUMPED};
    }
  }
  // The tree is gone: the kernel's last denial records are read (kernel_denials.h).
  if (s.kernel_denials) s.kernel_denials->finish();
  // Decisions the kernel made (and enforced) but could not report, because
  // its ring buffer was full while the loop was behind: never silent. The
  // end event counts them too (`unrecorded`); process events are no decisions.
  const uint64_t net_lost = s.net ? s.net->droppedEvents() : 0;
  const uint64_t lsm_lost = s.lsm ? s.lsm->filter().droppedEvents() : 0;
  const uint64_t proc_lost = s.proc->tracker() ? s.proc->tracker()->droppedEvents() : 0;
  s.audit->countUnrecorded(net_lost + lsm_lost);
  for (const auto& [lost, what] : {std::pair{net_lost, "network decision"},
                                   std::pair{lsm_lost, "bpf-lsm decision"},
                                   std::pair{proc_lost, "process event"}})
    if (lost)
      say("audit: " + std::to_string(lost) + " " + what +
          " record(s) lost (kernel ring buffer full)");
  finishAudit(*s.audit, status);
  return code;
}

}  // namespace

Status openSessionAudit(std::optional<AuditLog>& audit, const SessionOptions& options,
                        const policy::Policy& policy, std::string session_id,
                        std::string policy_sha256) {
  SessionInfo info;
  info.session_id = std::move(session_id);
  info.host = hostName();
  info.policy_name = policy.name;
  info.policy_sha256 = std::move(policy_sha256);
  info.agent_version = SV_VERSION;
  info.boot_id = readBootId();
  info.redact = Redactor(policy.audit.redact);  // audit.redact: in every event and format
  if (options.daemon) {
    info.command_id = options.daemon->command_id;
    info.client_pid = options.daemon->client_pid;
    info.client_uid = options.daemon->client_uid;
  }
  AuditLogOptions audit_options;
  audit_options.format = policy.audit.format;  // audit.format / -o audit.format=ocsf|ecs
  audit_options.chain = policy.audit.chain;    // audit.chain: file sinks hash-chain their lines
  audit.emplace(info, audit_options);
  AuditSinkConfig sinks;
  sinks.paths = options.audit_files;
  sinks.fds = options.audit_fds;
  sinks.to_stdout = options.audit_stdout;
  sinks.policy_sinks = policy.audit.sinks;  // audit.sinks, --audit-syslog
  return audit->open(sinks);
}

namespace {

struct Step {
  const char* name;
  StepResult (*run)(SessionState&);
};

// Runs `steps` in order: nothing to go on, or the exit status of the first
// that stops. SUPERVISE_TIME_SETUP=1 prints each step's wall time on stderr
// (what a session's start costs: docs/performance.md).
StepResult runSteps(SessionState& s, std::initializer_list<Step> steps) {
  static const bool timed = std::getenv("SUPERVISE_TIME_SETUP") != nullptr;
  for (const Step& step : steps) {
    const auto began = std::chrono::steady_clock::now();
    const StepResult exit = step.run(s);
    if (timed)
      std::fprintf(stderr, "supervise: set-up %-21s %6lld us\n", step.name,
                   static_cast<long long>(std::chrono::duration_cast<std::chrono::microseconds>(
                                              std::chrono::steady_clock::now() - began)
                                              .count()));
    if (exit) return exit;
  }
  return kNext;
}

#define SV_STEP(f) Step{#f, f}

// SUPERVISE_TEST_TEARDOWN_PAUSE_MS: the tear-down after an early exit waits
// that long first, so that tests see what goes on once supervise has exited.
void pauseTearDownForTests() {
  if (const char* ms = std::getenv("SUPERVISE_TEST_TEARDOWN_PAUSE_MS"))
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(ms)));
}

// The exit status is known and the trail has its end: the exec daemon's
// client may have it before the session's tear-down (session.h, FromDaemon::ended).
int reportEnd(SessionState& s, int code) {
  if (s.options.daemon && s.options.daemon->ended) s.options.daemon->ended(code);
  return code;
}

}  // namespace

int runSession(const SessionOptions& options) {
  SessionState s(options);
  if (StepResult exit = runSteps(
          s, {SV_STEP(findCommand), SV_STEP(beginKernelDenials), SV_STEP(probeHost),
              SV_STEP(createCgroup), SV_STEP(chooseBackend), SV_STEP(prepareConfinement),
              SV_STEP(buildPolicyRecord), SV_STEP(startKernelDenials),
              SV_STEP(launchCommand), SV_STEP(loadNetworkFilter), SV_STEP(startDnsProxy),
              SV_STEP(failClosed), SV_STEP(openAudit), SV_STEP(startWatchdog),
              SV_STEP(finishProcessTracking), SV_STEP(emitSessionStart),
              SV_STEP(awaitChildSetUp), SV_STEP(startNotify), SV_STEP(hookEventSources),
              SV_STEP(enterStartProfile), SV_STEP(letCommandGo)}))
    return reportEnd(s, *exit);
  const int code = superviseUntilExit(s);
  if (s.options.daemon) return reportEnd(s, code);
  // The status and the trail are final: the caller has them now, and the
  // tear-down goes on in a child (exit_handoff.h), once our other threads
  // are done (the command's parent thread, the write re-check's).
  s.write_recheck.reset();
  if (s.launched) endCommandParent(*s.launched);
  if (!tracer::testDisabled("early-exit") && exitBeforeTearDown(code)) {
    pauseTearDownForTests();
    return code;
  }
  // Where it can't: the command's mount namespace is torn down by a child,
  // not on the way to our exit status.
  if (s.mount_table) {
    const int namespace_fd = s.mount_table->fd();
    handOffLastReferences({&namespace_fd, 1});
  }
  return reportEnd(s, code);
}

// ---- ready sessions (the exec daemon) ----

PreparedSession::PreparedSession(const SessionOptions& options) : options_(options) {}
PreparedSession::~PreparedSession() = default;

namespace {

// Where a path stands now: its (device, inode), or none.
std::optional<std::pair<dev_t, ino_t>> identityOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return std::pair{st.st_dev, st.st_ino};
}

}  // namespace

// What a command changes nothing in: the host's probe, the cgroup, the
// backend, the Landlock ruleset and seccomp program, kernel audit, the
// network filter and DNS proxy, the watchdog, process tracking. Whatever
// these steps say on stderr is kept for the command's stderr (run()).
void PreparedSession::prepare() {
  state_ = std::make_unique<SessionState>(options_);
  SessionState& s = *state_;
  said_ = UniqueFd(::memfd_create("supervise-ready-session", MFD_CLOEXEC));
  UniqueFd stderr_copy(::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3));
  if (said_ && stderr_copy) ::dup2(said_.get(), STDERR_FILENO);
  failed_ = runSteps(s, {SV_STEP(probeHost)});
  // Without Landlock the floor is a mount namespace, planned for the
  // command's cwd from a walk of that moment: run() sets the session up
  // from scratch then, so nothing more is prepared.
  if (!failed_ && s.host.landlock_abi == 0 && s.compiled.landlock.paths) {
    unpreparable_ = "the floor is a mount namespace, planned for the command's cwd";
    if (stderr_copy) ::dup2(stderr_copy.get(), STDERR_FILENO);
    return;
  }
  if (!failed_) failed_ = runSteps(s, {SV_STEP(createCgroup), SV_STEP(chooseBackend)});
  // Landlock binds each rule to the inode its path names when the ruleset
  // is built (next): run() checks that every path still names the same one.
  for (const auto& rule : s.compiled.landlock.rules)
    landlock_paths_.emplace_back(rule.path, identityOf(rule.path));
  if (!failed_)
    failed_ = runSteps(s, {SV_STEP(prepareConfinement), SV_STEP(startKernelDenials),
                           SV_STEP(loadNetworkFilter), SV_STEP(startDnsProxy),
                           SV_STEP(startWatchdog), SV_STEP(finishProcessTracking)});
  if (stderr_copy) ::dup2(stderr_copy.get(), STDERR_FILENO);
}

std::string PreparedSession::staleBecause() const {
  if (!state_) return "not prepared";
  if (!unpreparable_.empty()) return unpreparable_;
  // A mount floor planned anyway (a ruleset that failed to build under the
  // unsafe fallback): its walk and cwd are the daemon's, never the command's.
  if (state_->mount_floor) return "the floor is a mount namespace, planned for another cwd";
  for (const auto& [path, identity] : landlock_paths_)
    if (identityOf(path) != identity) return path + " changed since it was prepared";
  return {};
}

int PreparedSession::run() {
  if (const std::string stale = staleBecause(); !stale.empty()) {
    state_.reset();  // torn down: its cgroup, filters and watchdog go
    return runSession(options_);
  }
  SessionState& s = *state_;
  if (said_) {  // what the set-up said, now on the command's stderr
    char buf[4096];
    ssize_t n;
    for (off_t off = 0; (n = ::pread(said_.get(), buf, sizeof buf, off)) > 0; off += n)
      (void)!::write(STDERR_FILENO, buf, size_t(n));
    said_.reset();
  }
  if (failed_) return reportEnd(s, *failed_);
  if (StepResult exit = runSteps(
          s, {SV_STEP(findCommand), SV_STEP(failClosed), SV_STEP(launchCommand),
              SV_STEP(openAudit), SV_STEP(emitSessionStart), SV_STEP(awaitChildSetUp),
              SV_STEP(startNotify), SV_STEP(hookEventSources), SV_STEP(enterStartProfile),
              SV_STEP(letCommandGo)}))
    return reportEnd(s, *exit);
  return reportEnd(s, superviseUntilExit(s));
}

}  // namespace sv::supervisor
