// NotifyHandler: decides and emulates the syscalls seccomp sends to user space.
//
// For every notification: read the path argument(s) from the target, resolve
// them the way the kernel would but pinned (target_path.h), ask the Engine,
// and then either fail the syscall (EACCES) or perform it ourselves on the
// pinned fds and hand back the result (ADDFD for opens). The kernel never
// re-reads the target's memory after our decision, so a thread racing the path
// pointer cannot swap the file under a decision. exec is the exception (the
// kernel must load the binary itself); see handleExec for why that is bounded.
//
// The supervisor runs with the target's credentials minus capabilities (its
// effective set is emptied after launch), so an emulated operation succeeds
// exactly when the target's own would have, as far as DAC is concerned.
#pragma once

#include <linux/seccomp.h>
#include <sys/types.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "policy/engine.h"
#include "supervisor/notify/notify_decode.h"
#include "supervisor/audit/audit_log.h"
#include "supervisor/proc/process_info.h"
#include "supervisor/notify/syscall_answer.h"
#include "supervisor/notify/target_path.h"
#include "supervisor/notify/target_umask.h"
#include "tracer/seccomp/notify.h"
#include "tracer/bpf/proc_tracker.h"

namespace sv::supervisor {

struct NotifyOptions {
  bool audit_mode = false;  // decide, record would-deny, but allow
  bool quiet = false;       // no denial line on stderr
  bool audit_allows = true; // record allowed decisions too (audit.level != deny)
  std::string workspace;    // for shorter paths in denial messages
  pid_t root_pid = -1;      // the command; its profile is root_profile
  std::string root_profile;  // the profile the command starts in ("" = the base policy)
  std::string session_cgroup;  // name of the session cgroup: scopes /proc/PID (target_path.h)
  std::string process_root;    // the command's root as we name it (ResolveOptions::process_root)
  // The in-kernel exec re-check: every exec let through is approved there
  // for the file(s) judged, so a path swapped after the check gets SIGKILL.
  tracer::ProcTracker* exec_recheck = nullptr;
  // Called while an exec that switches a process's profile is held, before
  // the exec may go on: moves the process to where the kernel's per-profile
  // network plan finds it (profile_network.h). An error refuses the exec.
  std::function<Status(pid_t tgid, std::string_view from, std::string_view to)> on_profile_switch;
  // Where the kernel keeps each process's profile (bpf-lsm: task storage,
  // switched at exec), since this handler then never sees the execs: the
  // profile name ("" = base) of process `tgid`. Unset: the handler's own
  // records of the switches it approved.
  std::function<std::string(pid_t tgid)> profile_of;
  // Where creates are decided in the kernel without waiting for this thread
  // (bpf-lsm): marks a directory about to be moved (by its fd) so that
  // creates below it are refused until the returned hold is dropped, after
  // the rename; the walk then sees every entry the rename moves. An error
  // refuses the rename. Unset: creates are notified and wait for this thread.
  std::function<Result<std::shared_ptr<void>>(int dir_fd)> hold_moving_directory;
  // The command's umask at start, where the filter notifies every umask(2)
  // of its tree (tracer::notifiesUmask): creates apply it without reading
  // the thread's until the tree sets another (target_umask.h).
  std::optional<mode_t> watched_umask;
};

class NotifyHandler {
 public:
  NotifyHandler(const policy::Engine& engine, SyscallAnswer& answer, AuditLog& audit,
                NotifyOptions options);

  // Receives and answers one pending notification from answer.listener().
  // Never throws.
  void handleOne();
  // Decides and answers one request (a user-notify one, or one a tracer made
  // of a seccomp stop). Never throws.
  void handle(const seccomp_notif& req);

  uint64_t handled() const { return handled_; }

  // From any thread, once the protected names that exist are bound
  // read-only in the command's mount namespace and Landlock holds the roots
  // (supervisor/session/write_recheck.h): an allowed open for write of an
  // existing file, by open/openat, and an allowed unlink or rmdir run in
  // the kernel (CONTINUE) from then on. `read_write`: O_RDWR too (only where
  // no rule denies reading: a path swapped after the decision must not open
  // a denyRead file for reading).
  void enableKernelRechecks(bool read_write) {
    kernel_rechecks_read_write_.store(read_write, std::memory_order_relaxed);
    kernel_rechecks_writes_.store(true, std::memory_order_release);
  }

 private:
  struct Call;  // one notification being handled

