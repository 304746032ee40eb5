// handOffLastReferences: see the header.
#include "supervisor/session/exit_handoff.h"

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>

#include "supervisor/session/clone_shared_vm.h"

namespace sv::supervisor {
namespace {

constexpr size_t kMaxFds = 16;
constexpr size_t kStackBytes = 16 * 1024;

// What the child reads: static, since we go on (and leave our frames)
// while it runs.
struct Handoff {
  int our_pidfd = -1;
  std::array<int, kMaxFds + 1> keep{};  // ascending, our_pidfd among them
  size_t count = 0;
};
Handoff handoff;

int holdUntilOurExit(void* arg) {
  const auto* h = static_cast<const Handoff*>(arg);
  // Everything but what we keep goes at once: those are references the
  // caller could be waiting on (a pipe of its stdout), and not the last.
  long from = 0;
  for (size_t i = 0; i < h->count; ++i) {
    if (h->keep[i] > from) rawSyscall(SYS_close_range, from, h->keep[i] - 1, 0);
    from = h->keep[i] + 1;
  }
  rawSyscall(SYS_close_range, from, ~0U, 0);
  pollfd exited{h->our_pidfd, POLLIN, 0};
  while (rawSyscall(SYS_poll, reinterpret_cast<long>(&exited), 1, -1) == -EINTR) {
  }
  return 0;  // our address space and `keep` go with this exit
}

}  // namespace

void handOffLastReferences(std::span<const int> fds) {
  if constexpr (!kCanShareVm) return;
  if (handoff.count != 0 || fds.size() > kMaxFds) return;  // once per process
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0));
  if (pidfd < 0) return;
  handoff.our_pidfd = pidfd;
  for (int fd : fds)
    if (fd >= 0) handoff.keep[handoff.count++] = fd;
  handoff.keep[handoff.count++] = pidfd;
  std::sort(handoff.keep.begin(), handoff.keep.begin() + handoff.count);
  // Never unmapped: it goes with the address space, which the child frees.
  void* stack = ::mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack != MAP_FAILED) {
    clone_args args{};
    args.flags = CLONE_VM;  // a copy of the fd table, not a share of it
    args.exit_signal = SIGCHLD;
    args.stack = reinterpret_cast<uint64_t>(stack);
    args.stack_size = kStackBytes;
    // No handler of ours may run in it: it starts with every signal blocked.
    sigset_t all, old;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &old);
    const long child = clone3Calling(&args, holdUntilOurExit, &handoff);
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (child < 0) ::munmap(stack, kStackBytes);
  }
  ::close(pidfd);
}

}  // namespace sv::supervisor
