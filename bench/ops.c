/* Per-operation micro-benchmark for tools/bench.
 *
 * `ops OP N` runs one operation N times in the current directory and prints one JSON object:
 * mean, median and p99 nanoseconds per operation. Each op is timed individually (clock_gettime
 * around it) so the p99 of a user-notified op shows the supervisor round-trip tail, not just its
 * mean. Ops: open_read, open_write (existing file), create_unlink, stat, fork_exec (/bin/true),
 * connect (to a listener this process opens on 127.0.0.1; never leaves loopback), getpid (a
 * syscall every filter lets through: what the filters cost), open_outside (a read-only open
 * of $SV_OPS_OUTSIDE, a file outside the roots: natively it opens, supervised Landlock refuses
 * it and the kernel writes the audit record supervise reads).
 * A short warm-up (N/10) is run first and not timed, so first-touch costs (page cache, the
 * supervisor's process-cache fill) don't land in the figures.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int listen_fd = -1;
static struct sockaddr_in listen_addr;

static void die(const char *what) {
  fprintf(stderr, "ops: %s: %s\n", what, strerror(errno));
  exit(1);
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void op_open_read(void) {
  int fd = open("ops-read.dat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) die("open O_RDONLY");
  close(fd);
}

static const char *outside_path;
static void op_open_outside(void) {
  int fd = open(outside_path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) close(fd);
  else if (errno != EACCES) die("open outside");
}

static void op_getpid(void) { (void)getpid(); }

static void op_open_write(void) {
  /* O_WRONLY without O_CREAT/O_TRUNC: a write-intent open of an existing file. */
  int fd = open("ops-write.dat", O_WRONLY | O_CLOEXEC);
  if (fd < 0) die("open O_WRONLY");
  close(fd);
}

static void op_create_unlink(void) {
  int fd = open("ops-new.dat", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) die("open O_CREAT");
  close(fd);
  if (unlink("ops-new.dat") != 0) die("unlink");
}

static void op_stat(void) {
  struct stat st;
  if (stat("ops-read.dat", &st) != 0) die("stat");
}

static void op_fork_exec(void) {
  pid_t pid = fork();
  if (pid < 0) die("fork");
  if (pid == 0) {
    char *const argv[] = {"/bin/true", NULL};
    char *const envp[] = {NULL};
    execve("/bin/true", argv, envp);
    _exit(127);
  }
  int status;
  if (waitpid(pid, &status, 0) < 0) die("waitpid");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "ops: /bin/true exited with status 0x%x\n", status);
    exit(1);
  }
}

static void op_connect(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) die("socket");
  if (connect(fd, (struct sockaddr *)&listen_addr, sizeof listen_addr) != 0) die("connect");
  int peer = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
  if (peer < 0) die("accept");
  close(peer);
  close(fd);
}

static void setup(const char *op) {
  if (strcmp(op, "open_read") == 0 || strcmp(op, "stat") == 0) {
    int fd = open("ops-read.dat", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) die("create ops-read.dat");
    close(fd);
  } else if (strcmp(op, "open_write") == 0) {
    int fd = open("ops-write.dat", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) die("create ops-write.dat");
    close(fd);
  } else if (strcmp(op, "create_unlink") == 0) {
    unlink("ops-new.dat");
  } else if (strcmp(op, "connect") == 0) {
    listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd < 0) die("socket");
    memset(&listen_addr, 0, sizeof listen_addr);
    listen_addr.sin_family = AF_INET;
    listen_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listen_fd, (struct sockaddr *)&listen_addr, sizeof listen_addr) != 0) die("bind");
    socklen_t len = sizeof listen_addr;
    if (getsockname(listen_fd, (struct sockaddr *)&listen_addr, &len) != 0) die("getsockname");
    if (listen(listen_fd, 16) != 0) die("listen");
  }
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr,
            "usage: ops OP N\n  OP: open_read open_write create_unlink stat fork_exec connect\n");
    return 2;
  }
  const char *op = argv[1];
  long n = strtol(argv[2], NULL, 10);
  if (n <= 0) {
    fprintf(stderr, "ops: N must be > 0\n");
    return 2;
  }
  void (*fn)(void) = NULL;
  if (strcmp(op, "open_read") == 0) fn = op_open_read;
  else if (strcmp(op, "open_write") == 0) fn = op_open_write;
  else if (strcmp(op, "create_unlink") == 0) fn = op_create_unlink;
  else if (strcmp(op, "stat") == 0) fn = op_stat;
  else if (strcmp(op, "fork_exec") == 0) fn = op_fork_exec;
  else if (strcmp(op, "connect") == 0) fn = op_connect;
  else if (strcmp(op, "getpid") == 0) fn = op_getpid;
  else if (strcmp(op, "open_outside") == 0) {
    outside_path = getenv("SV_OPS_OUTSIDE");
    if (!outside_path) die("SV_OPS_OUTSIDE unset");
    fn = op_open_outside;
  }
  if (fn == NULL) {
    fprintf(stderr, "ops: unknown op %s\n", op);
    return 2;
  }
  setup(op);
  for (long i = 0; i < n / 10; i++) fn();

  uint64_t *lat = malloc(sizeof(uint64_t) * (size_t)n);
  if (lat == NULL) die("malloc");
  uint64_t total_start = now_ns();
  for (long i = 0; i < n; i++) {
    uint64_t t0 = now_ns();
    fn();
    lat[i] = now_ns() - t0;
  }
  uint64_t total = now_ns() - total_start;
  qsort(lat, (size_t)n, sizeof lat[0], cmp_u64);
  long p99 = (n * 99) / 100;
  if (p99 >= n) p99 = n - 1;
  printf("{\"op\":\"%s\",\"n\":%ld,\"mean_ns\":%.1f,\"median_ns\":%llu,\"p99_ns\":%llu}\n", op, n,
         (double)total / (double)n, (unsigned long long)lat[n / 2],
         (unsigned long long)lat[p99]);
  free(lat);
  if (listen_fd >= 0) close(listen_fd);
  return 0;
}
