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
#include <cstring>

#include "common/unique_fd.h"
#include "supervisor/serve/wire.h"
#include "supervisor/session/session.h"

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

int runExecClient(const std::string& socket_path, const ExecRequest& request) {
  auto sock = connectTo(socket_path);
  if (!sock)
    return fail("cannot reach the exec daemon: " + sock.error().message() +
                " (is `supervise serve` running? --socket or SUPERVISE_SOCKET names it)");
  // Signals wait in a signalfd from here on: each one is forwarded, not lost.
  sigset_t forwarded, old_mask;
  sigemptyset(&forwarded);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&forwarded, sig);
  ::sigprocmask(SIG_BLOCK, &forwarded, &old_mask);
  UniqueFd sigfd(::signalfd(-1, &forwarded, SFD_CLOEXEC | SFD_NONBLOCK));

  if (auto st = sendWithFds(sock->get(), frame(encodeRequest(request)), {0, 1, 2}); !st)
    return fail(st.error().message());

  FrameReader reader(kMaxControlBytes);
  std::string command_id;
  for (;;) {
    pollfd fds[2] = {{sock->get(), POLLIN, 0}, {sigfd.get(), POLLIN, 0}};
    if (::poll(fds, sigfd ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      return fail(std::string("poll: ") + std::strerror(errno));
    }
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
      return fail("the exec daemon closed the connection before the command ended" +
                  (command_id.empty() ? std::string() : " (command " + command_id + ")"));
    reader.feed(std::string_view(buf, size_t(n)));
    for (;;) {
      auto body = reader.next();
      if (!body) return fail("from the daemon: " + body.error().message());
      if (!*body) break;
      auto reply = decodeReply(**body);
      if (!reply) return fail("from the daemon: " + reply.error().message());
      if (reply->type == "started") {
        command_id = reply->command_id;
      } else if (reply->type == "error") {
        return fail(reply->message, reply->status ? reply->status : kExitSupervisorError);
      } else {  // exit
        if (reply->timed_out) {
          const double s = double(request.timeout_ms) / 1000.0;
          char text[64];
          std::snprintf(text, sizeof text, "%g", s);
          return fail(std::string("timed out after ") + text + " s: the command was killed",
                      kExitTimedOut);
        }
        return reply->status;
      }
    }
  }
}

}  // namespace sv::supervisor::serve
