/* fifo_writers N DIR: N threads of one process each open DIR/fifo<i> for
 * writing at once; the opens block until a reader comes, which a child (an
 * address space of its own) brings only once every thread has started and
 * had time to reach its open. Under the ptrace backend each blocked open
 * holds one of its address space's scratch slots (tracer/ptrace/scratch.h),
 * so more threads than slots must wait for one, not fail. Prints
 * "opened=X failed=Y" and the errno of each failure; exit 0 when all opened. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char* dir;
static atomic_long started, opened, failed;

static void* writer(void* arg) {
  char path[4096];
  snprintf(path, sizeof path, "%s/fifo%ld", dir, (long)arg);
  atomic_fetch_add(&started, 1);
  const int fd = open(path, O_WRONLY);
  if (fd >= 0) {
    close(fd);
    atomic_fetch_add(&opened, 1);
  } else {
    printf("open %s: %s\n", path, strerror(errno));
    atomic_fetch_add(&failed, 1);
  }
  return NULL;
}

/* The reader: on "go", opens every FIFO's read end and keeps them open
 * until the parent closes the pipe. */
static void reader(int go, long n) {
  char byte;
  if (read(go, &byte, 1) != 1) _exit(2);
  for (long i = 0; i < n; ++i) {
    char path[4096];
    snprintf(path, sizeof path, "%s/fifo%ld", dir, i);
    if (open(path, O_RDONLY | O_NONBLOCK) < 0) {
      printf("reader: open %s: %s\n", path, strerror(errno));
      _exit(3);
    }
  }
  while (read(go, &byte, 1) > 0) {
  }
  _exit(0);
}

int main(int argc, char** argv) {
  if (argc != 3) return 64;
  const long n = atol(argv[1]);
  dir = argv[2];
  int go[2];
  if (pipe(go) != 0) return 70;
  fflush(stdout);
  const pid_t child = fork();
  if (child < 0) return 71;
  if (child == 0) {
    close(go[1]);
    reader(go[0], n);
  }
  close(go[0]);
  pthread_t* ids = calloc((size_t)n, sizeof *ids);
  for (long t = 0; t < n; ++t) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    if (pthread_create(&ids[t], &attr, writer, (void*)t) != 0) return 72;
  }
  while (atomic_load(&started) < n) usleep(1000);
  const struct timespec settle = {0, 300 * 1000 * 1000};  // every thread into its open
  nanosleep(&settle, NULL);
  if (write(go[1], "g", 1) != 1) return 73;
  for (long t = 0; t < n; ++t) pthread_join(ids[t], NULL);
  close(go[1]);
  int status = 0;
  waitpid(child, &status, 0);
  printf("opened=%ld failed=%ld reader=%d\n", atomic_load(&opened), atomic_load(&failed),
         WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  return atomic_load(&failed) == 0 && status == 0 ? 0 : 1;
}
