// Launcher: clone3 into the session cgroup, confine, hand back the listener, exec.
#include "supervisor/session/launcher.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <utility>

#include "supervisor/session/clone_shared_vm.h"
#include "tracer/capabilities.h"
#include "tracer/fd_passing.h"
#include "tracer/landlock.h"
#include "tracer/seccomp/seccomp_filter.h"

namespace sv::supervisor {
namespace {

// Everything the child reads, owned by its parent thread: launch() may
// return (and free its own copies) while the child is still before execve.
struct ChildArgs {
  LaunchSpec spec;
  std::vector<char*> argv;
  std::vector<char*> envp;
  int sock = -1;     // the child's end
  int control = -1;  // the supervisor's end, which the child must not hold
};

// Async-signal-safe: only write(2) and _exit(2).
[[noreturn]] void childFail(const char* step, int err, int code) {
  const char* msg = std::strerror(err);  // a static table: no lock, no allocation
  const char* parts[] = {"supervise: ", step, ": ", msg, "\n"};
  for (const char* p : parts) {
    ssize_t unused = ::write(STDERR_FILENO, p, std::strlen(p));
    (void)unused;
  }
  ::_exit(code);
}

[[noreturn]] void runChild(const ChildArgs& child) {
  const LaunchSpec& spec = child.spec;
  const int sock = child.sock;
  // Our copy of the supervisor's end would hide its close (no EOF for us).
  ::close(child.control);
  // If the supervisor dies before we exec, die with it (the watchdog covers the rest of the tree).
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) childFail("PR_SET_PDEATHSIG", errno, 125);
  // "0" moves this (only) thread; its whole tree counts against pids.max.
  if (spec.pids_cgroup_tasks_fd >= 0 && ::write(spec.pids_cgroup_tasks_fd, "0", 1) != 1)
    childFail("join the pids cgroup", errno, 125);
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) childFail("PR_SET_NO_NEW_PRIVS", errno, 125);
  if (spec.own_mount_namespace) {
    const char* failed = "mount namespace";
    if (int rc = tracer::enterOwnMountNamespace(&failed); rc < 0) childFail(failed, -rc, 125);
  }
  if (spec.mount_floor) {
    const char* failed = "mount floor";
    if (int rc = tracer::applyMountFloor(*spec.mount_floor, &failed); rc < 0)
      childFail(failed, -rc, 125);
  }
  if (spec.landlock_ruleset_fd >= 0) {
    int rc = tracer::restrictSelf(spec.landlock_ruleset_fd, spec.landlock_flags);
    if (rc < 0) childFail("landlock_restrict_self", -rc, 125);
    ::close(spec.landlock_ruleset_fd);
  }
  if (spec.drop_capabilities) {
    int rc = tracer::dropCapabilities(spec.keep_capabilities);
    if (rc < 0) childFail("drop capabilities", -rc, 125);
  }
  // Set up: say so (with the listener), then wait for the go. A supervisor
  // that gave up meanwhile closed its end: leave without a word, it says why.
  int rc;
  if (spec.seccomp_filter) {
    int listener = tracer::installSeccompFilter(*spec.seccomp_filter);
    if (listener < 0) childFail("seccomp", -listener, 125);
    if (spec.seccomp_log_filter) {
      if (int err = tracer::installSeccompLogFilter(*spec.seccomp_log_filter); err < 0)
        childFail("seccomp log filter", -err, 125);
    }
    rc = tracer::sendFdOverSocket(sock, listener);
    ::close(listener);
  } else {
    rc = ::send(sock, "R", 1, MSG_NOSIGNAL) == 1 ? 0 : -errno;
  }
  if (rc == -EPIPE || rc == -ECONNRESET) ::_exit(125);
  if (rc < 0) childFail("report the set-up", -rc, 125);
  char go = 0;
  while ((rc = static_cast<int>(::read(sock, &go, 1))) < 0 && errno == EINTR) {
  }
  if (rc != 1) ::_exit(125);
  ::close(sock);
  if (::sigprocmask(SIG_SETMASK, &spec.child_sigmask, nullptr) != 0) childFail("sigprocmask", errno, 125);
  ::execve(spec.exe.c_str(), child.argv.data(), child.envp.data());
  int err = errno;
  childFail(spec.exe.c_str(), err, err == ENOENT ? 127 : 126);
}

int runChildOnItsStack(void* child) { runChild(*static_cast<const ChildArgs*>(child)); }

std::vector<char*> cStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

constexpr size_t kParentStackBytes = 256 * 1024;
constexpr size_t kChildStackBytes = 64 * 1024;  // inside the parent's: runChild needs little

}  // namespace

