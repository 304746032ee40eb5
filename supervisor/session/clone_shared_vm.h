// Starting a child that shares the supervisor's address space (CLONE_VM)
// instead of a copy of it.
//
// A fork copies supervise's page tables and leaves every page either side
// then writes copy-on-write: ~2-3 ms of each start-up on the test VM, where
// page faults are expensive. A child sharing the memory must not disturb the
// supervisor's state: it runs on a stack of its own and, unless the thread
// that cloned it is suspended (CLONE_VFORK), makes raw syscalls only, since
// every libc call may write errno into the cloning thread's TLS.
//
// Sanitizer runtimes keep per-thread state in TLS too, and raw syscalls are
// written for x86-64 only: elsewhere, and in sanitizer builds, callers fork.
#pragma once

#include <linux/sched.h>

namespace sv::supervisor {

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SV_SANITIZED_BUILD 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SV_SANITIZED_BUILD 1
#endif

#if defined(__x86_64__) && !defined(SV_SANITIZED_BUILD)
inline constexpr bool kCanShareVm = true;
#else
inline constexpr bool kCanShareVm = false;
#endif

// A syscall that touches nothing but its arguments (no errno): what a child
// sharing our memory may make while we go on. Returns the result or -errno.
// Only where kCanShareVm (elsewhere it returns -ENOSYS).
long rawSyscall(long nr, long a = 0, long b = 0, long c = 0);

// clone3(args) whose child calls fn(arg) on the stack args->stack names and
// exits with its result. Returns the child's pid, or -errno. Only where
// kCanShareVm (elsewhere it returns -ENOSYS).
long clone3Calling(clone_args* args, int (*fn)(void*), void* arg);

// clone3(args) with no stack of the child's own (args->stack must be 0): the
// child goes on from here, on this very stack, and the parent exits its
// whole process with `exit_code` at once, from registers only, so it never
// writes to the stack the child now runs on. Returns 0 in the child, or
// -errno in the parent, which then goes on as before. Block every signal
// first: a handler run in the parent would write a frame on that stack.
// Only where kCanShareVm (elsewhere it returns -ENOSYS).
long clone3ParentExits(clone_args* args, int exit_code);

}  // namespace sv::supervisor
