// The host-wide kernel-audit switch (audit_switch.h).
#include "tracer/kernel_audit/audit_switch.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string_view>

namespace sv::tracer::kernel_audit {
namespace {

// What supervise found and set when it turned audit on.
struct SwitchState {
  uint32_t backlog_before = 0;
  uint32_t backlog_set = 0;  // 0: not changed
};

std::string pathIn(const AuditSwitchOptions& o, const char* name) {
  return o.state_dir + "/" + name;
}

Status makeDirs(const std::string& dir) {
  // mkdir -p, 0700: the state is root's business only.
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    std::string part = dir.substr(0, pos);
    if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) return errnoError("mkdir " + part);
  }
  return {};
}

Result<UniqueFd> openLockFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return errnoError("open " + path);
  return fd;
}

Status lockFd(const UniqueFd& fd, int op, const char* what) {
  while (::flock(fd.get(), op) != 0) {
    if (errno != EINTR) return errnoError(what);
  }
  return {};
}

std::optional<SwitchState> readState(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return std::nullopt;
  char buf[256] = {};
  ssize_t n = ::read(fd.get(), buf, sizeof(buf) - 1);
  if (n < 0) n = 0;
  SwitchState s;
  unsigned before = 0, set = 0;
  // A damaged file still means supervise turned audit on; only the backlog is unknown.
  if (std::sscanf(buf, "enabled_by=supervise backlog_before=%u backlog_set=%u", &before, &set) ==
      2) {
    s.backlog_before = before;
    s.backlog_set = set;
  }
  return s;
}

Status writeState(const std::string& path, const SwitchState& s) {
  const std::string tmp = path + ".tmp";
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return errnoError("open " + tmp);
  char buf[128];
  int len =
      std::snprintf(buf, sizeof(buf), "enabled_by=supervise backlog_before=%u backlog_set=%u\n",
                    s.backlog_before, s.backlog_set);
  if (::write(fd.get(), buf, len) != len) return errnoError("write " + tmp);
  // No fsync: the file describes the kernel's audit state, which a reboot
  // resets anyway; a crashed supervise leaves it in the page cache for the
  // next session. (It cost ~1 ms of each start where /run is on disk.)
  if (::rename(tmp.c_str(), path.c_str()) != 0) return errnoError("rename " + tmp);
  return {};
}

// Undoes what `state` says supervise did, as far as it is still supervise's to undo.
// `known`: the status read moments ago by the caller, else it is read here.
Result<AuditRestoreAction> restore(AuditControl& control, const SwitchState& state,
                                  const std::optional<AuditStatus>& known = std::nullopt) {
  auto status = known ? Result<AuditStatus>(*known) : control.getStatus();
  if (!status.ok()) return status.error();
  // An auditd that registered while we had audit on expects it on: leave it to it.
  if (status->pid != 0) return AuditRestoreAction::kLeftForAuditd;
  if (status->enabled == 2) return AuditRestoreAction::kLeftLocked;
  if (state.backlog_set != 0 && status->backlog_limit == state.backlog_set)
    SV_TRY(control.setBacklogLimit(state.backlog_before));
  if (status->enabled == 0) return AuditRestoreAction::kAlreadyOff;
  SV_TRY(control.setEnabled(0));
  return AuditRestoreAction::kRestored;
}

}  // namespace

const char* auditRestoreActionName(AuditRestoreAction action) {
  switch (action) {
    case AuditRestoreAction::kNotOurs:
      return "not-ours";
    case AuditRestoreAction::kRestored:
      return "restored";
    case AuditRestoreAction::kLeftForAuditd:
      return "left-for-auditd";
    case AuditRestoreAction::kLeftLocked:
      return "left-locked";
    case AuditRestoreAction::kAlreadyOff:
      return "already-off";
  }
  return "?";
}

std::string AuditSwitchReport::describe() const {
  std::string s;
  switch (action) {
    case AuditSwitchAction::kAlreadyOn:
      s = before.pid != 0 ? "kernel audit on (auditd pid " + std::to_string(before.pid) +
                                "); supervise reads the multicast group, changes nothing"
                          : "kernel audit on (no auditd); supervise changes nothing";
      break;
    case AuditSwitchAction::kLocked:
      s = "kernel audit on and locked (enabled=2); supervise changes nothing";
      break;
    case AuditSwitchAction::kEnabled:
      s = "kernel audit was off: supervise turned it on (backlog_limit " +
          std::to_string(before.backlog_limit) + " -> " + std::to_string(backlog_limit) +
          "); restored when the last supervise session ends";
      break;
    case AuditSwitchAction::kJoined:
      s = "kernel audit turned on by another supervise session; the last one restores it";
      break;
  }
  if (recovered_stale) s += " (first restored the change of a session that died)";
  return s;
}

