/* Filesystem escape attempts against a protected file (.env in the cwd).
 *
 *   escape_fs CASE [ARG]
 *
 * Run with the workspace as cwd, holding a protected ".env". Each case tries
 * to change .env (content, name, link count or metadata) by a route other
 * than a plain open for write; see docs/escape.md for what stops each one.
 * Exit 0: every attempt failed; 66: one succeeded; 2: setup failed.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "attack.h"

static void writeThrough(const char* what, const char* path) {
  int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
  mustFail(what, fd);
  if (fd >= 0) {
    (void)!write(fd, "PWNED\n", 6);
    close(fd);
  }
}

static void hardlink(void) {
  mustFail("link(.env, alias)", link(".env", "alias"));
  mustFail("linkat(.env, alias2)", linkat(AT_FDCWD, ".env", AT_FDCWD, "alias2", 0));
  /* linkat(fd, "", AT_EMPTY_PATH) of a read-only fd: a name for the inode. */
  int ro = open(".env", O_RDONLY | O_CLOEXEC);
  setupOk("open .env read-only", ro);
  mustFail("linkat(ro fd, AT_EMPTY_PATH)", linkat(ro, "", AT_FDCWD, "alias3", AT_EMPTY_PATH));
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", ro);
  mustFail("linkat(/proc/self/fd/N, AT_SYMLINK_FOLLOW)",
           linkat(AT_FDCWD, proc, AT_FDCWD, "alias4", AT_SYMLINK_FOLLOW));
  writeThrough("write through alias", "alias");
}

/* "evil" and "d" may exist already: the test makes them where the preset
 * (strict: a read-only workspace) would not let this program. */
static void renameOnto(void) {
  if (access("evil", F_OK) != 0) {
    int fd = open("evil", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    setupOk("create evil", fd);
    (void)!write(fd, "PWNED\n", 6);
    close(fd);
  }
  mustFail("rename(evil, .env)", rename("evil", ".env"));
  mustFail("renameat2(evil, .env, RENAME_EXCHANGE)",
           syscall(SYS_renameat2, AT_FDCWD, "evil", AT_FDCWD, ".env", RENAME_EXCHANGE));
  mustFail("rename(.env, moved)", rename(".env", "moved"));
  if (access("d", F_OK) != 0) setupOk("mkdir d", mkdir("d", 0755));
  mustFail("rename(evil, d/../.env)", rename("evil", "d/../.env"));
  mustFail("unlink(.env)", unlink(".env"));
  mustFail("symlink over .env (rename a symlink onto it)",
           symlink("evil", "lnk") == 0 ? rename("lnk", ".env") : -1);
}

/* Appends PWNED to `path` (after a move that should not have happened). */
static void appendPwned(const char* path) {
  int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd >= 0) {
    (void)!write(fd, "PWNED\n", 6);
    close(fd);
  }
}

static long exchange(const char* a, const char* b) {
  return syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
}

/* dir-move: moving a directory renames every path below it. Each move that
 * goes through is followed by a write under the new name and the move back,
 * the laundering it would allow. Needs .git/config, an empty directory
 * "empty", "fake/config" and "locked/.env" in a mode-0 "locked" (the test
 * makes them: strict's workspace is read-only); the workspace's parent must
 * be where the preset lets it be written (code-sandbox: /tmp). */
static void dirMove(void) {
  char ws[4096], ws2[4200], top[4096], top2[4200], path[8400];
  if (!getcwd(ws, sizeof ws)) setupOk("getcwd", -1);
  snprintf(ws2, sizeof ws2, "%s2", ws);
  snprintf(top, sizeof top, "%s", ws);
  char* slash = strrchr(top, '/');
  if (!slash || slash == top) setupOk("the workspace's parent", -1);
  *slash = '\0';
  snprintf(top2, sizeof top2, "%s2", top);

  long rc = rename(".git", "g");
  mustFail("rename(.git, g) [then write g/config]", rc);
  if (rc == 0) {
    appendPwned("g/config");
    (void)rename("g", ".git");
  }
  rc = rename(ws, ws2);
  mustFail("rename(workspace, workspace2) [then write workspace2/.env]", rc);
  if (rc == 0) {
    snprintf(path, sizeof path, "%s/.env", ws2);
    appendPwned(path);
    (void)rename(ws2, ws);
  }
  rc = rename(top, top2);
  mustFail("rename(workspace's parent, parent2) [then write parent2/ws/.env]", rc);
  if (rc == 0) {
    snprintf(path, sizeof path, "%s%s/.env", top2, ws + strlen(top));
    appendPwned(path);
    (void)rename(top2, top);
  }
  rc = exchange(".git", "empty");
  mustFail("renameat2(.git, empty, RENAME_EXCHANGE) [then write empty/config]", rc);
  if (rc == 0) {
    appendPwned("empty/config");
    (void)exchange(".git", "empty");
  }
  rc = exchange("empty", ".git");
  mustFail("renameat2(empty, .git, RENAME_EXCHANGE) [then write empty/config]", rc);
  if (rc == 0) {
    appendPwned("empty/config");
    (void)exchange("empty", ".git");
  }
  /* The other way: a directory whose "config" nobody protects becomes .git. */
  rc = exchange("fake", ".git");
  mustFail("renameat2(fake, .git, RENAME_EXCHANGE) [fake/config becomes .git/config]", rc);
  if (rc == 0) (void)exchange("fake", ".git");
  /* A directory the command cannot list (the test made locked/.env, then
   * chmod 0 locked): the walk must not take "unreadable" for "empty". */
  rc = rename("locked", "l2");
  mustFail("rename(locked, l2) [mode 0, holding .env; then write l2/.env]", rc);
  if (rc == 0) {
    (void)chmod("l2", 0755);
    appendPwned("l2/.env");
    (void)chmod("l2", 0);
    (void)rename("l2", "locked");
  }
  /* Back under its own name if anything above got through: the cwd moved too. */
  (void)chdir(ws);
}

