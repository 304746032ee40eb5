/* Runs a binary the policy forbids to execute, by every route we know.
 *
 *   escape_exec DENIED_BINARY
 *
 * DENIED_BINARY is a copy of echo the policy must not let run (in /dev/shm
 * under the presets, or matched by an exec.deny glob). Each route runs in
 * a forked child and passes "RAN-DENIED" as an argument: if the exec went
 * through, echo prints it and the child exits 0. Routes: the path itself, a
 * symlink to it, a #! script naming it as interpreter, /proc/self/fd/N of
 * an fd on it, execveat(dirfd, name), a memfd copy run with
 * execveat(AT_EMPTY_PATH) (fexecve), and the system's dynamic loader run as
 * a program with it as its argument (the loader maps it itself).
 *
 *   escape_exec race ALLOWED DENIED ROUNDS
 *
 * races the execve path pointer between two names of equal length and
 * counts how each round ended (ran the allowed binary, refused, killed by
 * the in-kernel exec re-check).
 *
 *   escape_exec loader-race ALLOWED DENIED ROUNDS
 *
 * the same race on the dynamic loader's program argument: execve(loader,
 * {loader, PATH, ...}) while PATH flips (the decision read argv).
 *
 *   escape_exec setuid-nonroot SUID_BINARY
 *
 * drops to uid/gid 65534 and runs a set-user-ID-root copy of this program
 * (its "suid-check" case exits 0 when its euid is 0).
 * Exit 0: every route failed; 66: one ran; 2: setup failed.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attack.h"

static char* const kArgv[] = {"denied", "RAN-DENIED", NULL};
extern char** environ;

enum Route { kPath, kSymlink, kScript, kProcFd, kExecveatDirfd, kMemfd, kLoader };

/* The system's dynamic loader, run as a program by the loader routes. */
static const char* loaderPath(void) {
  static const char* const kLoaders[] = {"/lib64/ld-linux-x86-64.so.2",
                                         "/lib/ld-linux-aarch64.so.1", "/lib/ld-linux.so.2"};
  for (size_t i = 0; i < sizeof kLoaders / sizeof *kLoaders; i++)
    if (access(kLoaders[i], X_OK) == 0) return kLoaders[i];
  return "/lib64/ld-linux-x86-64.so.2";
}

