/* run_requests: makes each request of a differential request list with one
 * raw syscall and prints its outcome, "<index> <errno>" (0: it succeeded).
 *
 *   run_requests REQUESTS.txt     (format: tests/differential/request.h)
 *   run_requests --exit           exit 0 at once (the allowed exec target)
 *
 * The first line of the list is "dirs P0 P1 ...": directories opened
 * before the first request, the dirfds requests name by index. An exec runs
 * in a vfork'd child that reports execve's errno as its exit status; a child
 * killed by a signal is printed as 1000 + the signal. Built static, so that
 * starting it opens nothing but the list (no loader, no libc to map).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_DIRS 16
#define MAX_LINE 8192

static int dirfds[MAX_DIRS];
static int ndirs;

static int dirOf(const char* text) {
  if (strcmp(text, ".") == 0) return AT_FDCWD;
  int i = atoi(text);
  return i >= 0 && i < ndirs ? dirfds[i] : -1;
}

/* The errno of a syscall's raw result (0 when it succeeded); a returned fd is
 * closed. */
static int outcome(long rc, int close_it) {
  if (rc < 0) return errno;
  if (close_it) close((int)rc);
  return 0;
}

static int connectTo(int family, int type, const void* addr, socklen_t len) {
  int fd = socket(family, type | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  int err = connect(fd, (const struct sockaddr*)addr, len) == 0 ? 0 : errno;
  close(fd);
  return err;
}

static int inetConnect(int family, int type, const char* ip, int port) {
  if (family == AF_INET) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
    if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) return EINVAL;
    return connectTo(AF_INET, type, &a, sizeof a);
  }
  struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons((unsigned short)port)};
  if (inet_pton(AF_INET6, ip, &a.sin6_addr) != 1) return EINVAL;
  return connectTo(AF_INET6, type, &a, sizeof a);
}

static int udpSend(const char* ip, int port) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
  if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) return EINVAL;
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  int err = sendto(fd, "x", 1, 0, (const struct sockaddr*)&a, sizeof a) == 1 ? 0 : errno;
  close(fd);
  return err;
}

static int unixConnect(const char* path) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof a.sun_path) return ENAMETOOLONG;
  strcpy(a.sun_path, path);
  return connectTo(AF_UNIX, SOCK_STREAM, &a, sizeof a);
}

static int execute(const char* path) {
  char* argv[] = {(char*)path, "--exit", NULL};
  char* envp[] = {"PATH=/usr/bin:/bin", NULL};
  pid_t pid = vfork();
  if (pid < 0) return errno;
  if (pid == 0) {
    syscall(SYS_execve, path, argv, envp);
    _exit(errno & 0xff);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return errno;
  if (WIFSIGNALED(status)) return 1000 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

/* One request line (already split into fields); the errno it ended with, or -1
 * if malformed. */
static int perform(char** f, int n) {
  const char* op = f[0];
  if (n == 3 && strcmp(op, "open-read") == 0)
    return outcome(syscall(SYS_openat, dirOf(f[1]), f[2], O_RDONLY | O_CLOEXEC), 1);
  if (n == 3 && strcmp(op, "open-path") == 0)
    return outcome(syscall(SYS_openat, dirOf(f[1]), f[2], O_PATH | O_CLOEXEC), 1);
  if (n == 3 && strcmp(op, "open-write") == 0)
    return outcome(syscall(SYS_openat, dirOf(f[1]), f[2], O_WRONLY | O_CLOEXEC), 1);
  if (n == 3 && strcmp(op, "create") == 0)
    return outcome(
        syscall(SYS_openat, dirOf(f[1]), f[2], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644), 1);
  if (n == 3 && strcmp(op, "chmod") == 0)
    return outcome(syscall(SYS_fchmodat, dirOf(f[1]), f[2], 0644), 0);
  if (n == 4 && strcmp(op, "symlink") == 0)
    return outcome(syscall(SYS_symlinkat, f[3], dirOf(f[1]), f[2]), 0);
  if (n == 3 && strcmp(op, "unlink") == 0)
    return outcome(syscall(SYS_unlinkat, dirOf(f[1]), f[2], 0), 0);
  if (n == 3 && strcmp(op, "rmdir") == 0)
    return outcome(syscall(SYS_unlinkat, dirOf(f[1]), f[2], AT_REMOVEDIR), 0);
  if (n == 3 && strcmp(op, "mkdir") == 0)
    return outcome(syscall(SYS_mkdirat, dirOf(f[1]), f[2], 0755), 0);
  if (n == 5 && strcmp(op, "rename") == 0)
    return outcome(syscall(SYS_renameat2, dirOf(f[1]), f[2], dirOf(f[3]), f[4], 0), 0);
  if (n == 5 && strcmp(op, "link") == 0)
    return outcome(syscall(SYS_linkat, dirOf(f[1]), f[2], dirOf(f[3]), f[4], 0), 0);
  if (n == 2 && strcmp(op, "exec") == 0) return execute(f[1]);
  if (n == 3 && strcmp(op, "tcp4") == 0) return inetConnect(AF_INET, SOCK_STREAM, f[1], atoi(f[2]));
  if (n == 3 && strcmp(op, "udp4") == 0) return inetConnect(AF_INET, SOCK_DGRAM, f[1], atoi(f[2]));
  if (n == 3 && strcmp(op, "udp4-send") == 0) return udpSend(f[1], atoi(f[2]));
  if (n == 3 && strcmp(op, "tcp6") == 0)
    return inetConnect(AF_INET6, SOCK_STREAM, f[1], atoi(f[2]));
  if (n == 2 && strcmp(op, "unix") == 0) return unixConnect(f[1]);
  return -1;
}

static int split(char* line, char** fields, int max) {
  int n = 0;
  for (char* tok = strtok(line, " \n"); tok && n < max; tok = strtok(NULL, " \n"))
    fields[n++] = tok;
  return n;
}

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "--exit") == 0) return 0;
  if (argc != 2) {
    fprintf(stderr, "usage: run_requests REQUESTS.txt | --exit\n");
    return 2;
  }
  /* Line-buffered: when a request hangs, the output ends just before it. */
  setvbuf(stdout, NULL, _IOLBF, 0);
  FILE* in = fopen(argv[1], "re");
  if (!in) {
    perror(argv[1]);
    return 2;
  }
  static char line[MAX_LINE];
  char* d[MAX_DIRS + 1];
  int nd = fgets(line, sizeof line, in) ? split(line, d, MAX_DIRS + 1) : 0;
  if (nd < 1 || strcmp(d[0], "dirs") != 0) {
    fprintf(stderr, "%s: the first line must be 'dirs ...'\n", argv[1]);
    return 2;
  }
  for (int i = 1; i < nd; ++i) {
    /* Not O_PATH: the host backend fails notified O_PATH opens (README.md). */
    dirfds[ndirs] = open(d[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfds[ndirs] < 0) {
      perror(d[i]);
      return 2;
    }
    ++ndirs;
  }
  char* f[8];
  long index = 0;
  while (fgets(line, sizeof line, in)) {
    int n = split(line, f, 8);
    if (n == 0) continue;
    int err = perform(f, n);
    if (err < 0) {
      fprintf(stderr, "request %ld: malformed\n", index);
      return 2;
    }
    printf("%ld %d\n", index++, err);
  }
  fclose(in);
  return fflush(stdout) == 0 ? 0 : 1;
}
