/* Process, ABI and privilege escape attempts.
 *
 *   escape_proc CASE [ARG]
 *
 * Cases: foreign ABIs (int 0x80, x32), io_uring, clone3/namespaces, ptrace
 * and memory access to the supervisor or a sibling, signals to the
 * supervisor or an outside process (ARG = its pid), capabilities a command
 * started as root could have kept, file handles, the session's pids limit.
 * Exit 0: every attempt failed; 66: one succeeded; 2: setup failed.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sched.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attack.h"

/* Runs fn in a child and reports how the child ended: a foreign-ABI syscall
 * must kill it (SIGSYS from the seccomp filter), never return. */
static void mustKill(const char* what, void (*fn)(void)) {
  pid_t pid = fork();
  setupOk("fork", pid);
  if (pid == 0) {
    fn();
    _exit(0); /* the syscall returned: the filter let it through */
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) {
    printf("blocked %s signal=%d\n", what, WTERMSIG(status));
  } else {
    printf("ESCAPED %s (child exited %d)\n", what, WEXITSTATUS(status));
    g_escaped = 1;
  }
}

static void i386GetPid(void) {
  long ret = 20; /* __NR_getpid on i386 */
  __asm__ volatile("int $0x80" : "+a"(ret) : : "memory");
}

static void x32GetPid(void) { syscall(0x40000000L | SYS_getpid); }

static void x32Ptrace(void) {
  syscall(0x40000000L | 521 /* x32 ptrace */, PTRACE_TRACEME, 0, 0, 0);
}

static void foreignAbi(void) {
  mustKill("int 0x80 (i386 getpid)", i386GetPid);
  mustKill("x32 getpid", x32GetPid);
  mustKill("x32 ptrace", x32Ptrace);
}

static void ioUring(void) {
  struct io_uring_params p;
  memset(&p, 0, sizeof p);
  mustFail("io_uring_setup", syscall(SYS_io_uring_setup, 8, &p));
  mustFail("io_uring_enter", syscall(SYS_io_uring_enter, 0, 1, 0, 0, NULL, 0));
  mustFail("io_uring_register", syscall(SYS_io_uring_register, 0, 0, NULL, 0));
}

static void namespaces(void) {
  struct clone_args args;
  memset(&args, 0, sizeof args);
  args.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET;
  args.exit_signal = SIGCHLD;
  long pid = syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) _exit(0);
  mustFail("clone3(NEWUSER|NEWNS|NEWNET)", pid);
  pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
  if (pid == 0) _exit(0);
  mustFail("clone(CLONE_NEWUSER)", pid);
  pid = syscall(SYS_clone, CLONE_NEWNS | CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0);
  if (pid == 0) _exit(0);
  mustFail("clone(CLONE_NEWNS|CLONE_NEWNET)", pid);
  mustFail("unshare(CLONE_NEWUSER)", unshare(CLONE_NEWUSER));
  mustFail("unshare(CLONE_NEWNS)", unshare(CLONE_NEWNS));
  mustFail("unshare(CLONE_NEWNET)", unshare(CLONE_NEWNET));
  int nsfd = open("/proc/1/ns/mnt", O_RDONLY | O_CLOEXEC);
  mustFail("setns(/proc/1/ns/mnt)", nsfd < 0 ? -1 : setns(nsfd, 0));
  mustFail("mount tmpfs", syscall(SYS_mount, "none", "/tmp", "tmpfs", 0, NULL));
}

static pid_t spawnSibling(void) {
  pid_t sib = fork();
  setupOk("fork sibling", sib);
  if (sib == 0) {
    for (;;) pause();
  }
  return sib;
}

