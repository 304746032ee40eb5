// Launcher: clone3 into the session cgroup, confine, hand back the listener, exec.
#include "supervisor/launcher.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "tracer/capabilities.h"
#include "tracer/fd_passing.h"
#include "tracer/landlock.h"
#include "tracer/seccomp_filter.h"

namespace sv::supervisor {
namespace {

// Async-signal-safe: only write(2) and _exit(2).
[[noreturn]] void childFail(const char* step, int err, int code) {
  const char* msg = std::strerror(err);  // the parent was single-threaded at clone time
  const char* parts[] = {"supervise: ", step, ": ", msg, "\n"};
  for (const char* p : parts) {
    ssize_t unused = ::write(STDERR_FILENO, p, std::strlen(p));
    (void)unused;
  }
  ::_exit(code);
}

[[noreturn]] void runChild(const LaunchSpec& spec, char* const* argv, char* const* envp, int sock) {
  // If the supervisor dies before we exec, die with it (the watchdog covers the rest of the tree).
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) childFail("PR_SET_PDEATHSIG", errno, 125);
  // "0" moves this (only) thread; its whole tree counts against pids.max.
  if (spec.pids_cgroup_tasks_fd >= 0 && ::write(spec.pids_cgroup_tasks_fd, "0", 1) != 1)
    childFail("join the pids cgroup", errno, 125);
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) childFail("PR_SET_NO_NEW_PRIVS", errno, 125);
  if (spec.landlock_ruleset_fd >= 0) {
    int rc = tracer::restrictSelf(spec.landlock_ruleset_fd);
    if (rc < 0) childFail("landlock_restrict_self", -rc, 125);
    ::close(spec.landlock_ruleset_fd);
  }
  if (spec.drop_capabilities) {
    int rc = tracer::dropCapabilities(spec.keep_capabilities);
    if (rc < 0) childFail("drop capabilities", -rc, 125);
  }
  if (spec.seccomp_filter) {
    int listener = tracer::installSeccompFilter(*spec.seccomp_filter);
    if (listener < 0) childFail("seccomp", -listener, 125);
    int rc = tracer::sendFdOverSocket(sock, listener);
    if (rc < 0) childFail("send seccomp listener", -rc, 125);
    ::close(listener);
  }
  ::close(sock);
  if (::sigprocmask(SIG_SETMASK, &spec.child_sigmask, nullptr) != 0) childFail("sigprocmask", errno, 125);
  ::execve(spec.exe.c_str(), argv, envp);
  int err = errno;
  childFail(spec.exe.c_str(), err, err == ENOENT ? 127 : 126);
}

std::vector<char*> cStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

Result<std::string> findExecutable(const std::string& name, const std::string& path_env) {
  auto usable = [](const std::string& p) -> int {
    struct stat st;
    if (::stat(p.c_str(), &st) != 0) return errno;
    if (S_ISDIR(st.st_mode)) return EACCES;
    return ::access(p.c_str(), X_OK) == 0 ? 0 : errno;
  };
  if (name.empty()) return Error{ENOENT, "empty command"};
  if (name.find('/') != std::string::npos) {
    int err = usable(name);
    if (err != 0) return Error{err, name};
    return name;
  }
  int first_err = ENOENT;
  size_t start = 0;
  while (start <= path_env.size()) {
    size_t end = path_env.find(':', start);
    if (end == std::string::npos) end = path_env.size();
    std::string dir = path_env.substr(start, end - start);
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    int err = usable(candidate);
    if (err == 0) return candidate;
    if (err != ENOENT && err != ENOTDIR && first_err == ENOENT) first_err = err;
    start = end + 1;
  }
  return Error{first_err, name};
}

Result<Launched> launch(const LaunchSpec& spec) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
    return errnoError("socketpair");
  UniqueFd parent_sock(pair[0]);
  UniqueFd child_sock(pair[1]);

  auto argv = cStrings(spec.argv);
  auto envp = cStrings(spec.env);

  int pidfd = -1;
  clone_args args{};
  args.flags = CLONE_PIDFD;
  args.pidfd = reinterpret_cast<uint64_t>(&pidfd);
  args.exit_signal = SIGCHLD;
  if (spec.cgroup_fd >= 0) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = static_cast<uint64_t>(spec.cgroup_fd);
  }
  long pid = ::syscall(SYS_clone3, &args, sizeof args);
  if (pid < 0) return errnoError("clone3");
  if (pid == 0) {
    parent_sock.release();  // don't close in the child: fds are closed by exec (CLOEXEC)
    runChild(spec, argv.data(), envp.data(), child_sock.get());
  }

  Launched out;
  out.pid = static_cast<pid_t>(pid);
  out.pidfd.reset(pidfd);
  child_sock.reset();  // so a child that dies early gives us EOF, not a hang
  if (spec.seccomp_filter) {
    auto listener = tracer::receiveFdOverSocket(parent_sock.get());
    if (!listener) {
      // The child printed why; reap it so its status is not lost.
      int status = 0;
      ::waitpid(out.pid, &status, 0);
      Error e = listener.error();
      if (e.code == ECONNRESET)
        e = Error{0, "the command's setup failed before it could be supervised"};
      if (WIFEXITED(status)) e.context += " (exit " + std::to_string(WEXITSTATUS(status)) + ")";
      return e;
    }
    out.listener = std::move(*listener);
  }
  return out;
}

}  // namespace sv::supervisor
