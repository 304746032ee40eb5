/* kernel_denials: makes N distinct operations of each class the kernel
 * refuses on its own under supervise, and prints one line per class with how
 * many failed as expected:
 *
 *   kernel_denials N OUTSIDE_DIR ABSTRACT_NAME [N_FOREIGN]
 *
 * OUTSIDE_DIR holds files f0..f(N-1) and directories d0..d(N-1) outside every
 * readable root; ABSTRACT_NAME names an abstract unix socket a process
 * outside the tree listens on. Classes: read (Landlock fs.read_file),
 * readdir (fs.read_dir), signal (Landlock scope: signal 0 to our parent,
 * which is supervise), abstract (Landlock scope: abstract socket), and the
 * seccomp filter's refusals ptrace, bpf, io_uring_setup, mount, unshare
 * (CLONE_NEWUSER); foreign: N_FOREIGN (default 0: a host where int 0x80 runs
 * no syscall has nothing to refuse) children each make one i386 syscall (int 0x80)
 * and are killed by the filter (each reaped after a pause: see
 * docs/audit-events.md on what a reaped process means for attribution).
 * Exit 0 when every operation failed the way the kernel refuses it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

static int failures;

static void report(const char *cls, int n, int ok) {
  printf("%s %d/%d\n", cls, ok, n);
  if (ok != n) failures++;
}

int main(int argc, char **argv) {
  if (argc != 4 && argc != 5) {
    fprintf(stderr, "usage: kernel_denials N OUTSIDE_DIR ABSTRACT_NAME [N_FOREIGN]\n");
    return 2;
  }
  const int n = atoi(argv[1]);
  const char *dir = argv[2], *name = argv[3];
  const int n_foreign = argc == 5 ? atoi(argv[4]) : 0;
  char path[4096];
  int ok;

  ok = 0;
  for (int i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/f%d", dir, i);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == EACCES) ok++;
    if (fd >= 0) close(fd);
  }
  report("read", n, ok);

  ok = 0;
  for (int i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/d%d", dir, i);
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 && errno == EACCES) ok++;
    if (fd >= 0) close(fd);
  }
  report("readdir", n, ok);

  ok = 0;
  for (int i = 0; i < n; i++)
    if (kill(getppid(), 0) != 0 && errno == EPERM) ok++;
  report("signal", n, ok);

  ok = 0;
  for (int i = 0; i < n; i++) {
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    size_t len = strlen(name);
    memcpy(a.sun_path + 1, name, len);
    if (connect(s, (struct sockaddr *)&a, (socklen_t)(sizeof(sa_family_t) + 1 + len)) != 0 &&
        errno == EPERM)
      ok++;
    close(s);
  }
  report("abstract", n, ok);

  ok = 0;
  for (int i = 0; i < n; i++)
    if (ptrace(PTRACE_TRACEME, 0, 0, 0) != 0 && errno == EPERM) ok++;
  report("ptrace", n, ok);
  ok = 0;
  for (int i = 0; i < n; i++)
    if (syscall(SYS_bpf, 0, NULL, 0) != 0 && errno == EPERM) ok++;
  report("bpf", n, ok);
  ok = 0;
  for (int i = 0; i < n; i++)
    if (syscall(SYS_io_uring_setup, 1, NULL) != 0 && errno == EPERM) ok++;
  report("io_uring_setup", n, ok);
  ok = 0;
  for (int i = 0; i < n; i++)
    if (mount("none", "/tmp", "tmpfs", 0, NULL) != 0 && errno == EPERM) ok++;
  report("mount", n, ok);
  ok = 0;
  for (int i = 0; i < n; i++)
    if (unshare(CLONE_NEWUSER) != 0 && errno == EPERM) ok++;
  report("unshare", n, ok);

  ok = 0;
  for (int i = 0; i < n_foreign; i++) {
    pid_t pid = fork();
    if (pid == 0) {
      __asm__ volatile("int $0x80" : : "a"(20) : "memory"); /* i386 getpid */
      _exit(0);
    }
    struct timespec pause = {0, 50 * 1000 * 1000};
    nanosleep(&pause, NULL);
    int status = 0;
    if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) &&
        WTERMSIG(status) == SIGSYS)
      ok++;
  }
  report("foreign", n_foreign, ok);
  fflush(stdout);
  return failures ? 1 : 0;
}