Result<AuditSwitch> AuditSwitch::acquire(const AuditSwitchOptions& options) {
  SV_TRY(makeDirs(options.state_dir));
  auto lock = openLockFile(pathIn(options, "lock"));
  if (!lock.ok()) return lock.error();
  SV_TRY(lockFd(*lock, LOCK_EX, "lock the audit switch"));
  auto holders = openLockFile(pathIn(options, "holders"));
  if (!holders.ok()) return holders.error();
  auto control = AuditControl::open();
  if (!control.ok()) return control.error();

  const std::string state_path = pathIn(options, "state");
  std::optional<SwitchState> state = readState(state_path);
  AuditSwitchReport report;
  // Under `lock` nobody converts locks on `holders`, so an exclusive lock we get here
  // means no live session holds it: any state file is a dead session's.
  if (::flock(holders->get(), LOCK_EX | LOCK_NB) == 0) {
    if (state) {
      auto restored = restore(*control, *state);
      if (!restored.ok()) return restored.error();
      ::unlink(state_path.c_str());
      state.reset();
      report.recovered_stale = true;
    }
  }
  SV_TRY(lockFd(*holders, LOCK_SH, "hold the audit switch"));

  auto status = control->getStatus();
  if (!status.ok()) return status.error();
  report.before = *status;
  report.backlog_limit = status->backlog_limit;
  if (state) {
    report.action = AuditSwitchAction::kJoined;
    // Turned off behind the sessions' back; they still need it and it is ours to restore.
    if (status->enabled == 0) SV_TRY(control->setEnabled(1));
  } else if (status->enabled == 2) {
    report.action = AuditSwitchAction::kLocked;
  } else if (status->enabled == 1) {
    report.action = AuditSwitchAction::kAlreadyOn;
  } else {
    SwitchState s;
    s.backlog_before = status->backlog_limit;
    if (options.backlog_limit != 0 && status->backlog_limit != 0 &&
        status->backlog_limit < options.backlog_limit)
      s.backlog_set = options.backlog_limit;
    // The state goes first: a crash between the two leaves a restorable note, never an
    // unexplained change.
    SV_TRY(writeState(state_path, s));
    if (s.backlog_set != 0) {
      if (auto st = control->setBacklogLimit(s.backlog_set); !st.ok()) {
        ::unlink(state_path.c_str());
        return st.error();
      }
      report.backlog_limit = s.backlog_set;
    }
    if (auto st = control->setEnabled(1); !st.ok()) {
      if (s.backlog_set != 0) (void)control->setBacklogLimit(s.backlog_before);
      ::unlink(state_path.c_str());
      return st.error();
    }
    report.action = AuditSwitchAction::kEnabled;
  }
  return AuditSwitch(options, std::move(*holders), report);
}

Result<AuditRestoreAction> AuditSwitch::release(const std::optional<AuditStatus>& known) {
  if (!holders_) return AuditRestoreAction::kNotOurs;
  auto lock = openLockFile(pathIn(options_, "lock"));
  if (!lock.ok()) return lock.error();
  SV_TRY(lockFd(*lock, LOCK_EX, "lock the audit switch"));
  // Converting our shared lock drops it first (flock(2)); failing means others hold it.
  const bool last = ::flock(holders_.get(), LOCK_EX | LOCK_NB) == 0;
  AuditRestoreAction result = AuditRestoreAction::kNotOurs;
  const std::string state_path = pathIn(options_, "state");
  if (last) {
    if (auto state = readState(state_path)) {
      auto control = AuditControl::open();
      if (!control.ok()) return control.error();
      auto restored = restore(*control, *state, known);
      if (!restored.ok()) return restored.error();
      ::unlink(state_path.c_str());
      result = *restored;
    }
  }
  holders_.reset();
  return result;
}

Result<std::optional<AuditRestoreAction>> AuditSwitch::recoverStale(
    const AuditSwitchOptions& options) {
  const std::string state_path = pathIn(options, "state");
  if (::access(state_path.c_str(), F_OK) != 0) return std::optional<AuditRestoreAction>();
  auto lock = openLockFile(pathIn(options, "lock"));
  if (!lock.ok()) return lock.error();
  SV_TRY(lockFd(*lock, LOCK_EX, "lock the audit switch"));
  auto holders = openLockFile(pathIn(options, "holders"));
  if (!holders.ok()) return holders.error();
  if (::flock(holders->get(), LOCK_EX | LOCK_NB) != 0) return std::optional<AuditRestoreAction>();
  auto state = readState(state_path);
  if (!state) return std::optional<AuditRestoreAction>();
  auto control = AuditControl::open();
  if (!control.ok()) return control.error();
  auto restored = restore(*control, *state);
  if (!restored.ok()) return restored.error();
  ::unlink(state_path.c_str());
  return std::optional<AuditRestoreAction>(*restored);
}

AuditSwitch::~AuditSwitch() {
  // Best effort; a session that cares about the outcome calls release() itself.
  if (holders_) (void)release();
}

}  // namespace sv::tracer::kernel_audit
