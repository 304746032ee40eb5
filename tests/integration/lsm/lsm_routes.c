/* lsm_routes: one syscall route to a file, program or address, for the
 * BPF-LSM acceptance test (lsm_session_test.cpp) to run under `supervise`.
 *
 *   lsm_routes OP ARG...   exits with the errno of the attempt (0: it worked)
 *   lsm_routes batch 'OP ARG...'...   runs each in turn in this one process
 *                          and prints "R OP ARG1 ERRNO" for each
 *   lsm_routes move-race DEST ROUNDS DELAY_US   creates x/config DELAY_US
 *                          into each rename("x", DEST); exits 66 if
 *                          DEST/config ever appears (protected), else 0
 *
 * A small C program rather than shell/python: each route is exactly one
 * syscall with known flags, and its errno (EACCES = the policy's denial)
 * is the exit status. Under TCG every exec of a dynamic binary costs about
 * a second, hence the batch form. Network routes only ever target loopback or documentation
 * addresses (RFC 5737) or unix sockets, and the guest that runs them has no
 * network device.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static int result(long rc) { return rc < 0 ? errno : 0; }

static int openWith(const char *path, int flags) {
  int fd = open(path, flags | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  /* A write through the fd, as a real writer would do next. */
  if ((flags & O_ACCMODE) != O_RDONLY && write(fd, "evil\n", 5) < 0) return errno;
  close(fd);
  return 0;
}

static int inetAddr(const char *ip, const char *port, struct sockaddr_in *a) {
  memset(a, 0, sizeof(*a));
  a->sin_family = AF_INET;
  a->sin_port = htons((unsigned short)atoi(port));
  return inet_pton(AF_INET, ip, &a->sin_addr) == 1 ? 0 : EINVAL;
}

/* "ping" over a connected stream socket; the peer must answer "pong". */
static int pingPong(int fd) {
  char reply[4];
  if (write(fd, "ping", 4) != 4) return errno;
  ssize_t n = read(fd, reply, sizeof reply);
  if (n < 0) return errno;
  return n == 4 && !memcmp(reply, "pong", 4) ? 0 : EPROTO;
}

/* unix-connect (stream, ping-pong), unix-sendto (datagram with an address),
 * unix-dgram-connect (datagram connect, then a send to the connected peer). */
static int unixRoute(const char *op, const char *path) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof addr.sun_path) return ENAMETOOLONG;
  strcpy(addr.sun_path, path);
  const int stream = !strcmp(op, "unix-connect");
  int fd = socket(AF_UNIX, (stream ? SOCK_STREAM : SOCK_DGRAM) | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  /* Never hang the session on a peer that does not answer. */
  struct timeval tv = {.tv_sec = 10};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  int rc;
  if (!strcmp(op, "unix-sendto")) {
    rc = result(sendto(fd, "ping", 4, 0, (struct sockaddr *)&addr, sizeof addr));
  } else {
    rc = result(connect(fd, (struct sockaddr *)&addr, sizeof addr));
    if (rc == 0) rc = stream ? pingPong(fd) : result(send(fd, "ping", 4, 0));
  }
  close(fd);
  return rc;
}

