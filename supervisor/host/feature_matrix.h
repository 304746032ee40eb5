// The feature matrix: which mechanism enforces each policy feature on this
// host, or why none can. A pure function of HostCaps and the Policy, so it is
// tested with synthetic hosts. Its requirements mirror the session's
// fail-closed check (session/session_steps.cpp), so "fully enforceable" here
// means `supervise -- cmd` starts. HostCaps come from the doctor's probes
// (host_report.h) or from what a session's own set-up proved
// (sessionHostCaps()).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "policy/model.h"
#include "tracer/probe.h"

namespace sv::supervisor {

// The booleans the matrix needs, filled from the probes (or by a test).
struct HostCaps {
  bool seccomp_notify = false;
  bool notify_addfd = false;
  bool notify_sync_wakeup = false;
  bool seccomp_trace = false;   // SECCOMP_RET_TRACE and ptrace: the ptrace backend can run
  bool ptrace_backend = false;  // the session runs it (else: auto takes it without user-notify)
  int landlock_abi = 0;
  // Where Landlock is missing: the roots as a private mount namespace
  // (tracer/mount_floor.h) can be (doctor) or are (a session) the floor.
  bool mount_floor = false;
  bool cgroup2 = false;
  std::string cgroup2_mount;          // where the hierarchy is mounted, "" when nowhere
  bool cgroup2_by_supervise = false;  // none was mounted: supervise mounts it (tracer/cgroup.h)
  std::string cgroup2_note;           // then: what was (or will be) mounted where
  bool cgroup_writable = false;  // a session cgroup can be created
  bool cgroup_kill = false;
  bool cgroup_sock_addr = false;  // cgroup connect4 program loads and attaches
  bool cgroup_unix_hooks = false;  // cgroup/connect_unix loads (6.7+): pathname unix sockets judged
  bool bpf_ringbuf = false;
  bool bpf_tracepoint = false;
  bool bpf_lsm_active = false;    // "bpf" in the kernel's active LSM list
  bool bpf_lsm_loadable = false;  // a BPF_PROG_TYPE_LSM program loads and attaches
  // Every path_* hook loads (tracer::kLsmPathHooks: yes on 6.12, no on 6.1):
  // else a bpf-lsm session leaves write opens and path changes on user-notify.
  bool bpf_lsm_path_hooks = false;
  // The kernel's own denials can be recorded: kernel audit is on or can be
  // turned on, and its read-only multicast group can be joined.
  bool kernel_audit = false;
  std::string kernel_audit_detail;  // what was (or would be) done to the host's audit state
  // Why each missing item is missing ("landlock" → probe note), for the matrix.
  std::map<std::string, std::string> why;
};

// One policy feature and what enforces it here.
struct FeatureRow {
  std::string id;     // "file_roots", "deny_globs", "exec_rules", "profiles",
                      // "network.none" ... "network.all", "audit", "process_tree",
                      // "syscall_mediation"
  std::string label;  // "file roots"
  bool used = false;  // the policy relies on it (a missing backend then blocks the run)
  bool enforceable = false;
  std::string backend;  // "landlock", "mountns", "seccomp-notify", "cgroup-bpf", "cgroup",
                        // "bpf-lsm", joined with " + " when several decide; "" when none
  std::string detail;   // what is missing, or how it is enforced
};

std::vector<FeatureRow> featureMatrix(const HostCaps &caps, const policy::Policy &policy);

// True when every row the policy uses is enforceable (the session would start
// without fallback: unsafe-host-process).
bool fullyEnforceable(const std::vector<FeatureRow> &rows);

// What a session's own set-up proved, for the matrix in its start event
// (sessionHostCaps). No probe runs for it: the session's start-up attempts
// are the probes, and what it did not need stays "not tried".
struct SessionSetup {
  tracer::HostFeatures host;  // probeHostForSession() (or probeHost() for the unsafe fallback)
  bool seccomp_filter = false;    // a filter was built (installed at launch)
  bool ptrace = false;            // the ptrace backend answers it
  bool landlock_ruleset = false;  // a ruleset was built
  bool mount_floor = false;       // else the roots are a private mount namespace
  std::string mount_floor_error;  // why not, when neither
  int cgroup_dir_fd = -1;         // the session cgroup, -1 when none
  std::string cgroup_error;
  bool net_needed = false;  // the policy needs the network filter
  bool net_filter = false;  // and it loaded
  std::string net_error;
  bool proc_tracker = false;  // the BPF process tracker (ring buffer, tracepoints) loaded
  bool bpf_lsm = false;       // the bpf-lsm backend loaded
  std::vector<std::string> lsm_hooks;  // and the hooks it attached (LsmBackend::hooks())
  bool kernel_audit = false;  // the kernel's denials are read (kernel_denials.h)
  std::string kernel_audit_detail;  // what was done to the host's audit state, or why not
};

// The cgroup2 members of `c` from the probe. `probed_privately`: doctor
// probed on a mount of its own private mount namespace, where a session would
// mount one (host_report.cpp); the note then says what a session does.
void setCgroup2(HostCaps &c, const tracer::HostFeatures &host, bool probed_privately);

// HostCaps as far as the session knows them; featureMatrix() of it is the
// `session.backend_matrix` of the start event (docs/audit-events.md). A
// backend the session did not load reads as missing, with why.
HostCaps sessionHostCaps(const SessionSetup &setup);

// The matrix rows as `supervise doctor --json` writes them (`features`).
nlohmann::json featureRowsJson(const std::vector<FeatureRow> &rows);

}  // namespace sv::supervisor
