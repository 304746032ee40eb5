// exitBeforeTearDown, handOffLastReferences: see the header.
#include "supervisor/session/exit_handoff.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "common/proc_status.h"
#include "common/read_file.h"
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

// Threads in this process ("Threads:" of /proc/self/status), 0 if unreadable.
int threadCount() {
  char buf[4096];
  const ssize_t n = readFilePrefix("/proc/self/status", buf, sizeof buf);
  if (n <= 0) return 0;
  return procStatusNumber<int>(std::string_view(buf, size_t(n)), "Threads").value_or(0);
}

// Every fd without FD_CLOEXEC is one we inherited (ours are all opened
// with it): made /dev/null, keeping its number for whoever closes it later.
// Standard output and error first: the caller most often waits on those.
void releaseInheritedFds() {
  const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd = 0; fd <= 2; ++fd) null_fd >= 0 ? ::dup2(null_fd, fd) : ::close(fd);
  if (null_fd < 0) return;
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    while (const dirent* entry = ::readdir(dir)) {
      if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
      const int fd = std::atoi(entry->d_name);
      if (fd <= 2 || fd == null_fd || fd == ::dirfd(dir)) continue;
      const int flags = ::fcntl(fd, F_GETFD);
      if (flags >= 0 && !(flags & FD_CLOEXEC)) ::dup2(null_fd, fd);
    }
    ::closedir(dir);
  }
  ::close(null_fd);
}

}  // namespace

bool exitBeforeTearDown(int exit_code) {
  if constexpr (!kCanShareVm) return false;
  // As a pid namespace's init (a container's entrypoint), our exit kills
  // every other process of the namespace: the child would never tear down.
  if (::getpid() == 1 || threadCount() != 1) return false;
  // Our stdio buffers are the child's memory too: what they hold is the
  // caller's, written before we exit, never after.
  std::fflush(nullptr);
  // libc keeps a thread's tid in its descriptor, and locks compare against it
  // (a rwlock whose writer field holds it is "ours": EDEADLK), but the child
  // runs with our thread's descriptor, whose tid field the kernel zeroes at
  // our exit (the address we gave set_tid_address). So our exit is told to
  // leave it alone, and the kernel writes the child's tid there as the child
  // starts (CLONE_CHILD_SETTID). Without that, OpenSSL's exit handlers spun
  // forever in the child on a rwlock they could never take.
  int* tid_field = nullptr;
  if (::prctl(PR_GET_TID_ADDRESS, &tid_field) != 0 || tid_field == nullptr) return false;
  clone_args args{};
  args.flags = CLONE_VM | CLONE_CHILD_SETTID;  // a copy of the fd table: it holds its own references
  args.child_tid = reinterpret_cast<uint64_t>(tid_field);
  args.exit_signal = SIGCHLD;
  // Nothing may run on the stack the child goes on with but our exit; the
  // child keeps this mask (the session's signals stay blocked: a ^C to the
  // caller's process group does not cut its tear-down short).
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  rawSyscall(SYS_set_tid_address, 0);
  if (clone3ParentExits(&args, exit_code) < 0) {
    rawSyscall(SYS_set_tid_address, reinterpret_cast<long>(tid_field));
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return false;
  }
  releaseInheritedFds();
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return true;
}

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
