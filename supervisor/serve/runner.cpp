// Session runners and their control channel; see runner.h.
#include "supervisor/serve/runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "supervisor/serve/wire.h"

extern char** environ;

namespace sv::supervisor::serve {
namespace {

// The runner's end of the control channel, in the runner.
constexpr int kControlFd = 3;

// The environment of the command: the daemon's, with what the client
// forwarded on top (the policy's environment rules then apply as always).
std::vector<std::string> environmentFor(const ExecRequest& request) {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv = *e;
    const size_t eq = kv.find('=');
    if (eq != std::string_view::npos) env[std::string(kv.substr(0, eq))] = kv.substr(eq + 1);
  }
  for (const auto& [name, value] : request.env) env[name] = value;
  env.erase("SUPERVISE_SOCKET");  // the command has no business with the daemon
  std::vector<std::string> out;
  for (const auto& [name, value] : env) out.push_back(name + "=" + value);
  return out;
}

// In the forked child: a process session of its own (no share in the
// daemon's process group or terminal); of the daemon's fds only stdio and
// the control channel stay (the listener, other clients' sockets and the
// daemon's audit files do not); the signals the session relays blocked.
void becomeRunner(int control, const std::vector<UniqueFd>* stdio) {
  ::setsid();
  if (stdio)
    for (int i = 0; i < 3; ++i)
      if (::dup2((*stdio)[size_t(i)].get(), i) < 0) _exit(kExitSupervisorError);
  // Close-on-exec: the command never holds it.
  if (control != kControlFd && ::dup3(control, kControlFd, O_CLOEXEC) != kControlFd)
    _exit(kExitSupervisorError);
  ::syscall(SYS_close_range, unsigned(kControlFd + 1), ~0u, 0u);
  ::signal(SIGPIPE, SIG_DFL);
  sigset_t forwarded;
  sigemptyset(&forwarded);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&forwarded, sig);
  ::sigprocmask(SIG_SETMASK, &forwarded, nullptr);
}

// The session's end, told to the daemon: stdio let go first, so the
// client's output reaches EOF with the status, not after the tear-down.
void reportEnd(int code) {
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd = 0; fd < 3 && null >= 0; ++fd) ::dup2(null, fd);
  if (null > 2) ::close(null);
  const unsigned char byte = static_cast<unsigned char>(code);
  (void)!::write(kControlFd, &byte, 1);
}

// The request's cwd, umask and environment, in the runner, for the session
// that starts next; false (said on the client's stderr) for a cwd that is
// not there.
bool enterRequest(const ExecRequest& request, std::vector<std::string>& env) {
  if (::chdir(request.cwd.c_str()) != 0) {
    std::fprintf(stderr, "supervise exec: --cwd %s: %s\n", request.cwd.c_str(),
                 std::strerror(errno));
    return false;
  }
  ::umask(static_cast<mode_t>(request.umask & 0777));
  env = environmentFor(request);
  ::clearenv();
  for (auto& kv : env) ::putenv(kv.data());  // `env` lives until the runner's _exit
  return true;
}

SessionOptions::FromDaemon fromDaemon(const HandOff& h) {
  return SessionOptions::FromDaemon{.command_id = h.command_id,
                                    .client_pid = h.client_pid,
                                    .client_uid = h.client_uid,
                                    .abort_fd = kControlFd,
                                    .profile = h.request.profile,
                                    .ended = reportEnd};
}

[[noreturn]] void exitRunner(int code) {
  std::fflush(nullptr);
  _exit(code);
}

// Reads exactly `size` bytes of the hand-off (blocking); the fds come with
// the first of them.
bool readExactly(char* buf, size_t size, std::vector<UniqueFd>* fds) {
  for (size_t got = 0; got < size;) {
    bool too_many = false;
    const ssize_t n = got == 0 && fds ? receiveWithFds(kControlFd, buf, size, fds, &too_many)
                                      : ::read(kControlFd, buf + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || too_many) return false;
    got += size_t(n);
  }
  return true;
}

