/* notify_floor.c: the least a seccomp user-notify round trip can cost on this
 * host, for an open for write of an existing file (docs/performance.md,
 * "Session 22"). One process: openat is notified, a thread of the same
 * process answers. Not built by CMake; by hand:
 *   gcc -O2 -pthread -o /tmp/floor bench/notify_floor.c
 *   for m in native continue work addfd; do /tmp/floor $m 20000; done
 * native    no filter: the open itself;
 * continue  poll (SYNC_WAKE_UP) + RECV + SEND CONTINUE: the kernel opens;
 * work      continue, plus what supervise needs to decide an open of a
 *           single name (process_vm_readv of the path, readlink of the
 *           cwd, fstatat of the name): its six syscalls;
 * addfd     poll + RECV + ADDFD|SEND of a file opened beforehand: emulation
 *           without the supervisor's own open (ADDFD waits for the target).
 * Prints the median and p99 per open. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP 1
#endif

static const char *kFile = "notify-floor.dat";
static int listener, prepared_fd;
static const char *mode;

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void *answer(void *unused) {
  (void)unused;
  struct seccomp_notif req;
  for (;;) {
    struct pollfd p = {listener, POLLIN, 0};
    if (poll(&p, 1, -1) < 0) continue;
    memset(&req, 0, sizeof req);
    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
      if (errno == EINTR || errno == ENOENT) continue;
      return NULL;
    }
    if (!strcmp(mode, "addfd")) {
      struct seccomp_notif_addfd add = {.id = req.id, .flags = SECCOMP_ADDFD_FLAG_SEND,
                                        .srcfd = (uint32_t)prepared_fd, .newfd_flags = O_CLOEXEC};
      ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add);
      continue;
    }
    if (!strcmp(mode, "work")) {
      char path[4096], cwd[4096], link[64];
      struct iovec local = {path, sizeof path}, remote = {(void *)req.data.args[1], 256};
      process_vm_readv((pid_t)req.pid, &local, 1, &remote, 1, 0);
      snprintf(link, sizeof link, "/proc/%d/cwd", req.pid);
      if (readlink(link, cwd, sizeof cwd) < 0) perror("readlink");
      struct stat st;
      fstatat(AT_FDCWD, kFile, &st, AT_SYMLINK_NOFOLLOW);
    }
    struct seccomp_notif_resp resp = {.id = req.id, .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE};
    ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
  }
}

static int compare(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: notify_floor native|continue|work|addfd [N]\n");
    return 2;
  }
  mode = argv[1];
  const int n = argc > 2 ? atoi(argv[2]) : 20000;
  close(open(kFile, O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
  prepared_fd = open(kFile, O_WRONLY | O_CLOEXEC);
  uint64_t *t = malloc(sizeof *t * (size_t)n);
  if (strcmp(mode, "native")) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    struct sock_fprog prog = {4, f};
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    listener = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                            SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    if (listener < 0) {
      perror("seccomp");
      return 1;
    }
    ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, 0);
    pthread_t thread;
    pthread_create(&thread, NULL, answer, NULL);
  }
  for (int i = -n / 10; i < n; i++) {  // a tenth as warm-up
    const uint64_t t0 = now_ns();
    const int fd = (int)syscall(SYS_openat, AT_FDCWD, kFile, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      perror("open");
      return 1;
    }
    close(fd);
    if (i >= 0) t[i] = now_ns() - t0;
  }
  qsort(t, (size_t)n, sizeof *t, compare);
  printf("%s: median %.2f us, p99 %.2f us\n", mode, t[n / 2] / 1000.0, t[n * 99 / 100] / 1000.0);
  unlink(kFile);
  return 0;
}