static void execRoute(enum Route route, const char* bin) {
  char buf[4096];
  switch (route) {
    case kPath:
      execve(bin, kArgv, environ);
      break;
    /* The symlink and the script are made here when the workspace is
     * writable; under strict the test has made the same ones beforehand. */
    case kSymlink:
      unlink("innocent");
      (void)!symlink(bin, "innocent");
      execve("./innocent", kArgv, environ);
      break;
    case kScript: {
      int fd = open("script.sh", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
      if (fd >= 0) {
        int n = snprintf(buf, sizeof buf, "#!%s\n", bin);
        (void)!write(fd, buf, (size_t)n);
        close(fd);
      }
      execve("./script.sh", kArgv, environ);
      break;
    }
    case kProcFd: {
      int fd = open(bin, O_RDONLY);
      if (fd < 0) break;
      snprintf(buf, sizeof buf, "/proc/self/fd/%d", fd);
      execve(buf, kArgv, environ);
      break;
    }
    case kExecveatDirfd: {
      char copy[4096];
      snprintf(copy, sizeof copy, "%s", bin);
      int dir = open(dirname(copy), O_PATH | O_DIRECTORY);
      snprintf(copy, sizeof copy, "%s", bin);
      if (dir >= 0) syscall(SYS_execveat, dir, basename(copy), kArgv, environ, 0);
      break;
    }
    case kMemfd: {
      int in = open(bin, O_RDONLY | O_CLOEXEC);
      int mem = (int)syscall(SYS_memfd_create, "innocent", 0);
      if (in < 0 || mem < 0) break;
      ssize_t n;
      while ((n = read(in, buf, sizeof buf)) > 0) (void)!write(mem, buf, (size_t)n);
      syscall(SYS_execveat, mem, "", kArgv, environ, AT_EMPTY_PATH);
      break;
    }
    case kLoader: {
      char* const argv[] = {(char*)loaderPath(), (char*)bin, "RAN-DENIED", NULL};
      execve(argv[0], argv, environ);
      break;
    }
  }
  printf("exec failed errno=%d (%s)\n", errno, strerror(errno));
  fflush(stdout);
  _exit(errno == 0 ? 1 : 100 + (errno & 0x1f));
}

/* The path buffer flips between an allowed and a denied name (same length,
 * so a torn read is just a missing file) while another thread calls execve
 * on it: the supervisor decides on the name it read, then answers CONTINUE
 * and the kernel reads the buffer again (docs/enforcement.md, "exec"). */
static char g_race_path[256];
static const char* g_race_names[2];

static void* flipper(void* arg) {
  (void)arg;
  for (unsigned i = 0;; i++) memcpy(g_race_path, g_race_names[i & 1], strlen(g_race_names[0]) + 1);
  return NULL;
}

static int execRace(const char* allowed, const char* denied, int rounds, int via_loader) {
  if (strlen(allowed) != strlen(denied) || strlen(allowed) >= sizeof g_race_path) {
    fprintf(stderr, "escape_exec race: names must have the same length\n");
    return kSetupFailed;
  }
  g_race_names[0] = allowed;
  g_race_names[1] = denied;
  int ran = 0, refused = 0, killed = 0, other = 0;
  for (int i = 0; i < rounds; i++) {
    fflush(stdout);
    pid_t pid = fork();
    setupOk("fork", pid);
    if (pid == 0) {
      strcpy(g_race_path, allowed);
      pthread_t t;
      if (pthread_create(&t, NULL, flipper, NULL) != 0) _exit(3);
      if (via_loader) {
        char* const argv[] = {(char*)loaderPath(), g_race_path, "RAN-DENIED", NULL};
        execve(argv[0], argv, environ);
      } else {
        execve(g_race_path, kArgv, environ);
      }
      _exit(1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    /* The allowed binary exits 0; a refused execve 1; a swapped-in binary
     * the in-kernel re-check caught dies of SIGKILL before it runs. */
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
      ran++;
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 1)
      refused++;
    else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      killed++;
    else
      other++;
  }
  /* A denied binary that ran printed RAN-DENIED itself. */
  printf("race rounds=%d done ran=%d refused=%d killed=%d other=%d\n", rounds, ran, refused,
         killed, other);
  return finish();
}

/* setuid-nonroot SUID_BINARY: become nobody (the policy kept CAP_SETUID and
 * CAP_SETGID for this), then run a set-user-ID-root copy of this program,
 * which reports its euid ("suid-check"). Euid 0 is an escape. */
static int setuidNonRoot(const char* suid_binary) {
  setupOk("setgroups", setgroups(0, NULL));
  setupOk("setresgid", setresgid(65534, 65534, 65534));
  setupOk("setresuid", setresuid(65534, 65534, 65534));
  printf("running %s as uid %d\n", suid_binary, (int)getuid());
  fflush(stdout);
  pid_t pid = fork();
  setupOk("fork", pid);
  if (pid == 0) {
    char* const args[] = {(char*)suid_binary, "suid-check", NULL};
    execve(suid_binary, args, environ);
    printf("SETUP FAILED execve %s errno=%d (%s)\n", suid_binary, errno, strerror(errno));
    _exit(kSetupFailed);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) == kSetupFailed) return kSetupFailed;
  if (WEXITSTATUS(status) == 0) {
    printf("ESCAPED the set-user-ID bit gave euid 0\n");
    return kEscaped;
  }
  printf("blocked the set-user-ID bit gave nothing\n");
  return kBlocked;
}

int main(int argc, char** argv) {
  if (argc >= 5 && !strcmp(argv[1], "race")) return execRace(argv[2], argv[3], atoi(argv[4]), 0);
  if (argc >= 5 && !strcmp(argv[1], "loader-race"))
    return execRace(argv[2], argv[3], atoi(argv[4]), 1);
  if (argc >= 3 && !strcmp(argv[1], "setuid-nonroot")) return setuidNonRoot(argv[2]);
  if (argc >= 2 && !strcmp(argv[1], "suid-check")) {
    printf("euid=%d\n", (int)geteuid());
    return geteuid() == 0 ? 0 : 1;
  }
  if (argc < 2) {
    fprintf(stderr,
            "usage: escape_exec DENIED_BINARY | race ALLOWED DENIED ROUNDS | setuid-nonroot "
            "SUID_BINARY\n");
    return kSetupFailed;
  }
  static const struct {
    enum Route route;
    const char* name;
  } kRoutes[] = {{kPath, "execve(path)"},
                 {kSymlink, "execve(symlink to it)"},
                 {kScript, "#! script naming it"},
                 {kProcFd, "execve(/proc/self/fd/N)"},
                 {kExecveatDirfd, "execveat(dirfd, name)"},
                 {kMemfd, "memfd copy + execveat(AT_EMPTY_PATH)"},
                 {kLoader, "the dynamic loader run as a program"}};
  for (size_t i = 0; i < sizeof kRoutes / sizeof *kRoutes; i++) {
    fflush(stdout);
    pid_t pid = fork();
    setupOk("fork", pid);
    if (pid == 0) execRoute(kRoutes[i].route, argv[1]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      printf("ESCAPED %s\n", kRoutes[i].name);
      g_escaped = 1;
    } else {
      printf("blocked %s status=0x%x\n", kRoutes[i].name, status);
    }
  }
  return finish();
}