static void memoryAccess(pid_t victim, const char* who) {
  char what[128], path[64];
  static char target_byte = 'x';
  char byte = 'P';
  struct iovec local = {&byte, 1}, remote = {&target_byte, 1};
  snprintf(what, sizeof what, "ptrace(ATTACH, %s)", who);
  mustFail(what, ptrace(PTRACE_ATTACH, victim, 0, 0));
  snprintf(what, sizeof what, "ptrace(SEIZE, %s)", who);
  mustFail(what, ptrace(PTRACE_SEIZE, victim, 0, 0));
  snprintf(what, sizeof what, "process_vm_writev(%s)", who);
  mustFail(what, process_vm_writev(victim, &local, 1, &remote, 1, 0));
  snprintf(path, sizeof path, "/proc/%d/mem", victim);
  snprintf(what, sizeof what, "open(/proc/%s/mem, O_RDWR)", who);
  int fd = open(path, O_RDWR | O_CLOEXEC);
  mustFail(what, fd);
  if (fd >= 0) close(fd);
  /* A sibling is in the same sandbox: taking its fds grants nothing new. */
  int pidfd = victim == getppid() ? (int)syscall(SYS_pidfd_open, victim, 0) : -1;
  if (pidfd >= 0) {
    snprintf(what, sizeof what, "pidfd_getfd(%s, 0)", who);
    mustFail(what, syscall(SYS_pidfd_getfd, pidfd, 0, 0));
    close(pidfd);
  }
}

static void ptraceCase(void) {
  /* The supervisor first: the one whose memory holds the policy. */
  memoryAccess(getppid(), "SUPERVISOR");
  char byte;
  struct iovec local = {&byte, 1}, remote = {(void*)0x400000, 1};
  mustFail("process_vm_readv(SUPERVISOR)", process_vm_readv(getppid(), &local, 1, &remote, 1, 0));
  pid_t sib = spawnSibling();
  memoryAccess(sib, "SIBLING");
  kill(sib, SIGKILL);
  waitpid(sib, NULL, 0);
}

/* ARG: the pid of a process outside the session, owned by the same uid. */
static void signals(void) {
  const char* outside = g_arg;
  if (!outside) setupOk("signals needs a pid", -1);
  pid_t sv = getppid();
  /* Signal 0 first: a success proves reach without doing harm. */
  mustFail("kill(SUPERVISOR, 0)", kill(sv, 0));
  mustFail("kill(SUPERVISOR, SIGSTOP)", kill(sv, SIGSTOP));
  if (kill(sv, 0) == 0) kill(sv, SIGCONT);
  int pidfd = (int)syscall(SYS_pidfd_open, sv, 0);
  mustFail("pidfd_send_signal(SUPERVISOR, SIGTERM)",
           pidfd < 0 ? -1 : syscall(SYS_pidfd_send_signal, pidfd, SIGTERM, NULL, 0));
  pid_t out = (pid_t)atoi(outside);
  mustFail("kill(OUTSIDE, SIGKILL)", kill(out, SIGKILL));
  mustFail("setpgid(SUPERVISOR)", setpgid(sv, getpgrp()));
}

static int statusField(const char* name, char* out, size_t len) {
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  size_t n = strlen(name);
  int found = -1;
  while (fgets(line, sizeof line, f)) {
    if (!strncmp(line, name, n) && line[n] == ':') {
      char* v = line + n + 1;
      while (*v == ' ' || *v == '\t') v++;
      v[strcspn(v, "\n")] = '\0';
      snprintf(out, len, "%s", v);
      found = 0;
    }
  }
  fclose(f);
  return found;
}

/* RTM_NEWLINK for a dummy interface: needs CAP_NET_ADMIN. */
static long netlinkNewLink(void) {
  int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (s < 0) return -1;
  struct {
    struct nlmsghdr nh;
    struct ifinfomsg ifi;
    char attrs[64];
  } req;
  memset(&req, 0, sizeof req);
  struct rtattr* name = (struct rtattr*)req.attrs;
  name->rta_type = IFLA_IFNAME;
  name->rta_len = RTA_LENGTH(sizeof "svesc0");
  memcpy(RTA_DATA(name), "svesc0", sizeof "svesc0");
  struct rtattr* info = (struct rtattr*)(req.attrs + RTA_ALIGN(name->rta_len));
  info->rta_type = IFLA_LINKINFO;
  struct rtattr* kind = (struct rtattr*)RTA_DATA(info);
  kind->rta_type = IFLA_INFO_KIND;
  kind->rta_len = RTA_LENGTH(sizeof "dummy");
  memcpy(RTA_DATA(kind), "dummy", sizeof "dummy");
  info->rta_len = RTA_LENGTH(RTA_ALIGN(kind->rta_len));
  req.nh.nlmsg_len = NLMSG_LENGTH(sizeof req.ifi) + RTA_ALIGN(name->rta_len) + info->rta_len;
  req.nh.nlmsg_type = RTM_NEWLINK;
  req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
  req.ifi.ifi_family = AF_UNSPEC;
  if (send(s, &req, req.nh.nlmsg_len, 0) < 0) {
    close(s);
    return -1;
  }
  char buf[4096];
  long n = recv(s, buf, sizeof buf, 0);
  close(s);
  if (n < (long)NLMSG_LENGTH(sizeof(struct nlmsgerr))) return -1;
  struct nlmsgerr* err = (struct nlmsgerr*)NLMSG_DATA((struct nlmsghdr*)buf);
  if (err->error == 0) return 0;
  errno = -err->error;
  return -1;
}

