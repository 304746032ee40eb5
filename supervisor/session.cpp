// Session: probe, confine, launch, supervise, report; see session.h.
#include "supervisor/session.h"

#include <linux/capability.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <optional>

#include "policy/compile.h"
#include "policy/engine.h"
#include "supervisor/audit/policy_json.h"
#include "supervisor/audit_log.h"
#include "supervisor/doctor.h"
#include "supervisor/launcher.h"
#include "supervisor/lsm_backend.h"
#include "supervisor/dns_allow.h"
#include "supervisor/net_events.h"
#include "supervisor/notify_handler.h"
#include "supervisor/notify_thread.h"
#include "supervisor/process_events.h"
#include "supervisor/profile_network.h"
#include "supervisor/supervision.h"
#include "supervisor/watchdog.h"
#include "tracer/capabilities.h"
#include "tracer/cgroup.h"
#include "tracer/landlock.h"
#include "tracer/net_filter.h"
#include "tracer/notify.h"
#include "tracer/probe.h"
#include "tracer/seccomp_programs.h"

extern char** environ;

namespace sv::supervisor {
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
                                      const tracer::HostFeatures& host, bool cgroup_ok,
                                      const std::string& cgroup_detail, bool net_ok,
                                      const std::string& net_detail) {
  std::vector<Requirement> out;
  out.push_back({"seccomp user-notify", host.seccomp_notify && host.notify_addfd,
                 probeNote(host, "seccomp-notify: ", "unavailable")});
  out.push_back({"Landlock", host.landlock_abi > 0, probeNote(host, "landlock: ", "unavailable")});
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

}  // namespace