static int route(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: lsm_routes OP ARG... | lsm_routes batch 'OP ARG...'...\n");
    return 100;
  }
  const char *op = argv[1], *a = argv[2], *b = argc > 3 ? argv[3] : NULL;
  if (!strcmp(op, "read")) return openWith(a, O_RDONLY);
  if (!strcmp(op, "write")) return openWith(a, O_WRONLY);
  if (!strcmp(op, "append")) return openWith(a, O_WRONLY | O_APPEND);
  if (!strcmp(op, "trunc")) return openWith(a, O_WRONLY | O_TRUNC);
  if (!strcmp(op, "rdonly-trunc")) return openWith(a, O_RDONLY | O_TRUNC);
  if (!strcmp(op, "creat")) return openWith(a, O_WRONLY | O_CREAT | O_TRUNC);
  if (!strcmp(op, "truncate")) return result(truncate(a, 0));
  if (!strcmp(op, "unlink")) return result(unlink(a));
  if (!strcmp(op, "mkdir")) return result(mkdir(a, 0755));
  if (!strcmp(op, "chmod")) return result(chmod(a, 0777));
  if (!strcmp(op, "chown")) return result(chown(a, 1, 1));
  if (!strcmp(op, "utimes")) return result(utimes(a, NULL));
  if (b && !strcmp(op, "rename")) return result(rename(a, b));
  if (b && !strcmp(op, "link")) return result(link(a, b));
  if (b && !strcmp(op, "symlink")) return result(symlink(a, b));
  if (!strcmp(op, "exec")) {
    pid_t pid = fork();
    if (pid == 0) {
      execv(a, argv + 2);
      _exit(errno);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0) return errno;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  if (b && (!strcmp(op, "connect") || !strcmp(op, "sendto"))) {
    struct sockaddr_in addr;
    if (inetAddr(a, b, &addr)) return EINVAL;
    int udp = !strcmp(op, "sendto");
    int fd = socket(AF_INET, (udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);
    if (fd < 0) return errno;
    long rc = udp ? sendto(fd, "x", 1, 0, (struct sockaddr *)&addr, sizeof addr)
                  : connect(fd, (struct sockaddr *)&addr, sizeof addr);
    return result(rc);
  }
  if (!strncmp(op, "unix-", 5)) return unixRoute(op, a);
  fprintf(stderr, "lsm_routes: unknown op %s\n", op);
  return 100;
}

/* Creates x/config after DELAY_US while the main thread moves x: a create
 * landing after the handler's walk of x and before its rename would put a
 * file under DEST/ that no create check saw there. The test widens that
 * window (SUPERVISE_TEST_RENAME_PAUSE_MS) so the delay lands in it. */
static void *creator(void *arg) {
  usleep((useconds_t)(long)arg);
  int fd = open("x/config", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  printf("create x/config %d\n", fd >= 0 ? 0 : errno);
  if (fd >= 0) close(fd);
  return NULL;
}

static int moveRace(const char *dest, int rounds, long delay_us) {
  char config[4096];
  snprintf(config, sizeof config, "%s/config", dest);
  int moved = 0, refused = 0, escaped = 0;
  for (int i = 0; i < rounds && !escaped; i++) {
    if (mkdir("x", 0755) != 0 && errno != EEXIST) return errno;
    pthread_t t;
    if (pthread_create(&t, NULL, creator, (void *)delay_us) != 0) return EAGAIN;
    int rc = rename("x", dest);
    pthread_join(t, NULL);
    struct stat st;
    if (rc == 0) {
      moved++;
      escaped = stat(config, &st) == 0;
      if (!escaped && rmdir(dest) != 0) return errno;
    } else {
      refused++;
    }
    unlink("x/config");
    rmdir("x");
  }
  printf("move-race moved=%d refused=%d escaped=%d\n", moved, refused, escaped);
  fflush(stdout);
  return escaped ? 66 : 0;
}

int main(int argc, char **argv) {
  if (argc == 5 && !strcmp(argv[1], "move-race"))
    return moveRace(argv[2], atoi(argv[3]), atol(argv[4]));
  if (argc < 2 || strcmp(argv[1], "batch") != 0) return route(argc, argv);
  for (int i = 2; i < argc; i++) {
    char *words[8] = {argv[0]};
    int n = 1;
    for (char *w = strtok(argv[i], " "); w && n < 7; w = strtok(NULL, " ")) words[n++] = w;
    words[n] = NULL;
    int rc = route(n, words);
    printf("R %s %s %d\n", n > 1 ? words[1] : "?", n > 2 ? words[2] : "?", rc);
    fflush(stdout);
  }
  return 0;
}
