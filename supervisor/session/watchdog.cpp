// Watchdog process; see watchdog.h.
//
// Started with clone(CLONE_VM), not fork (clone_shared_vm.h says why). It
// runs alongside the supervisor for the whole session, so it touches nothing
// the supervisor owns: it runs on its own stack, from data in its own mapping
// (never unmapped, so it stays valid after the supervisor exits), and makes
// raw syscalls only. Where the header says so, it forks instead.
#include "supervisor/session/watchdog.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <csignal>
#include <cstddef>
#include <cstring>

#include "supervisor/session/clone_shared_vm.h"

namespace sv::supervisor {
namespace {

constexpr size_t kPathMax = 4096;
constexpr size_t kStackBytes = 64 * 1024;

// Everything the child reads or writes, in a mapping of its own.
struct WatchData {
  int read_end;
  char cgroup[kPathMax];       // the session cgroup
  char also_remove[kPathMax];  // a v1 pids cgroup, or ""
  char path[2 * kPathMax];     // scratch for "<cgroup>/<name>"
  char dents[4096];            // getdents64 buffer
  char events[256];            // cgroup.events
};

#if defined(__x86_64__) && !defined(SV_SANITIZED_BUILD)
// A syscall without libc: returns -errno on failure, touches no TLS.
long raw(long nr, long a1 = 0, long a2 = 0, long a3 = 0, long a4 = 0) {
  long ret;
  register long r10 asm("r10") = a4;
  asm volatile("syscall"
               : "=a"(ret)
               : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10)
               : "rcx", "r11", "memory");
  return ret;
}
#else
long raw(long nr, long a1 = 0, long a2 = 0, long a3 = 0, long a4 = 0) {
  long r = ::syscall(nr, a1, a2, a3, a4);  // forked child only: errno is its own
  return r < 0 ? -errno : r;
}
#endif

size_t length(const char* s) {
  size_t n = 0;
  while (s[n]) ++n;
  return n;
}

// d->path = base + "/" + name; false when it does not fit.
bool join(WatchData* d, const char* base, const char* name) {
  size_t b = length(base), n = length(name);
  if (b + 1 + n + 1 > sizeof d->path) return false;
  for (size_t i = 0; i < b; ++i) d->path[i] = base[i];
  d->path[b] = '/';
  for (size_t i = 0; i <= n; ++i) d->path[b + 1 + i] = name[i];
  return true;
}

void writeFile(WatchData* d, const char* name, const char* text) {
  if (!join(d, d->cgroup, name)) return;
  long fd = raw(SYS_openat, AT_FDCWD, reinterpret_cast<long>(d->path), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  raw(SYS_write, fd, reinterpret_cast<long>(text), static_cast<long>(length(text)));
  raw(SYS_close, fd);
}

bool populated(WatchData* d) {
  if (!join(d, d->cgroup, "cgroup.events")) return false;
  long fd = raw(SYS_openat, AT_FDCWD, reinterpret_cast<long>(d->path), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // gone
  long n = raw(SYS_read, fd, reinterpret_cast<long>(d->events), sizeof d->events - 1);
  raw(SYS_close, fd);
  if (n <= 0) return false;
  d->events[n] = '\0';
  const char* key = "populated 1";
  for (long i = 0; i + 11 <= n; ++i) {
    size_t k = 0;
    while (k < 11 && d->events[i + static_cast<long>(k)] == key[k]) ++k;
    if (k == 11) return true;
  }
  return false;
}

void sleep10ms() {
  const timespec ts{0, 10'000'000};
  raw(SYS_nanosleep, reinterpret_cast<long>(&ts), 0);
}

// rmdir of every directory in the cgroup (the session's child cgroups; their
// processes are dead). cgroupfs directories hold only control files else.
void removeChildren(WatchData* d) {
  long dir = raw(SYS_openat, AT_FDCWD, reinterpret_cast<long>(d->cgroup),
                 O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return;
  for (;;) {
    long n = raw(SYS_getdents64, dir, reinterpret_cast<long>(d->dents), sizeof d->dents);
    if (n <= 0) break;
    for (long at = 0; at < n;) {
      // struct linux_dirent64: d_ino, d_off, d_reclen, d_type, d_name
      const auto* rec = reinterpret_cast<const unsigned char*>(d->dents + at);
      const unsigned reclen = rec[16] | (unsigned{rec[17]} << 8);  // little-endian, no libc
      const unsigned char type = static_cast<unsigned char>(d->dents[at + 18]);
      const char* name = d->dents + at + 19;
      const bool dot = name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
      if (type == DT_DIR && !dot) {
        // The name is inside dents, joined into path: no overlap.
        if (join(d, d->cgroup, name)) raw(SYS_rmdir, reinterpret_cast<long>(d->path));
      }
      if (reclen == 0) break;
      at += reclen;
    }
  }
  raw(SYS_close, dir);
}

[[noreturn]] void exitNow() {
  for (;;) raw(SYS_exit, 0);
}

// The watchdog itself: raw syscalls on its own data only (see the top).
int watch(void* arg) {
  auto* d = static_cast<WatchData*>(arg);
  raw(SYS_setsid);  // out of the terminal's process group: Ctrl-C must not reach us
  struct KernelSigaction {  // the kernel's struct sigaction (x86-64 layout)
    void* handler;
    unsigned long flags;
    void* restorer;
    unsigned long mask;
  } ignore{reinterpret_cast<void*>(SIG_IGN), 0, nullptr, 0};
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE})
    raw(SYS_rt_sigaction, sig, reinterpret_cast<long>(&ignore), 0, 8);
  const unsigned long none = 0;
  raw(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&none), 0, 8);
  // Keep nothing else of the supervisor's open: only the pipe, moved to fd 3.
  if (d->read_end != 3) {
    raw(SYS_dup3, d->read_end, 3, 0);
    d->read_end = 3;
  }
  raw(SYS_close_range, 4, ~0U, 0);
  long devnull = raw(SYS_openat, AT_FDCWD, reinterpret_cast<long>("/dev/null"), O_RDWR);
  if (devnull >= 0) {
    for (int fd = 0; fd < 3; ++fd) raw(SYS_dup3, devnull, fd, 0);
    if (devnull > 3) raw(SYS_close, devnull);
  }
  char byte;
  while (raw(SYS_read, d->read_end, reinterpret_cast<long>(&byte), 1) == -EINTR) {
  }
  if (join(d, d->cgroup, "cgroup.procs") &&
      raw(SYS_faccessat, AT_FDCWD, reinterpret_cast<long>(d->path), F_OK) == 0) {
    for (int i = 0; i < 200 && populated(d); ++i) {  // else cleaned up already
      writeFile(d, "cgroup.kill", "1");
      sleep10ms();
    }
    removeChildren(d);  // profile-<name> cgroups: rmdir needs them gone first
    raw(SYS_rmdir, reinterpret_cast<long>(d->cgroup));
  }
  // The tree is dead: its last tasks leave the v1 cgroup as they are reaped.
  for (int i = 0; d->also_remove[0] && i < 100; ++i) {
    if (raw(SYS_rmdir, reinterpret_cast<long>(d->also_remove)) != -EBUSY) break;
    sleep10ms();
  }
  exitNow();
}

bool copyPath(char* out, const std::string& in) {
  if (in.size() >= kPathMax) return false;
  std::memcpy(out, in.c_str(), in.size() + 1);
  return true;
}

}  // namespace