// The ready runner, after its preparation: the hand-off, or EOF (retired).
std::optional<HandOff> awaitHandOff(std::vector<UniqueFd>& stdio) {
  char header[4];
  if (!readExactly(header, sizeof header, &stdio)) return std::nullopt;
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= uint32_t(static_cast<unsigned char>(header[i])) << (8 * i);
  if (n > kMaxRequestBytes + 4096 || stdio.size() != 3) return std::nullopt;
  std::string body(n, '\0');
  if (!readExactly(body.data(), n, nullptr)) return std::nullopt;
  auto decoded = decodeHandOff(body);
  if (!decoded) return std::nullopt;
  return std::move(*decoded);
}

[[noreturn]] void runReady(SessionOptions options) {
  int code = 0;
  {
    PreparedSession prepared(options);
    prepared.prepare();
    std::vector<UniqueFd> stdio;
    auto handoff = awaitHandOff(stdio);
    // EOF: retired, the prepared session goes. A hand-off that came broken
    // must not read as the command's success.
    if (!handoff) exitRunner(stdio.empty() ? 0 : kExitSupervisorError);
    for (int i = 0; i < 3; ++i)
      if (::dup2(stdio[size_t(i)].get(), i) < 0) exitRunner(kExitSupervisorError);
    stdio.clear();
    std::vector<std::string> env;
    if (!enterRequest(handoff->request, env)) {
      reportEnd(kExitPolicyError);
      exitRunner(kExitPolicyError);
    }
    options.command = handoff->request.argv;
    options.daemon = fromDaemon(*handoff);
    code = prepared.run();
  }  // the prepared session's tear-down, after the client has its status
  exitRunner(code);
}

Result<std::pair<UniqueFd, UniqueFd>> controlChannel() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    return errnoError("socketpair");
  UniqueFd daemon_end(fds[0]), runner_end(fds[1]);
  // The daemon's loop never waits on a runner for long: a send gives up
  // after a second (handOff), reads are MSG_DONTWAIT.
  const timeval second{1, 0};
  if (::setsockopt(daemon_end.get(), SOL_SOCKET, SO_SNDTIMEO, &second, sizeof second) != 0)
    return errnoError("SO_SNDTIMEO");
  return std::pair{std::move(daemon_end), std::move(runner_end)};
}

template <typename Child>
Result<RunnerProcess> forkWith(Child child) {
  auto channel = controlChannel();
  if (!channel) return channel.error();
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t pid = ::fork();
  if (pid < 0) return errnoError("fork");
  if (pid == 0) {
    child(channel->second.get());
    _exit(kExitSupervisorError);  // not reached: a child ends in exitRunner()
  }
  RunnerProcess r;
  r.pid = pid;
  r.control = std::move(channel->first);
  r.pidfd = UniqueFd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!r.pidfd) {  // cannot happen for our own unreaped child; never leave it unwatched
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return errnoError("pidfd_open");
  }
  return r;
}

}  // namespace

Result<RunnerProcess> forkRunner(const SessionOptions& session, const ExecRequest& request,
                                 const std::vector<UniqueFd>& stdio) {
  return forkWith([&](int control) {
    becomeRunner(control, &stdio);
    std::vector<std::string> env;
    if (!enterRequest(request, env)) exitRunner(kExitPolicyError);
    SessionOptions options = session;
    options.command = request.argv;
    options.daemon->abort_fd = kControlFd;
    options.daemon->ended = reportEnd;
    exitRunner(runSession(options));
  });
}

Result<RunnerProcess> forkReadyRunner(const SessionOptions& session) {
  return forkWith([&](int control) {
    becomeRunner(control, nullptr);
    runReady(session);
  });
}

Status handOff(const RunnerProcess& runner, const HandOff& handoff,
               const std::vector<UniqueFd>& stdio) {
  std::vector<int> fds;
  for (const auto& fd : stdio) fds.push_back(fd.get());
  return sendWithFds(runner.control.get(), frame(encodeHandOff(handoff)), fds);
}

}  // namespace sv::supervisor::serve
