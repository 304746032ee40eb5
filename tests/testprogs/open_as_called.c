/* open_as_called DIR: an open returns to the program as it was called, even
 * where the ptrace backend runs it as openat2 from its scratch region
 * (tracer/ptrace/scratch.h):
 *  1. "registers": a raw openat leaves its argument registers as they were
 *     (the syscall ABI: only rax, rcx and r11 change), which compiled code
 *     may rely on;
 *  2. "restart": a thread blocks opening DIR/fifo for writing; a signal
 *     interrupts it, and while its handler runs the main thread opens
 *     DIR/other for writing (under ptrace, from the slot the first open had
 *     used); then a reader comes, and the open SA_RESTART restarts must
 *     return the FIFO;
 *  3. "status flags": a file opened for write (made by the open, made by
 *     O_EXCL, there before, truncated) is blocking unless O_NONBLOCK was
 *     asked for, where the host backend opens it for the program (it tries
 *     an existing file non-blocking, a FIFO's open would wait).
 * Prints one line each ("registers kept", "restart opened the fifo",
 * "status flags as asked" or what went wrong); exit 0 when all held. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static char fifo[4096], other[4096];
static atomic_int writer_tid, in_handler, handler_may_return;
static int writer_fd = -1;

static void pause_ms(long ms) {
  const struct timespec t = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&t, NULL);
}

static int registers_kept(void) {
  register uint64_t rdi __asm__("rdi") = (uint64_t)AT_FDCWD;
  register uint64_t rsi __asm__("rsi") = (uint64_t)other;
  register uint64_t rdx __asm__("rdx") = O_WRONLY | O_CREAT | O_CLOEXEC;
  register uint64_t r10 __asm__("r10") = 0644;
  uint64_t rax = SYS_openat;
  __asm__ volatile("syscall"
                   : "+a"(rax), "+r"(rdi), "+r"(rsi), "+r"(rdx), "+r"(r10)
                   :
                   : "rcx", "r11", "memory");
  const int kept = rdi == (uint64_t)AT_FDCWD && rsi == (uint64_t)other &&
                   rdx == (O_WRONLY | O_CREAT | O_CLOEXEC) && r10 == 0644;
  if ((int64_t)rax < 0) {
    printf("registers: openat failed: %s\n", strerror((int)-(int64_t)rax));
    return 0;
  }
  close((int)rax);
  if (!kept)
    printf("registers changed: rdi=%#lx rsi=%#lx rdx=%#lx r10=%#lx\n", (unsigned long)rdi,
           (unsigned long)rsi, (unsigned long)rdx, (unsigned long)r10);
  else
    printf("registers kept\n");
  return kept;
}

static void on_signal(int sig) {
  (void)sig;
  atomic_store(&in_handler, 1);
  while (!atomic_load(&handler_may_return)) pause_ms(1);
}

static void* writer(void* arg) {
  (void)arg;
  atomic_store(&writer_tid, (int)syscall(SYS_gettid));
  writer_fd = open(fifo, O_WRONLY);
  return NULL;
}

static int restart_opens_the_fifo(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, NULL);
  pthread_t thread;
  if (pthread_create(&thread, NULL, writer, NULL) != 0) return 0;
  while (!atomic_load(&writer_tid)) pause_ms(1);
  pause_ms(200);  // into its open, which waits for a reader
  syscall(SYS_tgkill, getpid(), atomic_load(&writer_tid), SIGUSR1);
  while (!atomic_load(&in_handler)) pause_ms(1);
  const int fd = open(other, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) close(fd);
  atomic_store(&handler_may_return, 1);
  pause_ms(100);  // the open restarted, waiting for a reader again
  const int reader = open(fifo, O_RDONLY | O_NONBLOCK);
  pthread_join(thread, NULL);
  struct stat st;
  if (fd < 0 || reader < 0 || writer_fd < 0 || fstat(writer_fd, &st) != 0) {
    printf("restart: an open failed (other %d, reader %d, writer %d)\n", fd, reader, writer_fd);
    return 0;
  }
  const char* what = S_ISFIFO(st.st_mode)  ? "the fifo"
                     : S_ISREG(st.st_mode) ? "a regular file"
                                           : "another file";
  printf("restart opened %s\n", what);
  return S_ISFIFO(st.st_mode);
}

static int status_flags_as_asked(const char* dir) {
  static const struct {
    const char* name;
    int flags;
  } opens[] = {
      {"made", O_WRONLY | O_CREAT},
      {"made-excl", O_WRONLY | O_CREAT | O_EXCL},
      {"made", O_WRONLY | O_CREAT | O_TRUNC},  /* there now */
      {"made-excl", O_WRONLY},
      {"made-nonblock", O_WRONLY | O_CREAT | O_NONBLOCK},
      {"made-nonblock", O_RDWR | O_NONBLOCK},
  };
  int ok = 1;
  char path[4200];
  for (size_t i = 0; i < sizeof opens / sizeof opens[0]; ++i) {  /* a run before left them */
    snprintf(path, sizeof path, "%s/%s", dir, opens[i].name);
    unlink(path);
  }
  for (size_t i = 0; i < sizeof opens / sizeof opens[0]; ++i) {
    snprintf(path, sizeof path, "%s/%s", dir, opens[i].name);
    const int fd = open(path, opens[i].flags | O_CLOEXEC, 0644);
    const int got = fd < 0 ? -1 : fcntl(fd, F_GETFL);
    if (fd >= 0) close(fd);
    if (got < 0 || (got & O_NONBLOCK) != (opens[i].flags & O_NONBLOCK)) {
      printf("status flags: open %zu of %s: %s\n", i, opens[i].name,
             fd < 0 ? strerror(errno) : got & O_NONBLOCK ? "non-blocking" : "blocking");
      ok = 0;
    }
  }
  if (ok) printf("status flags as asked\n");
  return ok;
}

int main(int argc, char** argv) {
  if (argc != 2) return 64;
  snprintf(fifo, sizeof fifo, "%s/fifo", argv[1]);
  snprintf(other, sizeof other, "%s/other", argv[1]);
  const int registers = registers_kept();
  const int restart = restart_opens_the_fifo();
  const int status = status_flags_as_asked(argv[1]);
  return registers && restart && status ? 0 : 1;
}
