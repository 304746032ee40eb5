/* many_procs N DIR: N short-lived processes, at most 32 alive at once. Each
 * opens DIR/f<i % 64> for writing (a decision of the supervisor); every
 * 100th also tries DIR/.env, which the policy must refuse with EACCES.
 * Exit 0 when every process did exactly what was expected, else 1 with the
 * counts on stdout. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int child(const char* dir, long i) {
  char path[4096];
  snprintf(path, sizeof path, "%s/f%ld", dir, i % 64);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return 2;
  close(fd);
  if (i % 100 == 0) {
    snprintf(path, sizeof path, "%s/.env", dir);
    fd = open(path, O_WRONLY | O_APPEND);
    if (fd >= 0 || errno != EACCES) return 3;
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3) return 64;
  const long n = atol(argv[1]);
  long started = 0, ok = 0, failed = 0, alive = 0;
  while (started < n || alive > 0) {
    if (started < n && alive < 32) {
      pid_t pid = fork();
      if (pid == 0) _exit(child(argv[2], started));
      if (pid < 0) {
        perror("fork");
        return 1;
      }
      ++started;
      ++alive;
      continue;
    }
    int status;
    if (wait(&status) < 0) break;
    --alive;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) ++ok; else ++failed;
  }
  printf("processes=%ld ok=%ld failed=%ld\n", started, ok, failed);
  return ok == n && failed == 0 ? 0 : 1;
}
