// The seccomp-bpf filter every supervised process runs under.
//
// Built with libseccomp from a policy::SeccompPlan and exported as a raw BPF
// program, so the child only needs one raw seccomp() syscall. Sessions take
// the programs built at build time (seccomp_programs.h); the builder runs in
// the generator and the tests.
// Three outcomes: ERRNO for syscalls a sandboxed tree never needs (kernel
// modules, mounts, io_uring, bpf, ptrace, namespaces, clock setting, ...),
// USER_NOTIF for the file/exec syscalls the supervisor decides, ALLOW for the
// rest. Only the native x86_64 ABI is allowed; i386 (`int 0x80`) and x32
// syscall numbers kill the whole process, since a second ABI would bypass
// every per-number rule.
#pragma once

#include <linux/filter.h>

#include <vector>

#include "common/result.h"
#include "policy/compile.h"

namespace sv::tracer {

// Parent side, not async-signal-safe (libseccomp allocates). Honours
// plan.notify_write_opens (write-intent open/openat/creat, openat2, the
// path-mutating syscalls, and umask: notifiesUmask), plan.notify_read_opens
// (every open/openat/openat2), plan.notify_exec (execve/execveat) and
// plan.allow_user_namespaces (clone/unshare with CLONE_NEWUSER). clone3
// always fails with ENOSYS: its flags live in memory the filter cannot read,
// and glibc falls back to clone().
Result<std::vector<sock_filter>> buildSeccompFilter(const policy::SeccompPlan& plan);

// The syscall numbers buildSeccompFilter(plan) sends to user-notify (open and
// openat only with write intent unless plan.notify_read_opens). The
// supervisor's decoder must know every one (supervisor/notify/notify_decode.h).
std::vector<int> notifiedSyscalls(const policy::SeccompPlan& plan);

// umask(2) is notified, to be watched rather than decided, wherever creates
// are: the supervisor creates for the tree and applies the creator's umask
// (supervisor/notify/target_umask.h).
inline bool notifiesUmask(const policy::SeccompPlan& plan) { return plan.notify_write_opens; }

// In the child after fork: installs `prog` with SECCOMP_FILTER_FLAG_NEW_LISTENER
// and returns the listener fd, or -errno. Sets PR_SET_NO_NEW_PRIVS first (the
// kernel requires it without CAP_SYS_ADMIN; idempotent). Async-signal-safe:
// raw syscalls only, no allocation. The listener fd must then be handed to the
// supervisor (e.g. sendFdOverSocket in tracer/fd_passing.h) and closed in the child.
int installSeccompFilter(const std::vector<sock_filter>& prog);

// The filter that makes the kernel write an audit record (AUDIT_SECCOMP) of
// every refusal: the same ERRNO rules and ABI kill as buildSeccompFilter(plan),
// ALLOW for everything else (clone3's ENOSYS stays out: glibc falls back, it
// is no refusal). Installed with SECCOMP_FILTER_FLAG_LOG on top of the
// user-notify filter, never instead of it: with both, a refused syscall gets
// ERRNO from both and the kernel takes the newest filter's, so it is logged,
// while a notified one gets USER_NOTIF from the filter without the flag and
// is not (one LOG filter would log every notification answered with an
// error: tracer/kernel_audit/NOTES.md). Only plan.allow_user_namespaces
// changes it.
Result<std::vector<sock_filter>> buildRefusalLogFilter(const policy::SeccompPlan& plan);

// In the child: installs `prog` with SECCOMP_FILTER_FLAG_LOG. 0 or -errno;
// async-signal-safe.
int installSeccompLogFilter(const std::vector<sock_filter>& prog);

}  // namespace sv::tracer
