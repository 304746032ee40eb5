// TargetUmask: the umask an emulated create applies for the creating thread.
// The supervisor runs with umask 0 and creates on the tree's behalf, so it
// applies the thread's own umask itself.
//
// Reading a thread's umask costs a read of /proc/TID/status (9-14 µs on the
// test VM) on every create. Where the filter notifies every umask(2) of the
// tree (tracer::notifiesUmask), no read is needed until one of them sets a
// mask other than the command's start umask: a task gets its umask from
// nowhere else (fork, clone with or without CLONE_FS, unshare and exec keep
// or copy it). The handler records each umask(2) before answering it, so a
// create ordered after one is decided after the record; a create concurrent
// with it may take either mask, as in the kernel. Once the tree has set
// another mask, every create reads its thread's.
#pragma once

#include <sys/types.h>

#include <atomic>

namespace sv::supervisor {

class TargetUmask {
 public:
  // The command's umask at start, where every umask(2) of its tree is seen
  // (sawSet). Without it, each of() reads the thread's.
  void watchFrom(mode_t start) {
    start_ = start & 0777;
    uniform_.store(true, std::memory_order_release);
  }
  // A umask(2) of the tree, before it takes effect.
  void sawSet(mode_t mask) {
    if ((mask & 0777) != start_) uniform_.store(false, std::memory_order_release);
  }
  // The umask of thread `tid` (022 when it cannot be read). Any thread.
  mode_t of(pid_t tid) const;

 private:
  mode_t start_ = 0;
  std::atomic<bool> uniform_{false};
};

}  // namespace sv::supervisor
