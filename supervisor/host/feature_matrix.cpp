// The feature matrix (see feature_matrix.h).
#include "supervisor/host/feature_matrix.h"

#include <algorithm>

#include "tracer/bpf/lsm_filter.h"

namespace sv::supervisor {
namespace {

using policy::NetworkMode;

bool anyDenyGlobs(const policy::FilesystemRules &fs) {
  return !fs.deny_read.empty() || !fs.deny_write.empty();
}
bool anyExecRules(const policy::ExecRules &e) {
  return !e.allow.empty() || !e.deny.empty() || !e.switches.empty();
}

std::string why(const HostCaps &c, const std::string &key, const std::string &what) {
  auto it = c.why.find(key);
  return what + ": " + (it == c.why.end() || it->second.empty() ? "unavailable" : it->second);
}

}  // namespace

std::vector<FeatureRow> featureMatrix(const HostCaps &c, const policy::Policy &p) {
  const bool user_notify = c.seccomp_notify && c.notify_addfd;
  // The syscalls the policy must see stop in user space: through user-notify,
  // or, where that is missing, at the ptrace backend's seccomp stops.
  const bool ptrace = c.ptrace_backend || (!user_notify && c.seccomp_trace);
  const bool notify = ptrace ? c.seccomp_trace : user_notify;
  const std::string med = ptrace ? "ptrace" : "seccomp-notify";
  const bool landlock = c.landlock_abi > 0;
  // The floor under raced decisions: Landlock, else a private mount namespace.
  const bool floor = landlock || c.mount_floor;
  const std::string floor_name = landlock ? "Landlock" : "the mount-namespace floor";
  const std::string floor_why =
      why(c, "landlock", "Landlock") + "; mount namespace: " + why(c, "mountns", "mount namespace");
  // The network filter reports through a ring buffer: it can't load without
  // one.
  const bool net_bpf = c.cgroup_writable && c.cgroup_sock_addr && c.bpf_ringbuf;
  // `--backend auto` (the default) takes bpf-lsm where the BPF LSM is active
  // and its programs load (lsm_backend.h); the rows below then name it.
  const bool lsm = c.bpf_lsm_loadable && c.bpf_lsm_active;
  // Even then user space decides part of the file rules, on every kernel:
  // lsmSeccompPlan (session/lsm_backend.h) keeps renames notified
  // (path_rename sees the two names, not the tree a directory move renames),
  // and links, utimes and xattr calls (their hooks see a dentry, not its
  // path). Where a path_* hook cannot load (6.1 refuses bpf_d_path in them)
  // it keeps every write open and path change too. So file roots and deny
  // globs read "bpf-lsm + seccomp-notify" under bpf-lsm; the detail says
  // which calls go where.
  const std::string lsm_med = "bpf-lsm + " + med;
  const std::string lsm_notified = "renames, links, utimes and xattr calls decided in user space";
  const std::string lsm_no_paths =
      "write opens and path changes (creates, unlinks, mkdir, renames, links, truncates, "
      "chmod/chown) decided in user space, because " +
      why(c, "bpf_lsm_path_hooks", "path_* hooks");

  bool deny_globs = anyDenyGlobs(p.filesystem), exec_rules = anyExecRules(p.exec);
  for (const auto &[name, prof] : p.profiles) {
    deny_globs |= anyDenyGlobs(prof.filesystem);
    exec_rules |= anyExecRules(prof.exec);
  }
  const NetworkMode mode = p.network.mode.value_or(NetworkMode::All);

  std::vector<FeatureRow> rows;
  auto row = [&](std::string id, std::string label, bool used, bool ok, std::string backend,
                 std::string good, std::string bad) {
    rows.push_back({std::move(id), std::move(label), used, ok, ok ? std::move(backend) : "",
                    ok ? std::move(good) : std::move(bad)});
  };
  const std::string lsm_detail =
      "files, exec and connect decided by BPF LSM programs in the kernel (if every hook's "
      "program loads; else host); user-notify keeps renames, links, utimes and xattr calls" +
      (c.bpf_lsm_path_hooks
           ? std::string()
           : ", and write opens and path changes: " + why(c, "bpf_lsm_path_hooks", "path_* hooks"));
  rows.push_back({"backend", "backend (--backend auto)", true, true,
                  lsm ? "bpf-lsm" : ptrace ? "ptrace" : "host",
                  lsm ? lsm_detail
                  : ptrace
                      ? floor_name + " + seccomp stops answered by a ptrace tracer + cgroup-bpf" +
                            (c.ptrace_backend ? std::string(" (--backend ptrace)")
                                              : ", because " + why(c, "seccomp_notify",
                                                                   "seccomp user-notify"))
                      : floor_name + " + seccomp user-notify + cgroup-bpf, because " +
                            why(c, "bpf_lsm", "bpf-lsm")});
  // The session refuses to start without these, whatever the policy says.
  row("process_tree", "process tree containment", true, c.cgroup_writable, "cgroup",
      std::string(c.cgroup_kill ? "session cgroup, killed with cgroup.kill"
                                : "session cgroup, killed pid by pid (no cgroup.kill)") +
          (c.cgroup2_note.empty() ? "" : "; " + c.cgroup2_note),
      why(c, "cgroup", "session cgroup"));
  if (ptrace)
    row("syscall_mediation", "syscall mediation", true, notify, "ptrace",
        "write opens and execs decided at seccomp stops (PTRACE_EVENT_SECCOMP); an allowed "
        "open runs on the decided path from a read-only scratch page, an exec is checked "
        "again on the binary loaded",
        why(c, "ptrace", "seccomp with ptrace"));
  else
    row("syscall_mediation", "syscall mediation", true, notify, "seccomp-notify",
        "write opens and execs decided in user space, fds injected with ADDFD",
        why(c, "seccomp_notify", "seccomp user-notify with ADDFD"));
  if (lsm) {
    // What bpf-lsm decides in the kernel with no round trip, and (lsm_med)
    // what user-notify keeps of the file rules.
    const std::string no_notify = why(c, "seccomp_notify", "seccomp user-notify");
    row("file_roots", "file roots", true, notify, lsm_med,
        c.bpf_lsm_path_hooks
            ? "read/write roots decided per open and path change by BPF LSM hooks; " + lsm_notified
            : "reads decided per open by BPF LSM hooks; " + lsm_no_paths,
        no_notify);
    const std::string globs =
        "globs matched in the kernel against compiled tables, later files included, per ";
    row("deny_globs", "deny globs", deny_globs, notify, lsm_med,
        c.bpf_lsm_path_hooks ? globs + "open and path change; " + lsm_notified
                             : globs + "read open; " + lsm_no_paths,
        no_notify);
    row("exec_rules", "exec rules", exec_rules, true, "bpf-lsm",
        "bprm_check_security decides the final binary; mmap_file the program the "
        "loader runs (ld.so as a command)", "");
    row("profiles", "profiles", !p.profiles.empty(), true, "bpf-lsm",
        "profile id in task storage, switched on exec, inherited on fork", "");
  } else {
    row("file_roots", "file roots", true, floor, landlock ? "landlock" : "mountns",
        landlock ? "read/write roots in the kernel (ABI " + std::to_string(c.landlock_abi) + ")"
                 : "read/write roots as a private mount namespace (" +
                       why(c, "landlock", "Landlock") +
                       "): the roots bound with their rights, protected names that exist "
                       "bound read-only, the rest absent",
        floor_why);
    row("deny_globs", "deny globs", deny_globs, notify && floor, med,
        "globs inside allowed roots decided per open; " + floor_name + " is the floor",
        !notify ? why(c, "seccomp_notify", "seccomp user-notify") : floor_why);
    row("exec_rules", "exec rules", exec_rules, notify && floor, med,
        "execve/execveat decided in user space; " +
            std::string(landlock ? "Landlock EXECUTE on the roots" : "noexec on the roots without exec"),
        !notify ? why(c, "seccomp_notify", "seccomp user-notify") : floor_why);
    row("profiles", "profiles", !p.profiles.empty(), notify, med,
        "profile switched on exec, tracked per process by the supervisor",
        why(c, "seccomp_notify", "seccomp user-notify"));
  }
  const std::string net_bad = !c.cgroup_writable ? why(c, "cgroup", "session cgroup")
                              : !c.cgroup_sock_addr
                                  ? why(c, "cgroup_sock_addr", "cgroup socket hooks")
                                  : why(c, "ringbuf", "BPF ring buffer");
  row("network.none", "network: none", mode == NetworkMode::None, net_bpf, "cgroup-bpf",
      "every socket connect/sendmsg refused in the kernel", net_bad);
  row("network.localhost", "network: localhost", mode == NetworkMode::Localhost, net_bpf,
      "cgroup-bpf", "loopback only, decided in the kernel", net_bad);
  row("network.allowlist", "network: allowlist", mode == NetworkMode::Allowlist, net_bpf,
      "cgroup-bpf", "LPM trie of CIDR:port, domains resolved at start", net_bad);
  rows.push_back({"network.all", "network: all", mode == NetworkMode::All, true, "none needed",
                  "no network filter is loaded"});
  const bool net_events = mode == NetworkMode::All || c.bpf_ringbuf;
  // Under bpf-lsm the LSM programs report their decisions through their
  // ring buffer; what user space still decides comes from the notify path.
  row("audit", "audit events", true, notify && net_events,
      (lsm ? lsm_med : med) + (mode == NetworkMode::All ? "" : " + cgroup-bpf"),
      std::string(p.mode == policy::Mode::Audit ? "mode audit: would-deny recorded, nothing "
                                                  "enforced; "
                                                : "") +
          (lsm ? "file/exec decisions from the BPF LSM ring buffer, and from the notify path "
                 "for the calls user space decides"
               : "file/exec decisions from the notify path") +
          (mode == NetworkMode::All ? "" : ", network decisions from the BPF ring buffer"),
      !notify ? why(c, "seccomp_notify", "seccomp user-notify")
              : why(c, "ringbuf", "BPF ring buffer"));
  // The kernel's own denials: recorded as events where kernel audit can be
  // read, else said here (and in the session-start event). Not a condition to
  // run (used = false): enforcement does not depend on it.
  const std::string audit_why = why(c, "kernel_audit", "kernel audit");
  const std::string audit_how =
      "kernel audit records via the read-only multicast group" +
      (c.kernel_audit_detail.empty() ? std::string() : " (" + c.kernel_audit_detail + ")");
  row("audit.landlock_denials", "kernel denials: Landlock", false,
      c.kernel_audit && c.landlock_abi >= 7, "kernel-audit", audit_how,
      !c.kernel_audit ? "unrecorded: " + audit_why
      : c.landlock_abi == 0
          ? "unrecorded: no Landlock"
          : "unrecorded: Landlock ABI " + std::to_string(c.landlock_abi) +
                " writes no audit records (ABI 7, Linux 6.15)");
  row("audit.seccomp_denials", "kernel denials: seccomp", false,
      c.kernel_audit && (c.seccomp_notify || c.ptrace_backend), "kernel-audit", audit_how,
      !c.kernel_audit ? "unrecorded: " + audit_why : "unrecorded: no seccomp filter");
  return rows;
}

void setCgroup2(HostCaps &c, const tracer::HostFeatures &host, bool probed_privately) {
  c.cgroup2 = !host.cgroup2_mount.empty();
  c.cgroup2_mount = host.cgroup2_mount;
  c.cgroup2_by_supervise = host.cgroup2_by_supervise;
  if (!c.cgroup2_by_supervise)
    c.cgroup2_note.clear();
  else if (probed_privately)
    c.cgroup2_note = "no cgroup2 is mounted in this mount namespace: a session mounts it at " +
                     c.cgroup2_mount + " (doctor probed a private mount of its own)";
  else
    c.cgroup2_note = "no cgroup2 was mounted in this mount namespace: supervise mounted it at " +
                     c.cgroup2_mount;
}

HostCaps sessionHostCaps(const SessionSetup &setup) {
  const tracer::HostFeatures &host = setup.host;
  HostCaps c;
  auto note = [&host](std::string_view prefix, const char *fallback) {
    for (const auto &n : host.notes)
      if (n.starts_with(prefix)) return n.substr(prefix.size());
    return std::string(fallback);
  };
  c.seccomp_notify = host.seccomp_notify && setup.seccomp_filter && !setup.ptrace;
  c.ptrace_backend = setup.ptrace;
  c.seccomp_trace = host.seccomp_trace && setup.ptrace && setup.seccomp_filter;
  if (!c.seccomp_trace) c.why["ptrace"] = note("ptrace: ", "unavailable");
  // ADDFD|SEND is confirmed on the listener after launch; a session that
  // lacks it stops there (session.cpp), so one that runs has it.
  c.notify_addfd = host.notify_addfd;
  if (!c.seccomp_notify) c.why["seccomp_notify"] = note("seccomp-notify: ", "unavailable");
  c.landlock_abi = setup.landlock_ruleset ? host.landlock_abi : 0;
  if (!c.landlock_abi) c.why["landlock"] = note("landlock: ", "unavailable");
  c.mount_floor = setup.mount_floor;
  if (!c.mount_floor)
    c.why["mountns"] = setup.mount_floor_error.empty() ? "not needed: Landlock is the floor"
                                                       : setup.mount_floor_error;
  setCgroup2(c, host, false);
  c.cgroup_writable = setup.cgroup_dir_fd >= 0;
  if (!c.cgroup_writable)
    c.why["cgroup"] = setup.cgroup_error.empty() ? note("cgroup: ", "unavailable")
                                                 : setup.cgroup_error;
  // The session probe leaves cgroup_kill unknown; the session's cgroup has
  // the file or not (one faccessat).
  c.cgroup_kill = c.cgroup_writable &&
                  ::faccessat(setup.cgroup_dir_fd, "cgroup.kill", F_OK, 0) == 0;
  const std::string not_tried = "not tried: the policy needs no network filter";
  c.cgroup_sock_addr = setup.net_filter;
  c.bpf_ringbuf = setup.net_filter || setup.proc_tracker;
  if (!setup.net_filter) c.why["cgroup_sock_addr"] = setup.net_needed ? setup.net_error : not_tried;
  if (!c.bpf_ringbuf)
    c.why["ringbuf"] = setup.net_needed ? setup.net_error : "not tried in this session";
  c.bpf_tracepoint = setup.proc_tracker;
  c.bpf_lsm_active = c.bpf_lsm_loadable = setup.bpf_lsm;
  c.bpf_lsm_path_hooks = setup.bpf_lsm && tracer::hasEveryLsmPathHook(setup.lsm_hooks);
  if (setup.bpf_lsm && !c.bpf_lsm_path_hooks) {
    std::string missing;
    for (const char *h : tracer::kLsmPathHooks)
      if (std::find(setup.lsm_hooks.begin(), setup.lsm_hooks.end(), h) == setup.lsm_hooks.end())
        missing += (missing.empty() ? "" : ", ") + std::string(h);
    c.why["bpf_lsm_path_hooks"] = "not loaded on this kernel: " + missing;
  }
  c.kernel_audit = setup.kernel_audit;
  if (c.kernel_audit)
    c.kernel_audit_detail = setup.kernel_audit_detail;
  else
    c.why["kernel_audit"] = setup.kernel_audit_detail;
  if (!setup.bpf_lsm)
    c.why["bpf_lsm"] = "not loaded in this session (`supervise doctor` probes it)";
  return c;
}

nlohmann::json featureRowsJson(const std::vector<FeatureRow> &rows) {
  nlohmann::json features = nlohmann::json::array();
  for (const auto &r : rows)
    features.push_back(
        {{"id", r.id},
         {"label", r.label},
         {"used", r.used},
         {"enforceable", r.enforceable},
         {"backend", r.backend.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.backend)},
         {"detail", r.detail}});
  return features;
}

bool fullyEnforceable(const std::vector<FeatureRow> &rows) {
  for (const auto &r : rows)
    if (r.used && !r.enforceable) return false;
  return true;
}

}  // namespace sv::supervisor
