// Kernel audit on for as long as some supervise session needs it, and back as it was.
//
// Landlock and seccomp write their denial records only while kernel audit is enabled.
// acquire() turns it on when it is off (and not locked), records that supervise did so
// in a state file, and holds a shared flock on a holders file for the session's life;
// release() (or the destructor) of the last holder restores what supervise changed.
// It never registers as auditd and never sends AUDIT_STATUS_PID: with an auditd (or an
// administrator) having audit on, it changes nothing and restores nothing.
//
// Files under Options::state_dir (/run/supervise/kernel-audit, root only):
//   lock     exclusive flock around every acquire/release transition
//   holders  each live session holds LOCK_SH on its own open of it (O_CLOEXEC)
//   state    present iff supervise turned audit on: what it found and what it set
// A SIGKILLed session loses its shared lock with its fds, so the count stays right;
// if it was the last one, audit stays on until the next acquire() (any session start)
// or recoverStale() (doctor) finds the state file with no holder and restores it. /run
// is tmpfs and audit is off after a reboot anyway.
// Restoring is conditional: not when an auditd registered meanwhile (it owns audit
// now), not when locked (enabled=2), and the backlog limit only if still ours.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"
#include "tracer/kernel_audit/audit_netlink.h"

namespace sv::tracer::kernel_audit {

struct AuditSwitchOptions {
  std::string state_dir = "/run/supervise/kernel-audit";
  // Raised to this while supervise has audit on (0: leave it). Measured: at the
  // default 64 a burst of 10,000 Landlock denials lost 26% of its records in the
  // kernel queue; at 8192 none.
  uint32_t backlog_limit = 8192;
};

enum class AuditSwitchAction {
  kAlreadyOn,  // enabled by someone else (auditd, an administrator): untouched
  kLocked,     // enabled=2: on and immutable until reboot: untouched
  kEnabled,    // was off: supervise turned it on and will turn it off
  kJoined,     // another supervise session turned it on; the last one restores it
};

struct AuditSwitchReport {
  AuditSwitchAction action = AuditSwitchAction::kAlreadyOn;
  AuditStatus before;            // as found (after any stale recovery)
  uint32_t backlog_limit = 0;    // in effect now
  bool recovered_stale = false;  // a dead session's change was restored first
  std::string describe() const;  // one line for doctor / the session-start event
};

enum class AuditRestoreAction {
  kNotOurs,        // supervise did not change audit (or another session still runs)
  kRestored,       // enabled=0 again (and the backlog limit put back if still ours)
  kLeftForAuditd,  // an auditd registered meanwhile: left on, it owns audit now
  kLeftLocked,     // locked meanwhile: cannot be turned off
  kAlreadyOff,     // someone turned it off already
};
const char* auditRestoreActionName(AuditRestoreAction action);

class AuditSwitch {
 public:
  static Result<AuditSwitch> acquire(const AuditSwitchOptions& options = {});
  // Restores a dead session's change when no session holds the switch (for doctor).
  static Result<std::optional<AuditRestoreAction>> recoverStale(
      const AuditSwitchOptions& options = {});

  AuditSwitch(AuditSwitch&&) noexcept = default;
  AuditSwitch& operator=(AuditSwitch&&) noexcept = default;
  ~AuditSwitch();

  const AuditSwitchReport& report() const { return report_; }
  bool held() const { return holders_.valid(); }
  // Drops this session's hold; the last holder restores. Idempotent.
  // `known`: a status the caller read just before (each AUDIT_GET reply costs
  // the kernel a thread, 0.5-4 ms here); only a registering auditd could
  // change it meanwhile, as it could between any read and the restore.
  Result<AuditRestoreAction> release(const std::optional<AuditStatus>& known = std::nullopt);

 private:
  AuditSwitch(AuditSwitchOptions options, UniqueFd holders, AuditSwitchReport report)
      : options_(std::move(options)), holders_(std::move(holders)), report_(report) {}

  AuditSwitchOptions options_;
  UniqueFd holders_;
  AuditSwitchReport report_;
};

}  // namespace sv::tracer::kernel_audit
