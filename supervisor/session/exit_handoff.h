// The end of a session, left to a child, so that the caller of supervise
// does not wait while it is torn down: the whole tear-down
// (exitBeforeTearDown), or where that can't be, the last references of the
// kernel objects that cost most to drop (handOffLastReferences).
//
// Whoever drops the last reference to some kernel objects pays for their
// teardown, and the caller of supervise waits for our exit: the command's
// mount namespace (the write re-check's, the mount floor's) goes with an RCU
// grace period (0.4-5 ms on the test VM, more under load), and our address
// space is unmapped page by page. handOffLastReferences(fds) starts a child
// that shares our memory (CLONE_VM, so the address space is freed when it
// exits) and holds copies of `fds` and nothing else of our fd table (so
// nothing the caller could be waiting on for EOF). It waits for our exit
// (a pidfd of ours) and then exits, dropping the last references. Our own
// closes of those fds, and our exit, then drop references that are not the
// last.
//
// Call it once the exit status and the trail are final, only in a process
// about to exit (the child keeps the objects until then). The child runs
// raw syscalls only, on a stack of its own, with every signal blocked. Where
// a child can't share our memory (kCanShareVm: sanitizer builds), or can't
// start, nothing is handed off and we pay as before.
#pragma once

#include <span>

namespace sv::supervisor {

void handOffLastReferences(std::span<const int> fds);

// Ends the process the caller waits for with `exit_code` now, and returns
// true in a child that shares our memory and holds a copy of our fd table,
// to do the tear-down that follows (drop the kernel objects, release the
// BPF slots and kernel audit) after the caller already has the status.
// In that child every fd we inherited (those without FD_CLOEXEC: stdio,
// pipes passed through) is /dev/null, so no caller waits for its EOF, and
// what the tear-down says is not seen.
//
// Call it once the exit status and the trail are final and every other
// thread is joined. Returns false, and changes nothing, where it cannot:
// other threads still run (a child sharing our memory must be the only
// one in it), we are a pid namespace's init (our exit would kill the
// child), or a child can't share our memory (kCanShareVm) or start.
bool exitBeforeTearDown(int exit_code);

}  // namespace sv::supervisor
