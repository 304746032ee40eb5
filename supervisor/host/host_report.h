// The host report behind `supervise doctor`: what the running kernel lets
// the supervisor use here, asked by real attempts only (seccomp user-notify
// and its flags, each Landlock right, cgroup v2, BPF program and map types,
// BPF LSM, lockdown, ptrace scope, privileges). The attempts themselves live
// in tracer/ (probe.h, landlock.h, bpf/bpf_probes.h); this file turns their
// answers into named checks and the HostCaps of the feature matrix.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "supervisor/host/feature_matrix.h"

namespace sv::supervisor {

enum class CheckState { Ok, Missing, Info };

// One line of the host section.
struct Check {
  std::string id;     // stable JSON key: "seccomp.user_notify"
  std::string label;  // human: "seccomp user-notify"
  CheckState state = CheckState::Info;
  std::string value;   // "yes", "ABI 7", "none", ...
  std::string detail;  // the probe's own words (errno name and text when refused)
};

struct HostReport {
  HostCaps caps;
  std::vector<Check> checks;
  std::vector<std::string> landlock_fs_rights;   // names of the rights a ruleset accepts
  std::vector<std::string> landlock_net_rights;  // ABI 4+: BIND_TCP, CONNECT_TCP
  std::vector<std::string> landlock_scopes;      // ABI 6+: ABSTRACT_UNIX_SOCKET, SIGNAL
  std::vector<std::string> lsms;                 // active LSMs, boot order
};

// Runs every probe (forks short-lived children; call before starting threads).
// Honours SUPERVISE_TEST_DISABLE (landlock, seccomp-notify, cgroup, bpf).
HostReport probeDoctorHost();

std::string_view toString(CheckState s);

}  // namespace sv::supervisor