// The thread the command is a child of (see launcher.h). It clones the
// command, waits (CLONE_VFORK) until it has exec'd or died, closes its end of
// the socket so awaitSetUp() sees EOF, then waits to be released.
class CommandParent {
 public:
  static Result<std::unique_ptr<CommandParent>> start(const LaunchSpec& spec) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
      return errnoError("socketpair");
    auto parent = std::unique_ptr<CommandParent>(new CommandParent(spec, pair[0], pair[1]));
    UniqueFd release(::eventfd(0, EFD_CLOEXEC));
    if (!release) return errnoError("eventfd");
    parent->release_ = std::move(release);
    pthread_attr_t attr;
    ::pthread_attr_init(&attr);
    ::pthread_attr_setstacksize(&attr, kParentStackBytes);
    const int rc = ::pthread_create(&parent->thread_, &attr, &CommandParent::run, parent.get());
    ::pthread_attr_destroy(&attr);
    if (rc != 0) return Error{rc, "start the command's parent thread"};
    parent->running_ = true;
    return parent;
  }

  // Lets the thread end now; the destructor still joins it.
  void release() {
    if (released_) return;
    released_ = true;
    const uint64_t one = 1;
    ssize_t unused = ::write(release_.get(), &one, sizeof one);
    (void)unused;
  }

  ~CommandParent() {
    if (!running_) return;
    // Never started: the child sees EOF instead of the go and leaves unrun
    // (or fails to report its set-up); it is reaped once it has.
    if (!started_) control_.reset();
    release();
    ::pthread_join(thread_, nullptr);
    if (!started_ && pid_ > 0) ::waitpid(pid_, nullptr, __WALL);
  }

  // The child's report that it is set up (with the listener, if it installed
  // a filter), or EOF once this thread's clone3 has returned: the child died
  // first, or never started.
  Status awaitSetUp(Launched& out) {
    Result<UniqueFd> listener = Error{ECONNRESET, "no report"};
    if (child_.spec.seccomp_filter) {
      listener = tracer::receiveFdOverSocket(control_.get());
    } else {
      char ready;
      ssize_t n;
      while ((n = ::read(control_.get(), &ready, 1)) < 0 && errno == EINTR) {
      }
      if (n == 1) listener = UniqueFd();
    }
    if (const int err = clone_error_.load(std::memory_order_acquire)) return Error{err, "clone3"};
    // Both written by the kernel before the child ran.
    out.pid = pid_;
    out.pidfd.reset(std::exchange(pidfd_, -1));
    if (!listener) {
      // The child printed why; reap it so its status is not lost.
      int status = 0;
      ::waitpid(out.pid, &status, 0);
      pid_ = -1;
      Error e = listener.error();
      if (e.code == ECONNRESET)
        e = Error{0, "the command's setup failed before it could be supervised"};
      if (WIFEXITED(status)) e.context += " (exit " + std::to_string(WEXITSTATUS(status)) + ")";
      return e;
    }
    out.listener = std::move(*listener);
    return {};
  }

  Status go() {
    if (::send(control_.get(), "G", 1, MSG_NOSIGNAL) != 1) return errnoError("start the command");
    started_ = true;
    return {};
  }

 private:
  CommandParent(const LaunchSpec& spec, int control, int child_sock)
      : control_(control), child_sock_(child_sock) {
    child_.spec = spec;
    child_.argv = cStrings(child_.spec.argv);
    child_.envp = cStrings(child_.spec.env);
    child_.sock = child_sock_.get();
    child_.control = control_.get();
  }

  static void* run(void* self_ptr) {
    auto* self = static_cast<CommandParent*>(self_ptr);
    // The child starts with every signal blocked: none may run a handler of
    // supervise on its memory. It sets the command's own mask before execve.
    sigset_t all;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, nullptr);
    const long pid = self->cloneChild();
    if (pid < 0) self->clone_error_.store(static_cast<int>(-pid), std::memory_order_release);
    self->child_sock_.reset();
    uint64_t released;
    while (::read(self->release_.get(), &released, sizeof released) < 0 && errno == EINTR) {
    }
    return nullptr;
  }

  long cloneChild() {
    clone_args args{};
    args.flags = CLONE_PIDFD | CLONE_PARENT_SETTID;
    args.pidfd = reinterpret_cast<uint64_t>(&pidfd_);
    args.parent_tid = reinterpret_cast<uint64_t>(&pid_);
    args.exit_signal = SIGCHLD;
    if (child_.spec.cgroup_fd >= 0) {
      args.flags |= CLONE_INTO_CGROUP;
      args.cgroup = static_cast<uint64_t>(child_.spec.cgroup_fd);
    }
    if constexpr (kCanShareVm) {
      // This thread is suspended until the child execs or exits, so the
      // child may use a stack carved from this thread's and its TLS (errno).
      alignas(16) unsigned char stack[kChildStackBytes];
      args.flags |= CLONE_VM | CLONE_VFORK;
      args.stack = reinterpret_cast<uint64_t>(stack);
      args.stack_size = sizeof stack;
      return clone3Calling(&args, runChildOnItsStack, &child_);
    }
    const long pid = ::syscall(SYS_clone3, &args, sizeof args);
    if (pid == 0) runChild(child_);
    return pid < 0 ? -errno : pid;
  }

  ChildArgs child_;
  UniqueFd control_;     // ours: the child's report, our go
  UniqueFd child_sock_;  // the child's end, closed here once clone3 returned
  UniqueFd release_;
  pthread_t thread_{};
  bool running_ = false;
  bool started_ = false;
  bool released_ = false;
  pid_t pid_ = -1;
  int pidfd_ = -1;
  std::atomic<int> clone_error_{0};
};

Launched::Launched() = default;
Launched::Launched(Launched&&) noexcept = default;
Launched& Launched::operator=(Launched&&) noexcept = default;
Launched::~Launched() = default;

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
  auto parent = CommandParent::start(spec);
  if (!parent) return parent.error();
  Launched out;
  out.parent = std::move(*parent);
  return out;
}

Status awaitSetUp(Launched& launched) { return launched.parent->awaitSetUp(launched); }

Status startCommand(Launched& launched) { return launched.parent->go(); }

void commandExited(Launched& launched) { launched.parent->release(); }

void endCommandParent(Launched& launched) { launched.parent.reset(); }

}  // namespace sv::supervisor