/* What a command started as root keeps. Run it inside a network namespace
 * the test created: if netlink configuration did work, it changes only that. */
static void capabilities(void) {
  char v[128];
  const char* fields[] = {"CapPrm", "CapEff", "CapBnd", "CapAmb"};
  for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
    setupOk(fields[i], statusField(fields[i], v, sizeof v));
    int any = strspn(v, "0") != strlen(v);
    printf("%s %s %s\n", any ? "ESCAPED" : "blocked", fields[i], v);
    if (any) g_escaped = 1;
  }
  setupOk("NoNewPrivs", statusField("NoNewPrivs", v, sizeof v));
  if (strcmp(v, "1") != 0) {
    printf("ESCAPED NoNewPrivs=%s\n", v);
    g_escaped = 1;
  }
  mustFail("socket(AF_INET, SOCK_RAW)", socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP));
  mustFail("socket(AF_PACKET, SOCK_RAW)", socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0));
  mustFail("netlink RTM_NEWLINK dummy", netlinkNewLink());
  mustFail("sethostname", sethostname("pwned", 5));
  mustFail("setuid(12345) then back", setresuid(12345, 12345, 0) == 0 ? setresuid(0, 0, 0) : -1);
  if (access("owned.txt", F_OK) != 0) { /* the test makes it for strict */
    int fd = open("owned.txt", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    setupOk("create owned.txt", fd);
    close(fd);
  }
  mustFail("chown(owned.txt, 12345)", chown("owned.txt", 12345, 12345));
  mustFail("mknod(c 1:1 = /dev/mem)", mknod("mem", S_IFCHR | 0666, makedev(1, 1)));
  mustFail("open(/dev/kmsg, O_WRONLY)", open("/dev/kmsg", O_WRONLY | O_CLOEXEC));
  mustFail("setpriority(-20)", setpriority(PRIO_PROCESS, 0, -20));
}

static void handles(void) {
  struct {
    struct file_handle fh;
    unsigned char bytes[128];
  } h;
  h.fh.handle_bytes = sizeof h.bytes;
  int mount_id;
  mustFail("name_to_handle_at(.env)", name_to_handle_at(AT_FDCWD, ".env", &h.fh, &mount_id, 0));
  h.fh.handle_bytes = 8;
  h.fh.handle_type = 1;
  memset(h.bytes, 0, sizeof h.bytes);
  mustFail("open_by_handle_at(O_WRONLY)", open_by_handle_at(AT_FDCWD, &h.fh, O_WRONLY));
}

/* pids.max of our cgroup in the hierarchy that has the pids controller:
 * cgroup2 (`v1_controller` NULL) or the v1 hierarchy mounted with that
 * controller (hybrid hosts). Writes the file's path and value; 0 if read. */
