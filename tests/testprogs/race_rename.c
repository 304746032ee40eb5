/* race_rename: the rename flavour of race_open.
 *
 *   race_rename onto|away ITERATIONS
 *
 * A thread flips a shared path buffer between "ok.txt" and ".env".
 *   onto: each iteration creates "src" (content "PWNED\n") and calls
 *         rename("src", buf): winning the race replaces .env.
 *   away: each iteration (re)creates "ok.txt" and calls rename(buf, "moved"):
 *         winning the race moves .env out of the way.
 * Prints "renamed=N failed=M"; the test asserts .env is untouched.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static _Alignas(8) char path_buf[8];
static atomic_int stop_flag;

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
  const unsigned long long ok = wordOf("ok.txt"), env = wordOf(".env");
  while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
    setPath(ok);
    setPath(env);
  }
  return NULL;
}

static void createFile(const char* name) {
  int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    ssize_t unused = write(fd, "PWNED\n", 6);
    (void)unused;
    close(fd);
  }
}

int main(int argc, char** argv) {
  if (argc < 2 || (strcmp(argv[1], "onto") != 0 && strcmp(argv[1], "away") != 0)) {
    fprintf(stderr, "usage: race_rename onto|away [ITERATIONS]\n");
    return 2;
  }
  const int onto = strcmp(argv[1], "onto") == 0;
  long iterations = argc > 2 ? strtol(argv[2], NULL, 10) : 100000;
  setPath(wordOf("ok.txt"));
  pthread_t t;
  if (pthread_create(&t, NULL, flipper, NULL) != 0) {
    perror("pthread_create");
    return 2;
  }
  long renamed = 0, failed = 0;
  for (long i = 0; i < iterations; i++) {
    int rc;
    if (onto) {
      createFile("src");
      rc = rename("src", path_buf);
    } else {
      createFile("ok.txt");
      rc = rename(path_buf, "moved");
    }
    if (rc == 0)
      renamed++;
    else
      failed++;
  }
  atomic_store(&stop_flag, 1);
  pthread_join(t, NULL);
  printf("renamed=%ld failed=%ld\n", renamed, failed);
  return 0;
}
