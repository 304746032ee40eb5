// LsmBackend: the session side of the BPF-LSM backend.
//
// Chooses between the two ways a session decides files, exec and connect:
// "host" (Landlock underneath, seccomp user-notify for what Landlock cannot
// express, cgroup BPF for the network) and "bpf-lsm" (tracer::LsmFilter: the
// kernel decides every open, path change, exec and connect against the
// compiled policy, with no round trip). With bpf-lsm the seccomp filter keeps
// its kill/deny rules but stops sending the file and exec syscalls the LSM
// programs decide to user space (lsmSeccompPlan), and the LSM's ring buffer
// becomes audit events (enforced_by "bpf-lsm") plus the same
// "supervise: denied ..." lines the user-notify handler prints.
//
// The backend is picked once per session, before the first process joins
// the session cgroup: `auto` takes bpf-lsm when the probe says it is active
// and the programs load (else host, silently), `host` never tries, and
// `bpf-lsm` fails closed (exit 125) when it cannot be had.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "policy/compile.h"
#include "policy/engine.h"
#include "policy/model.h"
#include "supervisor/audit/audit_log.h"
#include "supervisor/proc/process_info.h"
#include "supervisor/loop/supervision.h"
#include "tracer/bpf/lsm_filter.h"

namespace sv::supervisor {

enum class BackendChoice { Auto, Host, BpfLsm, Ptrace };

// "auto" | "host" | "bpf-lsm" | "ptrace"; nullopt for anything else.
std::optional<BackendChoice> parseBackendChoice(std::string_view text);

inline constexpr std::string_view kEnforcedByBpfLsm = "bpf-lsm";

// The seccomp plan of a bpf-lsm session: `host` without the notified file
// and exec syscalls the attached `hooks` decide. What no attached hook
// covers stays notified: the renames (a directory move changes the path of
// everything below it; path_rename sees the two names only), link, utimes
// and the xattr calls (their LSM hooks see a dentry, not its path), and
// every path-changing syscall when one of the path_* hooks is missing on
// this kernel.
policy::SeccompPlan lsmSeccompPlan(const policy::SeccompPlan& host,
                                   const std::vector<std::string>& hooks);

struct LsmBackendOptions {
  bool audit_mode = false;        // report would-deny, enforce nothing
  bool deny_events_only = false;  // audit.level == deny
  bool quiet = false;             // no denial lines on stderr
  std::string workspace;          // shown relative in denial lines, like the notify handler

  // A session's options: mode, audit level and workspace from the policy.
  static LsmBackendOptions forSession(const policy::Policy& policy, bool quiet);
};

class LsmBackend {
 public:
  // Host → nullptr. Auto → the backend, or nullptr with *why_not set when the
  // BPF LSM is not usable here. BpfLsm → the backend, or an Error saying why
  // it is not usable (the caller refuses to run: exit 125).
  // `cgroup_dir` is the session's cgroup2 directory: only its tasks are judged.
  static Result<std::unique_ptr<LsmBackend>> select(BackendChoice choice,
                                                    std::shared_ptr<const policy::Policy> policy,
                                                    const policy::CompiledPolicy& compiled,
                                                    const std::string& cgroup_dir,
                                                    const LsmBackendOptions& options,
                                                    std::string* why_not = nullptr);

  LsmBackend(tracer::LsmFilter filter, std::shared_ptr<const policy::Policy> policy,
             const LsmBackendOptions& options);

  // Consumes the ring buffer on the loop: when its fd is readable (denials
  // wake it), every ~100 ms (allows are batched without a wake-up) and once
  // after the command exited.
  void attach(Supervision& loop, AuditLog& audit, ProcessCache& processes);
  // Audits every pending event now; returns how many.
  int drain();

  // What the session's start event and `doctor` report.
  const std::vector<std::string>& hooks() const { return filter_.hooks(); }
  // connect and sendto are both judged here (the cgroup programs then only
  // need to report what they alone refuse).
  bool decidesNetwork() const;
  policy::SeccompPlan seccompPlan(const policy::SeccompPlan& host) const {
    return lsmSeccompPlan(host, hooks());
  }
  // Landlock keeps its scopes (abstract unix sockets, signals) but no longer
  // restricts paths: it runs before the BPF LSM and would refuse reads and
  // writes outside the roots without a word, where the BPF LSM decides the
  // same from the same policy and reports every decision.
  static policy::LandlockPlan landlockPlan(const policy::LandlockPlan& host);
  tracer::LsmFilter& filter() { return filter_; }

 private:
  void onEvent(const tracer::LsmEvent& e);
  void reportDenial(const tracer::LsmEvent& e, const AuditEvent& ev, uint64_t seq);

  tracer::LsmFilter filter_;
  std::shared_ptr<const policy::Policy> policy_;
  policy::Engine engine_;  // rule names and reasons (the kernel reports rule ids only)
  LsmBackendOptions options_;
  AuditLog* audit_ = nullptr;
  ProcessCache* processes_ = nullptr;
  AuditEvent event_;  // reused per decision
};

// Audit fields of one LSM decision (exposed for tests): category, operation,
// decision, errno, rule, file/exec/network target. `rule_id` is
// filter.ruleIdAt(e.rule_index).
void fillLsmAuditEvent(const tracer::LsmEvent& e, const std::string& rule_id, bool audit_mode,
                       AuditEvent& ev);

}  // namespace sv::supervisor