static int readPidsMax(const char* v1_controller, char* path, size_t path_size, char* value,
                       size_t value_size) {
  char cg[512] = "", line[1024], mnt[256] = "";
  FILE* f = fopen("/proc/self/cgroup", "r");
  setupOk("open /proc/self/cgroup", f ? 0 : -1);
  while (fgets(line, sizeof line, f)) {
    /* "id:controller,list:/path" */
    char* a = strchr(line, ':');
    char* b = a ? strchr(a + 1, ':') : NULL;
    if (!b) continue;
    *b = '\0';
    char list[256];
    snprintf(list, sizeof list, ",%s,", a + 1);
    char want[64];
    snprintf(want, sizeof want, ",%s,", v1_controller ? v1_controller : "");
    if (v1_controller ? strstr(list, want) != NULL : (a == line + 1 && line[0] == '0'))
      snprintf(cg, sizeof cg, "%s", b + 1);
  }
  fclose(f);
  cg[strcspn(cg, "\n")] = '\0';
  /* The mount point, from mountinfo (never hard-coded). */
  f = fopen("/proc/self/mountinfo", "r");
  setupOk("open mountinfo", f ? 0 : -1);
  while (fgets(line, sizeof line, f)) {
    char* sep = strstr(line, v1_controller ? " - cgroup " : " - cgroup2 ");
    if (!sep) continue;
    if (v1_controller) {
      char super[256] = "", opts[260];
      if (sscanf(sep, " - cgroup %*s %255s", super) != 1) continue;
      snprintf(opts, sizeof opts, ",%s,", super);
      char want[64];
      snprintf(want, sizeof want, ",%s,", v1_controller);
      if (!strstr(opts, want)) continue;
    }
    char point[256];
    if (sscanf(line, "%*s %*s %*s %*s %255s", point) == 1) snprintf(mnt, sizeof mnt, "%s", point);
  }
  fclose(f);
  value[0] = '\0';
  snprintf(path, path_size, "%s%s/pids.max", mnt, cg);
  if (!mnt[0] || !cg[0]) return -1;
  f = fopen(path, "r");
  if (!f) return -1;
  if (!fgets(value, (int)value_size, f)) value[0] = '\0';
  fclose(f);
  value[strcspn(value, "\n")] = '\0';
  return 0;
}

/* A real fork bomb, bounded: children that wait, forked until fork fails or
 * kBombCap processes exist (more than any pids.max supervise sets); reaching
 * the cap means nothing stopped it. Every child is killed and reaped after. */
enum { kBombCap = 4096 + 512 };
static pid_t g_kids[kBombCap];

static void forkBomb(void) {
  int n = 0, err = 0;
  for (; n < kBombCap; n++) {
    pid_t p = fork();
    if (p < 0) {
      err = errno;
      break;
    }
    if (p == 0) {
      pause();
      _exit(0);
    }
    g_kids[n] = p;
  }
  for (int i = 0; i < n; i++) kill(g_kids[i], SIGKILL);
  for (int i = 0; i < n; i++) waitpid(g_kids[i], NULL, 0);
  if (n >= kBombCap) {
    printf("ESCAPED fork bomb: %d processes and no limit hit\n", n);
    g_escaped = 1;
    return;
  }
  printf("blocked fork bomb after %d processes: fork errno=%d (%s)\n", n, err, strerror(err));
}

/* The tree's pids.max bounds a fork bomb: the session cgroup's (cgroup2), or
 * on hybrid hosts the session's v1 pids cgroup. Read, then bombed. */
static void pidsLimit(void) {
  char path[1024], value[64];
  int rc = readPidsMax(NULL, path, sizeof path, value, sizeof value);
  if (rc != 0 || !strcmp(value, "max")) {
    char v1_path[1024], v1_value[64];
    if (readPidsMax("pids", v1_path, sizeof v1_path, v1_value, sizeof v1_value) == 0 &&
        strcmp(v1_value, "max") != 0) {
      printf("pids limit: %s = %s\n", v1_path, v1_value);
      forkBomb();
      return;
    }
    printf("ESCAPED no pids limit: %s = '%s'\n", path, rc == 0 ? value : "unreadable");
    g_escaped = 1;
    return;
  }
  printf("pids limit: %s = %s\n", path, value);
  forkBomb();
}

int main(int argc, char** argv) {
  static const struct AttackCase kCases[] = {
      {"foreign-abi", foreignAbi}, {"io-uring", ioUring},     {"namespaces", namespaces},
      {"ptrace", ptraceCase},      {"signals", signals},      {"capabilities", capabilities},
      {"handles", handles},        {"pids-limit", pidsLimit},
  };
  return dispatch(kCases, sizeof kCases / sizeof *kCases, argc, argv);
}
