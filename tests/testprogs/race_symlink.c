/* race_symlink: swaps a file for a symlink to .env under a writer.
 *
 *   race_symlink ITERATIONS
 *
 * A thread keeps replacing "victim" (atomically, by rename) with either a
 * regular file or a symlink to .env; the main thread opens "victim" with
 * O_WRONLY|O_APPEND ITERATIONS times and writes "PWNED\n" on success. A
 * supervisor that resolves the path once to decide and lets the kernel
 * resolve it again to open loses this race; one that opens what it resolved
 * (pinned) cannot. Prints "opened=N failed=M".
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static atomic_int stop_flag;

static void* swapper(void* arg) {
  (void)arg;
  while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
    unlink("lnk.tmp");
    if (symlink(".env", "lnk.tmp") == 0) rename("lnk.tmp", "victim");
    int fd = open("reg.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) close(fd);
    rename("reg.tmp", "victim");
  }
  return NULL;
}

int main(int argc, char** argv) {
  long iterations = argc > 1 ? strtol(argv[1], NULL, 10) : 10000;
  pthread_t t;
  if (pthread_create(&t, NULL, swapper, NULL) != 0) {
    perror("pthread_create");
    return 2;
  }
  long opened = 0, failed = 0;
  for (long i = 0; i < iterations; i++) {
    int fd = open("victim", O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd >= 0) {
      ssize_t unused = write(fd, "PWNED\n", 6);
      (void)unused;
      close(fd);
      opened++;
    } else {
      failed++;
    }
  }
  atomic_store(&stop_flag, 1);
  pthread_join(t, NULL);
  printf("opened=%ld failed=%ld\n", opened, failed);
  return 0;
}