int runSession(const SessionOptions& options) {
  const policy::Policy& policy = *options.policy;
  const bool unsafe = policy.fallback == policy::Fallback::UnsafeHostProcess;
  if (options.command.empty()) {
    say("no command given (usage: supervise [options] -- command [args...])");
    return kExitSupervisorError;
  }

  // The command must exist before anything is set up: 127/126 like a shell.
  auto exe = findExecutable(options.command[0], envOr("PATH", "/usr/local/bin:/usr/bin:/bin"));
  if (!exe) {
    const int err = exe.error().code;
    say(options.command[0] + ": " + (err == ENOENT ? "command not found" : std::strerror(err)));
    return err == ENOENT ? kExitNotFound : kExitCannotRun;
  }

  // Fail-closed sessions prove the host by setting themselves up (see
  // probeHostForSession); the unsafe fallback must know up front what to skip.
  const tracer::HostFeatures host = unsafe ? tracer::probeHost() : tracer::probeHostForSession();
  policy::CompiledPolicy compiled = policy::compile(policy);  // seccomp plan: see bpf-lsm below
  const policy::Engine engine(options.policy);

  // Session cgroup first: the network filter attaches to it.
  std::optional<tracer::SessionCgroup> cgroup;
  std::string cgroup_error;
  const std::string session_id = newSessionId();
  // The cgroup's name also names the session's v1 pids cgroup and scopes /proc.
  const std::string cgroup_name = "supervise-" + session_id.substr(0, 12);
  if (host.cgroup_writable) {
    auto created = tracer::SessionCgroup::create(cgroup_name);
    if (created)
      cgroup.emplace(std::move(*created));
    else
      cgroup_error = created.error().message();
  }
  // A fork bomb must not take the host down: bound the tree's pids, in the
  // session cgroup where it has the pids controller, else in a v1 pids
  // cgroup of its own (hybrid hosts). Neither: the tree is unbounded, which
  // `doctor` reports.
  std::optional<tracer::PidsCgroupV1> pids_v1;
  if (cgroup && !cgroup->setPidsMax(kSessionPidsMax)) {
    auto created = tracer::PidsCgroupV1::create(cgroup_name, kSessionPidsMax);
    if (created) pids_v1.emplace(std::move(*created));
  }
  // bpf-lsm decides files, exec and connect in the kernel where it runs;
  // user-notify then keeps only what its hooks cannot see (lsm_backend.h).
  std::unique_ptr<LsmBackend> lsm;
  if (auto chosen = LsmBackend::select(
          parseBackendChoice(options.backend).value_or(BackendChoice::Auto), options.policy,
          compiled, cgroup ? cgroup->path() : std::string(),
          LsmBackendOptions::forSession(policy, options.quiet));
      chosen) {
    lsm = std::move(*chosen);
  } else {
    say("cannot enforce the policy: " + chosen.error().message() +
        " (`supervise doctor` shows what this host can enforce)");
    return kExitSupervisorError;
  }
  if (lsm) {
    compiled.seccomp = lsm->seccompPlan(compiled.seccomp);
    compiled.landlock = LsmBackend::landlockPlan(compiled.landlock);
  }
  // Process tracking and the exec re-check load on a thread meanwhile
  // (process_events.h).
  ProcTrackerLoad proc(policy, compiled, cgroup ? cgroup->dirFd() : -1);

  UniqueFd ruleset;
  if (host.landlock_abi > 0) {
    auto built = tracer::buildLandlockRuleset(compiled.landlock, host.landlock_abi);
    if (!built) {
      say("landlock: " + built.error().message());
      if (!unsafe) return kExitSupervisorError;
    } else {
      ruleset = std::move(*built);
    }
  }
  std::optional<std::vector<sock_filter>> filter;
  if (host.seccomp_notify) filter = tracer::prebuiltSeccompFilter(compiled.seccomp);
  auto keep = tracer::capabilityMask(policy.keep_capabilities);
  if (!keep) {
    say("capabilities: " + keep.error().message());
    return kExitPolicyError;
  }

  // Signals we forward arrive on a signalfd; the command starts with our old mask.
  sigset_t forwarded, old_mask;
  sigemptyset(&forwarded);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&forwarded, sig);
  ::sigprocmask(SIG_BLOCK, &forwarded, &old_mask);
  UniqueFd sigfd(::signalfd(-1, &forwarded, SFD_NONBLOCK | SFD_CLOEXEC));

  LaunchSpec spec;
  spec.exe = *exe;
  spec.argv = options.command;
  for (char** e = environ; *e; ++e) spec.env.emplace_back(*e);
  spec.cgroup_fd = cgroup ? cgroup->dirFd() : -1;
  spec.pids_cgroup_tasks_fd = pids_v1 ? pids_v1->tasksFd() : -1;
  spec.landlock_ruleset_fd = ruleset ? ruleset.get() : -1;
  spec.seccomp_filter = filter ? &*filter : nullptr;
  spec.keep_capabilities = *keep;
  spec.child_sigmask = old_mask;

  // The child sets itself up (launcher.h) while the network, audit and
  // watchdog are set up here; it execs only on startCommand() below.
  auto launched = launch(spec);
  if (!launched) {
    say("cannot start " + options.command[0] + ": " + launched.error().message());
    return kExitSupervisorError;
  }

  // Each profile gets its own plan in the kernel (profile_network.h): a
  // process moved into its profile's cgroup at a notified exec is judged by
  // it. Under bpf-lsm judging connects, execs are not notified; the LSM
  // applies each task's profile itself, and the cgroup programs, a second
  // line, get the floor of every plan (what no profile allows).
  const bool lsm_net = lsm && lsm->decidesNetwork();
  std::optional<policy::NetworkPlan> floor;
  if (lsm_net) floor = policy::networkFloor(compiled);
  const policy::NetworkPlan& base_net = floor ? *floor : compiled.network;
  const std::map<std::string, policy::NetworkPlan> no_profile_plans;
  const auto& profile_plans = lsm_net ? no_profile_plans : compiled.profile_network;
  const bool needs_net = policy.network.mode.value_or(NetworkMode::All) != NetworkMode::All ||
                         ProfileNetwork::anyOwnRules(policy);
  std::optional<tracer::NetFilter> net;
  std::optional<ProfileNetwork> profile_net;
  std::string net_error = "unavailable (needs a session cgroup)";
  if (needs_net && cgroup && !tracer::testDisabled("bpf")) {
    tracer::NetFilterOptions net_options;
    // Under bpf-lsm the LSM decides (and reports) connects first; the cgroup
    // programs stay as a second line and report only what they alone refuse.
    net_options.deny_events_only = policy.audit.level == policy::AuditLevel::Deny || lsm_net;
    // audit.level deny still records every connect (allowed ones too).
    net_options.report_connects = !lsm_net;
    net_options.audit_only = policy.mode == policy::Mode::Audit;  // would-deny, never block
    addDnsProxyOptions(base_net, profile_plans, net_options);  // dns_allow.h
    net_options.unix_paths = !tracer::testDisabled("bpf-unix");  // as on a kernel < 6.7
    auto loaded =
        tracer::NetFilter::load(base_net, profile_plans, cgroup->dirFd(), net_options);
    if (loaded)
      net.emplace(std::move(*loaded));
    else
      net_error = loaded.error().message();
    if (net) {
      auto bound = ProfileNetwork::bind(*cgroup, *net, profile_plans);
      // A process moved into a profile's cgroup must stay judged by the BPF LSM.
      Status judged;
      if (bound && lsm)
        for (uint64_t id : bound->cgroupIds())
          if (judged.ok()) judged = lsm->filter().addSession(id);
      if (bound && judged.ok()) {
        profile_net.emplace(std::move(*bound));
      } else {
        net.reset();
        net_error = "per-profile network rules: " +
                    (bound ? judged.error() : bound.error()).message();
      }
    }
  } else if (tracer::testDisabled("bpf")) {
    net_error = tracer::kDisabledByTest;
  }
  // Domain entries, the base's and every profile's (each learned address goes
  // to the plans naming its host): the DNS proxy stands in for the resolvers
  // before the tree runs.
  std::unique_ptr<DnsAllow> dns;
  if (net && anyHosts(base_net, profile_plans)) {
    auto started = DnsAllow::start(*net, dnsAllowOptionsFor(base_net, profile_plans));
    if (started) {
      dns = std::move(*started);
    } else {
      net.reset();
      net_error = "domain entries: " + started.error().message();
    }
  }

  // Fail closed: every mechanism the policy relies on, or nothing runs.
  bool missing = false;
  for (const auto& r : requirements(policy, host, cgroup.has_value(), cgroup_error, net.has_value(),
                                    net_error)) {
    if (r.available) continue;
    missing = true;
    say(std::string(unsafe ? "WARNING: running without " : "cannot enforce the policy: ") +
        r.feature + ": " + r.detail);
  }
  if (missing && !unsafe) {
    say("refusing to run the command unconfined; `supervise doctor` shows what this host "
        "can enforce (fallback: unsafe-host-process would run it anyway)");
    return kExitSupervisorError;
  }
  if (missing) say("WARNING: fallback unsafe-host-process: the command runs partly unconfined");
  if (dns && dns->resolverCount() == 0)
    say("note: no nameserver in /etc/resolv.conf: host names in network.allow allow nothing");
  if (net && !net->unixPathsEnforced())
    say("note: pathname unix sockets are not judged here: " + net->unixPathsDetail());

  SessionInfo info;
  info.session_id = session_id;
  info.host = hostName();
  info.policy_name = policy.name;
  info.policy_sha256 = policyDigest(policy);
  info.agent_version = SV_VERSION;
  info.boot_id = readBootId();
  info.redact = Redactor(policy.audit.redact);  // audit.redact: in every event and format
  AuditLogOptions audit_options;
  audit_options.format = policy.audit.format;  // audit.format / -o audit.format=ocsf|ecs
  AuditLog audit(info, audit_options);
  AuditSinkConfig sinks;
  sinks.paths = options.audit_files;
  sinks.fds = options.audit_fds;
  sinks.to_stdout = options.audit_stdout;
  sinks.policy_sinks = policy.audit.sinks;  // audit.sinks, --audit-syslog
  if (auto st = audit.open(sinks); !st) {
    say("audit: " + st.error().message());
    return kExitSupervisorError;
  }

  std::optional<Watchdog> watchdog;
  if (cgroup) {
    auto started = Watchdog::start(cgroup->path(), pids_v1 ? pids_v1->path() : std::string());
    if (!started) {
      say("watchdog: " + started.error().message());
      return kExitSupervisorError;
    }
    watchdog.emplace(std::move(*started));
  }

  if (!proc.finish(say)) return kExitSupervisorError;  // attached before the first exec
  std::vector<std::string> backends;
  for (const char* b : {lsm ? "bpf-lsm" : "", filter ? "seccomp" : "", ruleset ? "landlock" : "",
                        net ? "cgroup-bpf" : "",
                        proc.tracker() ? "bpf-proc" : ""})
    if (*b) backends.emplace_back(b);
  // doctor's matrix from what this set-up proved: no probe of its own.
  const HostCaps caps = sessionHostCaps({.host = host,
                                         .seccomp_filter = filter.has_value(),
                                         .landlock_ruleset = bool(ruleset),
                                         .cgroup_dir_fd = cgroup ? cgroup->dirFd() : -1,
                                         .cgroup_error = cgroup_error,
                                         .net_needed = needs_net,
                                         .net_filter = net.has_value(),
                                         .net_error = net_error,
                                         .proc_tracker = proc.tracker() != nullptr,
                                         .bpf_lsm = lsm != nullptr});
  AuditEvent start =
      sessionStartEvent(options.command, effectivePolicyJson(policy), std::move(backends),
                        nlohmann::ordered_json(featureRowsJson(featureMatrix(caps, policy))));
  audit.emit(start);

  if (auto st = awaitSetUp(*launched); !st) {
    say("cannot start " + options.command[0] + ": " + st.error().message());
    finishAudit(audit, ExitStatus{kExitSupervisorError, 0, false});
    return kExitSupervisorError;
  }
  // Only now that the child is cloned (it copied our fds, signal
  // dispositions, umask): an ignored SIGPIPE would survive its execve.
  ruleset.reset();
  ::signal(SIGPIPE, SIG_IGN);
  lowerOwnCapabilities(*keep);
  ::umask(0);  // emulated creates apply the target's umask themselves

  Supervision supervision;
  ProcessCache processes;
  std::optional<tracer::NotifyListener> listener;
  std::optional<NotifyHandler> handler;
  std::unique_ptr<NotifyThread> notify_thread;  // declared after handler: stops first
  if (launched->listener) {
    auto created = tracer::NotifyListener::create(std::move(launched->listener));
    if (!created) {
      say("seccomp listener: " + created.error().message());
      if (cgroup) (void)cgroup->kill();
      return kExitSupervisorError;
    }
    listener.emplace(std::move(*created));
    // No notified syscall has been answered yet (each one waits for us), so
    // the command has done only what the filter allows outright: failing
    // closed here is still in time.
    if (!tracer::notifyAddFdSendSupported(listener->fd())) {
      say("cannot enforce the policy: seccomp user-notify: ADDFD with SEND unsupported "
          "(kernel < 5.14?); the command was stopped before its first decision");
      if (cgroup) (void)cgroup->kill();
      finishAudit(audit, ExitStatus{kExitSupervisorError, 0, false});
      return kExitSupervisorError;
    }
    // Optional: a latency win where the kernel has it (off only to measure it, tools/bench).
    if (!tracer::testDisabled("sync-wakeup")) (void)listener->enableSyncWakeUp();
    NotifyOptions notify_options;
    notify_options.audit_mode = policy.mode == policy::Mode::Audit;
    notify_options.quiet = options.quiet;
    notify_options.audit_allows = policy.audit.level != policy::AuditLevel::Deny;
    notify_options.workspace = policy.workspace;
    notify_options.root_pid = launched->pid;
    if (cgroup) notify_options.session_cgroup = cgroup_name;
    notify_options.exec_recheck = proc.recheck();
    if (lsm) {  // the LSM switches profiles at exec, unseen here
      notify_options.profile_of = [&lsm](pid_t tgid) {
        auto profile = lsm->filter().taskProfile(tgid);
        return profile ? lsm->filter().profileAt(*profile) : std::string();
      };
    }
    if (profile_net) {
      notify_options.on_profile_switch = [&profile_net](pid_t tgid, std::string_view from,
                                                        std::string_view to) {
        return profile_net->onSwitch(tgid, from, to);
      };
    }
    handler.emplace(engine, *listener, audit, notify_options);
    auto started = NotifyThread::start(*handler, listener->fd());
    if (!started) {
      say("notify thread: " + started.error().message());
      if (cgroup) (void)cgroup->kill();
      finishAudit(audit, ExitStatus{kExitSupervisorError, 0, false});
      return kExitSupervisorError;
    }
    notify_thread = std::move(*started);
  }
  std::optional<ProcessEvents> proc_events;
  if (proc.tracker()) {
    proc_events.emplace(audit, ProcessEventsOptions{.audit_mode = policy.mode == policy::Mode::Audit,
                                                    .quiet = options.quiet,
                                                    .audit_execs = policy.audit.level !=
                                                                   policy::AuditLevel::Deny,
                                                    .session_processes = &processes});
    proc_events->watch(supervision, *proc.tracker());
  }
  std::optional<NetEventAuditor> net_events;
  if (net) {
    net_events.emplace(*net, audit, processes, engine, policy.mode == policy::Mode::Audit,
                       options.quiet);
    // Execs first: a connect made after an exec must name the new image.
    auto drain = [&] {
      if (proc_events) proc_events->drain(*proc.tracker());
      net_events->drain();
    };
    supervision.watchReadable(net->eventFd(), drain);
    supervision.atStop(drain);
  }
  if (dns) dns->watch(supervision);
  if (lsm) lsm->attach(supervision, audit, processes);
  supervision.addTimer(50, [&] { audit.flush(); });
  supervision.watchReadable(audit.wakeFd(), [&] { audit.flush(); });
  // SIGHUP sent to supervise reopens the audit files (logrotate) and is not
  // relayed: a terminal hang-up reaches the command through its process group.
  supervision.interceptSignal(SIGHUP, [&] {
    if (auto st = audit.reopen(); !st) say("audit: " + st.error().message());
  });
  supervision.watchChild(launched->pid, launched->pidfd.get());
  supervision.watchSignals(sigfd.get());

  if (auto st = startCommand(*launched); !st) {
    say("cannot start " + options.command[0] + ": " + st.error().message());
    if (cgroup) (void)cgroup->kill();
    finishAudit(audit, ExitStatus{kExitSupervisorError, 0, false});
    return kExitSupervisorError;
  }
  auto exited = supervision.run();
  if (exited) commandExited(*launched);
  restoreOwnCapabilities();

  // The command is gone: whatever it left behind goes with it, then nothing
  // is left to ask the notify thread anything.
  if (cgroup) (void)cgroup->kill();
  notify_thread.reset();
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
  // Decisions the kernel made (and enforced) but could not report, because
  // its ring buffer was full while the loop was behind: never silent.
  if (const uint64_t lost = net ? net->droppedEvents() : 0)
    say("audit: " + std::to_string(lost) + " network decision record(s) lost (kernel ring buffer full)");
  if (const uint64_t lost = proc.tracker() ? proc.tracker()->droppedEvents() : 0)
    say("audit: " + std::to_string(lost) + " process event record(s) lost (kernel ring buffer full)");
  finishAudit(audit, status);
  return code;
}

}  // namespace sv::supervisor