  void dispatch(Call& call);
  void handleOpen(Call& call, int dirfd, uint64_t path, int flags, unsigned mode, uint64_t resolve);
  // An allowed open with these flags may run in the kernel (kernel_rechecks_writes).
  bool kernelRechecks(const Call& call, int flags) const;
  // The lexical fast path: raw_'s target in abs_ (lexicalTargetPath), or
  // false where the walk must find it.
  bool lexicalTarget(const Call& call, int dirfd);
  // An allowed abs_ the kernel re-checks, answered CONTINUE (or the errno
  // its lookup gave) when no symlink lies on its way; false otherwise.
  // follows_final: the call follows a final symlink (an open; not unlink).
  bool continueIfNoSymlink(Call& call, policy::Operation op, const policy::Decision& decision,
                           bool follows_final);
  void handleOpenat2(Call& call, const DecodedCall& decoded);
  void handleCreate(Call& call, int dirfd, uint64_t path, unsigned mode, dev_t dev, int kind);
  void handleRemove(Call& call, int dirfd, uint64_t path, int flags);
  void handleRename(Call& call, int olddir, uint64_t oldpath, int newdir, uint64_t newpath,
                    unsigned flags);
  // For a directory being renamed to `new_path`: no protected path may be
  // inside it, neither under its old name nor under its new one, and nothing
  // that may not be read may come out under a name that may be.
  bool directoryMovePermitted(Call& call, const ResolvedPath& dir, const std::string& new_path);
  // options_.hold_moving_directory for `dir` when it is a directory; false
  // when the rename was refused for it.
  bool holdMovingDirectory(Call& call, const ResolvedPath& dir,
                           std::vector<std::shared_ptr<void>>* holds);
  // A file that a deny rule keeps from being read may get another name (a
  // link, a rename) only where the rules keep it from being read too: else it
  // could be read under that name. A symlink's own name is not what read
  // rules judge (an open follows it), so `object` being one passes. Records
  // only a refusal (the write checks of the two names are the call's own
  // decisions).
  bool readRuleFollows(Call& call, const UniqueFd& object, const std::string& from,
                       const std::string& to);
  bool readRuleFollowsName(Call& call, const std::string& from, const std::string& to);
  void handleLink(Call& call, int olddir, uint64_t oldpath, int newdir, uint64_t newpath, int flags);
  void handleSymlink(Call& call, uint64_t target, int newdir, uint64_t newpath);
  void handleTruncate(Call& call, uint64_t path, off_t length);
  void handleChmod(Call& call, int dirfd, uint64_t path, unsigned mode, int flags);
  void handleChown(Call& call, int dirfd, uint64_t path, uid_t uid, gid_t gid, int flags);
  void handleUtimes(Call& call, int dirfd, uint64_t path, uint64_t times, int kind, int flags);
  void handleXattr(Call& call, int fd, uint64_t path, uint64_t name, uint64_t value, size_t size,
                   int flags, bool follow, bool remove);
  void handleExec(Call& call, int dirfd, uint64_t path, uint64_t argv, int flags);
  void handleSocket(Call& call, const DecodedCall& decoded);
  void handleUmask(Call& call, unsigned mask);
  // The interpreters of a script (its "#!" chain) by the exec rules; on a
  // denial answers EACCES and returns false.
  bool permitInterpreters(Call& call, const ResolvedPath& binary);
  // The dynamic loader run as a program (loader_exec.h): the program it
  // names is judged by the exec rules too, and the argv read for that is
  // pinned (exec_args_). *program: its path ("" when it names none). On a
  // denial answers EACCES and returns false.
  bool permitLoaderProgram(Call& call, uint64_t argv, std::string* program);
  // Adds the file at object_fd to the exec's approval (with a re-check);
  // answers EACCES and returns false when it can't be identified.
  bool rechecksExec() const { return options_.exec_recheck || !answer_.listener(); }
  bool noteExecFile(Call& call, int object_fd);

