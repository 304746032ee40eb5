/* many_threads T ITER DIR: T threads started together, each ITER times
 * opening DIR/ok<t> for writing (must succeed) and DIR/.env for writing (must
 * fail with EACCES). Exit 0 when every attempt went as expected, else 1 with
 * the counts (and the errno of the first wrong failure) on stdout. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char* dir;
static long iterations;
static atomic_long allowed_ok, denied_ok, wrong;
static atomic_int first_wrong_errno;  /* of the first wrong outcome that failed */

static void count_wrong(int err) {
  int none = 0;
  atomic_compare_exchange_strong(&first_wrong_errno, &none, err);
  atomic_fetch_add(&wrong, 1);
}
static pthread_barrier_t start;

static void* hammer(void* arg) {
  char ok_path[4096], env_path[4096];
  snprintf(ok_path, sizeof ok_path, "%s/ok%ld", dir, (long)arg);
  snprintf(env_path, sizeof env_path, "%s/.env", dir);
  pthread_barrier_wait(&start);
  for (long i = 0; i < iterations; ++i) {
    int fd = open(ok_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      close(fd);
      atomic_fetch_add(&allowed_ok, 1);
    } else {
      count_wrong(errno);
    }
    fd = open(env_path, O_WRONLY | O_APPEND);
    if (fd < 0 && errno == EACCES) {
      atomic_fetch_add(&denied_ok, 1);
    } else {
      if (fd >= 0) close(fd);
      count_wrong(fd >= 0 ? 0 : errno);
    }
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 4) return 64;
  const long threads = atol(argv[1]);
  iterations = atol(argv[2]);
  dir = argv[3];
  pthread_t* ids = calloc((size_t)threads, sizeof *ids);
  pthread_barrier_init(&start, NULL, (unsigned)threads);
  for (long t = 0; t < threads; ++t) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    if (pthread_create(&ids[t], &attr, hammer, (void*)t) != 0) {
      perror("pthread_create");
      return 1;
    }
  }
  for (long t = 0; t < threads; ++t) pthread_join(ids[t], NULL);
  printf("allowed=%ld denied=%ld wrong=%ld\n", atomic_load(&allowed_ok), atomic_load(&denied_ok),
         atomic_load(&wrong));
  if (atomic_load(&first_wrong_errno) != 0)
    printf("first wrong failure: %s\n", strerror(atomic_load(&first_wrong_errno)));
  return atomic_load(&wrong) == 0 && atomic_load(&denied_ok) == threads * iterations ? 0 : 1;
}