Result<Watchdog> Watchdog::start(const std::string& cgroup_path, const std::string& also_remove) {
  // Data and stack in one mapping that is never unmapped: the watchdog may
  // outlive the supervisor, whose address space it shares.
  const size_t bytes = sizeof(WatchData) + kStackBytes;
  void* map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) return errnoError("mmap watchdog");
  auto* data = static_cast<WatchData*>(map);
  if (!copyPath(data->cgroup, cgroup_path) || !copyPath(data->also_remove, also_remove)) {
    ::munmap(map, bytes);
    return Error{ENAMETOOLONG, "watchdog: cgroup path too long"};
  }
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    ::munmap(map, bytes);
    return errnoError("pipe2");
  }
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  data->read_end = read_end.get();

  // One child, not a double fork: every wait of the supervisor names its pid
  // or pidfd, so the watchdog is never reaped by mistake, and it outlives us
  // like any orphan. Signals stay blocked until it has set its own up.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  long pid;
  if (kCanShareVm) {
    char* stack_top = static_cast<char*>(map) + bytes;
    pid = ::clone(watch, stack_top, CLONE_VM | SIGCHLD, data);
  } else {
    pid = ::fork();
    if (pid == 0) watch(data);
  }
  const int err = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) {
    ::munmap(map, bytes);
    return Error{err, "start the watchdog"};
  }
  return Watchdog(std::move(write_end));
}

}  // namespace sv::supervisor
