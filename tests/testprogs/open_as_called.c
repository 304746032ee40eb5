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
 *     return the FIFO.
 * Prints one line each ("registers kept", "restart opened the fifo" or what
 * went wrong); exit 0 when both held. */
#define _GNU_SOURCE
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

int main(int argc, char** argv) {
  if (argc != 2) return 64;
  snprintf(fifo, sizeof fifo, "%s/fifo", argv[1]);
  snprintf(other, sizeof other, "%s/other", argv[1]);
  const int registers = registers_kept();
  const int restart = restart_opens_the_fifo();
  return registers && restart ? 0 : 1;
}