static void opathReopen(void) {
  int fd = open(".env", O_PATH | O_CLOEXEC);
  setupOk("open .env O_PATH", fd);
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
  writeThrough("reopen O_PATH fd for write", proc);
  snprintf(proc, sizeof proc, "/proc/thread-self/fd/%d", fd);
  writeThrough("reopen via /proc/thread-self/fd", proc);
  snprintf(proc, sizeof proc, "/proc/%d/fd/%d", getpid(), fd);
  writeThrough("reopen via /proc/PID/fd", proc);
  mustFail("openat(O_PATH fd, \"\", O_WRONLY) [EMPTY_PATH open]",
           openat(fd, "", O_WRONLY | O_CLOEXEC));
}

/* A sibling's cwd/root magic links lead to the same .env. */
static void procRoot(void) {
  char cwd[4096], path[8192];
  if (!getcwd(cwd, sizeof cwd)) setupOk("getcwd", -1);
  snprintf(path, sizeof path, "/proc/self/root%s/.env", cwd);
  writeThrough("/proc/self/root/<ws>/.env", path);
  writeThrough("/proc/self/cwd/.env", "/proc/self/cwd/.env");
  pid_t sib = fork();
  setupOk("fork sibling", sib);
  if (sib == 0) {
    pause();
    _exit(0);
  }
  snprintf(path, sizeof path, "/proc/%d/cwd/.env", sib);
  writeThrough("/proc/SIBLING/cwd/.env", path);
  snprintf(path, sizeof path, "/proc/%d/root%s/.env", sib, cwd);
  writeThrough("/proc/SIBLING/root/<ws>/.env", path);
  snprintf(path, sizeof path, "/proc/%d/cwd/.env", getppid());
  writeThrough("/proc/SUPERVISOR/cwd/.env", path);
  kill(sib, SIGKILL);
  waitpid(sib, NULL, 0);
}

static void dotdot(void) {
  if (access("sub", F_OK) != 0) setupOk("mkdir sub", mkdir("sub", 0755));
  writeThrough("sub/../.env", "sub/../.env");
  writeThrough(".//.env", ".//.env");
  writeThrough("./sub/..//./.env", "./sub/..//./.env");
  writeThrough("sub/../sub/../.env", "sub/../sub/../.env");
  int dir = open("sub", O_PATH | O_DIRECTORY | O_CLOEXEC);
  setupOk("open sub", dir);
  mustFail("openat(sub, ../.env)", openat(dir, "../.env", O_WRONLY | O_CLOEXEC));
}

/* cwd deeper than PATH_MAX: the supervisor's view of the cwd can't be a
 * string; a relative ../../.env must still be recognised (or refused). The
 * test makes the chain beforehand (an emulated mkdir that deep fails with
 * ENAMETOOLONG under supervise); chdir is not mediated. */