  // Reads a path argument and resolves it; on failure answers the syscall
  // with the errno the kernel would have given and returns false.
  bool resolve(Call& call, int dirfd, uint64_t addr, const ResolveOptions& options,
               ResolvedPath* out, std::string* raw = nullptr);
  // The object of a metadata syscall: `path` in `dirfd`, or, when path is
  // null (fchmod, fchown, f*xattr, futimens), the open file `dirfd` itself,
  // pinned through /proc/TID/fd/N so a racing dup2 can't swap it. On failure
  // answers the syscall and returns false.
  bool resolveTarget(Call& call, int dirfd, uint64_t path, bool follow, ResolvedPath* out);
  // Reads a path argument; on failure answers the syscall and returns false.
  // `verify`: checks ID_VALID after the read (skipped only for
  // continueRechecked, whose answer proves the target was alive then).
  bool readPath(Call& call, uint64_t addr, std::string* out, bool verify = true);
  // An allowed open the kernel re-checks: CONTINUE (or the errno `found`
  // says: the name does not exist), then the allow event if the answer was
  // taken.
  void continueRechecked(Call& call, policy::Operation op, std::string_view path,
                         const policy::Decision& decision, int found);
  // The caller's /proc fields for its event, read only when the event is
  // written (audit_.encodes()): ~90 us for a process nobody looked at yet
  // (every exec of a fork), for nothing when no sink is open.
  std::shared_ptr<const ProcessInfo> processForEvent(const Call& call);
  // A decision's fields into call.event (not its process).
  void fillDecisionEvent(Call& call, std::string_view real_path, const policy::Decision& decision,
                         bool enforce);
  // The events held for after the answer (Call::events_after_answer), in order.
  void emitHeldEvents();
  // One decision event; its sequence number.
  uint64_t emitDecision(Call& call, policy::Operation op, std::string_view real_path,
                        const policy::Decision& decision, bool enforce, const ProcessInfo* process);
  // Asks the engine (no side effects).
  policy::Decision decide(Call& call, policy::Operation op, std::string_view real_path);
  // Records a decision (audit event, denial line); on an enforced deny
  // answers EACCES and returns false.
  bool record(Call& call, policy::Operation op, std::string_view real_path,
              const policy::Decision& decision);
  bool permit(Call& call, policy::Operation op, std::string_view real_path);
  // How to (re)open the target of an emulated open: its absolute path from
  // the root without symlinks (fast path), or an O_PATH fd of the inode we
  // decided on. A value rather than a closure, so the hot path allocates
  // nothing. operator() returns the fd or -errno.
  struct Reopen {
    std::string_view path;  // not owned
    int object_fd = -1;     // not owned; used when >= 0
    unsigned flags = 0;     // open(2) flags without O_CLOEXEC
    unsigned mode = 0;
    bool creat = false;     // may create: the target's umask applies
    pid_t tid = 0;
    const TargetUmask* umask = nullptr;  // the handler's: set where `creat`
    // The fd, or -errno. *made: this open created the file, without
    // `extra_flags` (a new file is no FIFO: nothing to open non-blocking).
    int operator()(int extra_flags, bool* made = nullptr) const;
  };
  // Hands an fd opened for the target to it (ADDFD|SEND); see the .cpp for
  // why `fd` was opened O_NONBLOCK and what `reopen` (may be null) is for.
  void injectOpened(Call& call, int fd, int flags, const Reopen* reopen);
  // Without a listener (ptrace): the decided open runs in the target itself
  // (SyscallAnswer::openExactly, or dupHeld for a held pipe or socket).
  void openInTarget(Call& call, const ResolvedPath& target, int flags, unsigned mode);
  // Answers with the result of an emulated syscall (rc < 0: -errno).
  void finish(Call& call, long rc);

  std::string_view profileOf(pid_t tgid);
  // "denied" when the call fails, "would deny" when audit mode lets it run;
  // `seq`: the audit event of the denial (0: none was emitted).
  void reportDenial(policy::Operation op, std::string_view path, const policy::Decision& d,
                    bool enforced, uint64_t seq = 0);

  const policy::Engine& engine_;
  SyscallAnswer& answer_;
  AuditLog& audit_;
  NotifyOptions options_;
  ProcessCache processes_;
  TargetUmask umask_;  // what emulated creates apply
  bool has_profiles_ = false;
  // Records the profile of process `tgid` (with its start time, see profileOf).
  void setProfile(pid_t tgid, std::string_view profile);
  struct ProfileEntry {
    std::string profile;
    uint64_t start_time = 0;  // of the process it was made for (/proc/PID/stat)
  };
  std::unordered_map<pid_t, ProfileEntry> profiles_;  // tgid -> profile (only with profiles)
  std::string kernel_profile_;  // profileOf's answer from options_.profile_of
  // Scratch for the open fast path (the path argument, its absolute form),
  // reused so that steady state allocates nothing.
  std::string raw_, abs_;
  AuditEvent event_;  // the decision being recorded, reused (see AuditEvent::reset)
  // Allowed decisions of the call being handled, written once it is answered.
  struct HeldEvent {
    AuditEvent event;
    std::shared_ptr<const ProcessInfo> process;
  };
  std::vector<HeldEvent> held_events_;
  // The files the exec being handled may run (binary, #! interpreters).
  std::vector<tracer::ExecFileId> exec_ids_;
  // The argv bytes the exec's decision read (the loader's program), which
  // the new image must start with exactly; empty: argv was not decided on.
  std::string exec_args_;
  uint64_t handled_ = 0;
  std::atomic<bool> kernel_rechecks_writes_{false};
  std::atomic<bool> kernel_rechecks_read_write_{false};
};

}  // namespace sv::supervisor
