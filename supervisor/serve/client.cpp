// `supervise exec`; see client.h.
#include "supervisor/serve/client.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/unique_fd.h"
#include "supervisor/serve/wire.h"

namespace sv::supervisor::serve {
namespace {

int fail(const std::string& line, int code = kExitSupervisorError) {
  std::fprintf(stderr, "supervise exec: %s\n", line.c_str());
  return code;
}

Result<UniqueFd> connectTo(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return Error{ENAMETOOLONG, path};
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return errnoError("socket");
  while (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    if (errno != EINTR) return errnoError(path);
  return fd;
}

}  // namespace

Result<ExecOutcome> execThroughDaemon(const std::string& socket_path, const ExecRequest& request,
                                      const int (&stdio)[3], bool forward_signals,
                                      int cancel_fd) {
  auto sock = connectTo(socket_path);
  if (!sock)
    return Error{0, "cannot reach the exec daemon: " + sock.error().message() +
                        " (is `supervise serve` running? --socket or SUPERVISE_SOCKET names it)"};
  // Signals wait in a signalfd from here on: each one is forwarded, not lost.
  UniqueFd sigfd;
  sigset_t forwarded, old_mask;
  sigemptyset(&forwarded);
  if (forward_signals) {
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&forwarded, sig);
    ::sigprocmask(SIG_BLOCK, &forwarded, &old_mask);
    sigfd = UniqueFd(::signalfd(-1, &forwarded, SFD_CLOEXEC | SFD_NONBLOCK));
  }
  struct RestoreMask {
    bool active;
    sigset_t mask;
    ~RestoreMask() {
      if (active) ::sigprocmask(SIG_SETMASK, &mask, nullptr);
    }
  } restore{forward_signals, old_mask};

  if (auto st = sendWithFds(sock->get(), frame(encodeRequest(request)),
                            {stdio[0], stdio[1], stdio[2]});
      !st)
    return st.error();

  FrameReader reader(kMaxControlBytes);
  ExecOutcome outcome;
  for (;;) {
    pollfd fds[3] = {{sock->get(), POLLIN, 0}, {sigfd.get(), POLLIN, 0}, {cancel_fd, POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0) {  // a negative fd is skipped
      if (errno == EINTR) continue;
      return errnoError("poll");
    }
    if (fds[2].revents & POLLIN)
      return Error{ECANCELED, "cancelled: the command was killed" +
                                  (outcome.command_id.empty()
                                       ? std::string()
                                       : " (command " + outcome.command_id + ")")};
    if (sigfd && (fds[1].revents & POLLIN)) {
      signalfd_siginfo si;
      while (::read(sigfd.get(), &si, sizeof si) == sizeof si)
        (void)sendWithFds(sock->get(), frame(encodeSignal(int(si.ssi_signo))), {});
    }
    if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    char buf[4096];
    const ssize_t n = ::recv(sock->get(), buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return Error{0, "the exec daemon closed the connection before the command ended" +
                          (outcome.command_id.empty()
                               ? std::string()
                               : " (command " + outcome.command_id + ")")};
    reader.feed(std::string_view(buf, size_t(n)));
    for (;;) {
      auto body = reader.next();
      if (!body) return Error{0, "from the daemon: " + body.error().message()};
      if (!*body) break;
      auto reply = decodeReply(**body);
      if (!reply) return Error{0, "from the daemon: " + reply.error().message()};
      if (reply->type == "started") {
        outcome.command_id = reply->command_id;
        outcome.policy_name = reply->policy_name;
        outcome.policy_sha256 = reply->policy_sha256;
      } else if (reply->type == "error") {
        return Error{reply->status ? reply->status : kExitSupervisorError, reply->message};
      } else {  // exit
        outcome.status = reply->status;
        outcome.timed_out = reply->timed_out;
        return outcome;
      }
    }
  }
}

int runExecClient(const std::string& socket_path, const ExecRequest& request) {
  const int stdio[3] = {0, 1, 2};
  auto outcome = execThroughDaemon(socket_path, request, stdio, /*forward_signals=*/true);
  if (!outcome)
    return fail(outcome.error().context,
                outcome.error().code ? outcome.error().code : kExitSupervisorError);
  if (outcome->timed_out) {
    char text[64];
    std::snprintf(text, sizeof text, "%g", double(request.timeout_ms) / 1000.0);
    return fail(std::string("timed out after ") + text + " s: the command was killed",
                kExitTimedOut);
  }
  return outcome->status;
}

std::string defaultSocketPath() {
  if (const char* s = std::getenv("SUPERVISE_SOCKET"); s && *s) return s;
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x && *x)
    return std::string(x) + "/supervise/exec.sock";
  const uid_t uid = ::getuid();
  if (uid == 0) return "/run/supervise/serve-0/exec.sock";
  return "/tmp/supervise-" + std::to_string(uid) + "/exec.sock";
}

}  // namespace sv::supervisor::serve