static void longPath(void) {
  char name[201];
  memset(name, 'd', 200);
  name[200] = '\0';
  const int depth = 30; /* 30 * 201 > PATH_MAX */
  for (int i = 0; i < depth; i++) {
    (void)mkdir(name, 0755); /* standalone runs; the chdir below is what counts */
    setupOk("chdir deep", chdir(name));
  }
  char up[3 * 30 + 8] = "";
  for (int i = 0; i < depth; i++) strcat(up, "../");
  strcat(up, ".env");
  writeThrough("../ x30 + .env from a cwd deeper than PATH_MAX", up);
  int fd = open("leaf.txt", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  printf("create in deep cwd: %s\n", fd >= 0 ? "ok" : strerror(errno));
}

static void nonUtf8(void) {
  writeThrough("create .env.<0xff 0xfe>", ".env.\xff\xfe");
  int fd = open(".env.\xff\xfe", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  mustFail("O_CREAT .env.<0xff 0xfe>", fd);
  /* Allowed where the workspace is writable (the test checks the file under
   * code-sandbox); strict refuses it like any write. */
  fd = open("ok-\xff\xfe.txt", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  printf("create ok-<0xff 0xfe>.txt: %s\n", fd >= 0 ? "ok" : strerror(errno));
  if (fd >= 0) close(fd);
}

static long openat2(const char* path, uint64_t flags, uint64_t mode, uint64_t resolve,
                    size_t extra) {
  struct {
    struct open_how how;
    uint64_t tail[2];
  } buf;
  memset(&buf, 0, sizeof buf);
  buf.how.flags = flags;
  buf.how.mode = mode;
  buf.how.resolve = resolve;
  if (extra) buf.tail[0] = 1; /* non-zero bytes past the known struct */
  return syscall(SYS_openat2, AT_FDCWD, path, &buf, sizeof buf.how + extra);
}

static void oddOpenat2(void) {
  mustFail("openat2 O_WRONLY", openat2(".env", O_WRONLY, 0, 0, 0));
  mustFail("openat2 RESOLVE_IN_ROOT", openat2(".env", O_WRONLY, 0, RESOLVE_IN_ROOT, 0));
  mustFail("openat2 RESOLVE_BENEATH", openat2(".env", O_RDWR, 0, RESOLVE_BENEATH, 0));
  mustFail("openat2 RESOLVE_NO_XDEV", openat2(".env", O_WRONLY, 0, RESOLVE_NO_XDEV, 0));
  mustFail("openat2 RESOLVE_CACHED", openat2(".env", O_WRONLY, 0, RESOLVE_CACHED, 0));
  mustFail("openat2 larger how, non-zero tail", openat2(".env", O_WRONLY, 0, 0, 8));
  mustFail("openat2 unknown resolve bits", openat2(".env", O_WRONLY, 0, 1ULL << 40, 0));
  mustFail("openat2 flags in the upper 32 bits", openat2(".env", O_WRONLY | (1ULL << 40), 0, 0, 0));
  mustFail("openat2 O_TRUNC|O_RDONLY", openat2(".env", O_RDONLY | O_TRUNC, 0, 0, 0));
  mustFail("openat2 mode without O_CREAT", openat2(".env", O_WRONLY, 0777, 0, 0));
}

/* Metadata through an fd the process legitimately holds read-only. */
static void fdMetadata(void) {
  int fd = open(".env", O_RDONLY | O_CLOEXEC);
  setupOk("open .env read-only", fd);
  mustFail("fchmod(ro fd, 0666)", fchmod(fd, 0666));
  mustFail("fchown(ro fd, 0, 1)", fchown(fd, 0, 1));
  mustFail("fsetxattr(ro fd, user.pwn)", fsetxattr(fd, "user.pwn", "1", 1, 0));
  struct timespec ts[2] = {{1, 0}, {1, 0}};
  mustFail("futimens(ro fd)", futimens(fd, ts));
  mustFail("ftruncate(ro fd)", ftruncate(fd, 0));
}

/* received-fd: fd 3 is a socket the caller handed down, and the caller has
 * sent a read-only fd of .env over it (SCM_RIGHTS). Turning it into write
 * access must fail. */
static void receivedFd(void) {
  char data;
  struct iovec iov = {&data, 1};
  char control[CMSG_SPACE(sizeof(int))];
  struct msghdr msg;
  memset(&msg, 0, sizeof msg);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  setupOk("recvmsg on the inherited socket (fd 3)", recvmsg(3, &msg, MSG_CMSG_CLOEXEC));
  struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (!c || c->cmsg_type != SCM_RIGHTS) setupOk("an fd in the message", -1);
  int fd;
  memcpy(&fd, CMSG_DATA(c), sizeof fd);
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
  writeThrough("reopen the received fd for write", proc);
  mustFail("fchmod(received fd, 0666)", fchmod(fd, 0666));
  mustFail("ftruncate(received fd)", ftruncate(fd, 0));
  mustFail("write(received fd)", write(fd, "PWNED", 5));
  mustFail("linkat(received fd, AT_EMPTY_PATH) then open it for write",
           linkat(fd, "", AT_FDCWD, "stolen", AT_EMPTY_PATH) == 0
               ? open("stolen", O_WRONLY | O_TRUNC | O_CLOEXEC)
               : -1);
}

/* vfork: the child runs on the parent's memory and stack until it execs. */
static void viaVfork(void) {
  volatile int child_fd = -2, child_errno = 0;
  pid_t pid = vfork();
  if (pid == 0) {
    child_fd = open(".env", O_WRONLY | O_TRUNC | O_CLOEXEC);
    child_errno = errno;
    _exit(0);
  }
  setupOk("vfork", pid);
  waitpid(pid, NULL, 0);
  errno = child_errno;
  mustFail("open(.env, O_TRUNC) in a vfork child", child_fd);
}

/* Another process's fd table through /proc/PID/fd/N: ARG is the pid of a
 * process outside the session holding a pipe as fd 0; then the supervisor's. */
static void foreignFd(void) {
  const char* pid = g_arg;
  if (!pid) setupOk("foreign-fd needs a pid", -1);
  char path[64];
  snprintf(path, sizeof path, "/proc/%s/fd/0", pid);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  mustFail("open(/proc/OUTSIDE/fd/0, O_WRONLY)", fd);
  if (fd >= 0) (void)!write(fd, "PWNED\n", 6);
  snprintf(path, sizeof path, "/proc/%s/fd/1", pid);
  fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
  mustFail("open(/proc/OUTSIDE/fd/1, O_WRONLY)", fd);
  if (fd >= 0) (void)!write(fd, "PWNED\n", 6);
  /* The supervisor's own pipes and sockets (its loop's wake-up pipes, the
   * watchdog's pipe): nothing is written into them, opening is enough. */
  for (int n = 0; n < 64; n++) {
    snprintf(path, sizeof path, "/proc/%d/fd/%d", getppid(), n);
    fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st;
    if (fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
      printf("ESCAPED open(/proc/SUPERVISOR/fd/%d, O_WRONLY): a pipe or socket\n", n);
      g_escaped = 1;
    }
    close(fd);
  }
}

/* A deny-read file (secret.txt, and everything in vault/) read under another
 * name: an O_PATH handle (allowed: it reads nothing) reopened or used as a
 * directory, a hard link, a rename, a directory move, an exchange, a symlink.
 * Every read that works prints the content, which the driver looks for. */
static void readThrough(const char* what, const char* path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  mustFail(what, fd);
  if (fd >= 0) {
    char buf[64] = {0};
    (void)!read(fd, buf, sizeof buf - 1);
    printf("READ %s: %s\n", what, buf);
    close(fd);
  }
}

static void readNames(void) {
  int handle = open("secret.txt", O_PATH | O_CLOEXEC);
  setupOk("open secret.txt O_PATH (a handle reads nothing)", handle);
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", handle);
  readThrough("reopen the O_PATH fd for read", proc);
  snprintf(proc, sizeof proc, "/proc/thread-self/fd/%d", handle);
  readThrough("reopen via /proc/thread-self/fd", proc);
  int vault = open("vault", O_PATH | O_DIRECTORY | O_CLOEXEC);
  setupOk("open vault O_PATH", vault);
  int fd = openat(vault, "key", O_RDONLY | O_CLOEXEC);
  mustFail("openat(vault O_PATH fd, key)", fd);
  mustFail("link(secret.txt, copy)", link("secret.txt", "copy"));
  readThrough("read the link", "copy");
  mustFail("linkat(/proc/self/fd/N, copy2, AT_SYMLINK_FOLLOW)",
           linkat(AT_FDCWD, proc, AT_FDCWD, "copy2", AT_SYMLINK_FOLLOW));
  mustFail("rename(secret.txt, moved)", rename("secret.txt", "moved"));
  readThrough("read the moved file", "moved");
  mustFail("rename(vault, opened)", rename("vault", "opened"));
  readThrough("read the moved directory's file", "opened/key");
  mustFail("renameat2(secret.txt, notes.txt, RENAME_EXCHANGE)",
           syscall(SYS_renameat2, AT_FDCWD, "secret.txt", AT_FDCWD, "notes.txt", RENAME_EXCHANGE));
  int notes = open("notes.txt", O_RDONLY | O_CLOEXEC);  /* readable: must still be the notes */
  char buf[64] = {0};
  if (notes >= 0 && read(notes, buf, sizeof buf - 1) > 0) printf("notes.txt holds: %s", buf);
  setupOk("symlink(secret.txt, sl) (its own name is not judged)", symlink("secret.txt", "sl"));
  readThrough("read through the symlink", "sl");
}

int main(int argc, char** argv) {
  static const struct AttackCase kCases[] = {
      {"hardlink", hardlink},  {"rename-onto", renameOnto}, {"opath-reopen", opathReopen},
      {"proc-root", procRoot}, {"dotdot", dotdot},          {"long-path", longPath},
      {"non-utf8", nonUtf8},   {"openat2", oddOpenat2},     {"fd-metadata", fdMetadata},
      {"vfork", viaVfork},     {"foreign-fd", foreignFd},   {"received-fd", receivedFd},
      {"read-names", readNames},
      {"dir-move", dirMove},
  };
  return dispatch(kCases, sizeof kCases / sizeof *kCases, argc, argv);
}
