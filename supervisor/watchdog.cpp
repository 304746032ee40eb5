// Watchdog process; see watchdog.h.
#include "supervisor/watchdog.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstring>

namespace sv::supervisor {
namespace {

void writeFile(const std::string& path, const char* text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t unused = ::write(fd, text, std::strlen(text));
  (void)unused;
  ::close(fd);
}

bool populated(const std::string& cgroup) {
  int fd = ::open((cgroup + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // gone
  char buf[256];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  return std::strstr(buf, "populated 1") != nullptr;
}

// rmdir of every directory in `cgroup` (the session's child cgroups; their
// processes are dead). cgroupfs directories hold only control files else.
void removeChildren(const std::string& cgroup) {
  DIR* dir = ::opendir(cgroup.c_str());
  if (dir == nullptr) return;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_type == DT_DIR && std::strcmp(entry->d_name, ".") != 0 &&
        std::strcmp(entry->d_name, "..") != 0)
      ::rmdir((cgroup + "/" + entry->d_name).c_str());
  }
  ::closedir(dir);
}

[[noreturn]] void watch(int read_end, const std::string& cgroup, const std::string& also_remove) {
  ::setsid();  // out of the terminal's process group: Ctrl-C must not reach us
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE})
    ::signal(sig, SIG_IGN);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Keep nothing else of the supervisor's open: only the pipe, moved to fd 3.
  if (read_end != 3) {
    ::dup2(read_end, 3);
    read_end = 3;
  }
  ::close_range(4, ~0U, 0);
  int devnull = ::open("/dev/null", O_RDWR);
  if (devnull >= 0) {
    ::dup2(devnull, 0), ::dup2(devnull, 1), ::dup2(devnull, 2);
    if (devnull > 2) ::close(devnull);
  }
  char byte;
  while (::read(read_end, &byte, 1) != 0) {
    if (errno != EINTR) break;
  }
  if (::access((cgroup + "/cgroup.procs").c_str(), F_OK) == 0) {  // else cleaned up already
    for (int i = 0; i < 200 && populated(cgroup); ++i) {
      writeFile(cgroup + "/cgroup.kill", "1");
      ::usleep(10000);
    }
    removeChildren(cgroup);  // profile-<name> cgroups: rmdir needs them gone first
    ::rmdir(cgroup.c_str());
  }
  // The tree is dead: its last tasks leave the v1 cgroup as they are reaped.
  for (int i = 0; !also_remove.empty() && i < 100; ++i) {
    if (::rmdir(also_remove.c_str()) == 0 || errno != EBUSY) break;
    ::usleep(10000);
  }
  ::_exit(0);
}

}  // namespace

Result<Watchdog> Watchdog::start(const std::string& cgroup_path, const std::string& also_remove) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return errnoError("pipe2");
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  // One fork, not a double fork: every wait of the supervisor names its pid
  // or pidfd, so a child watchdog is never reaped by mistake, and it outlives
  // us like any orphan. (The double fork's synchronous wait for the middle
  // process cost ~1.5 ms of every start-up on the test VM.)
  pid_t pid = ::fork();
  if (pid < 0) return errnoError("fork watchdog");
  if (pid == 0) {
    write_end.reset();
    watch(read_end.get(), cgroup_path, also_remove);
  }
  return Watchdog(std::move(write_end));
}

}  // namespace sv::supervisor
