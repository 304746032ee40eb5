// Listening unix sockets with an accept-and-drop thread (unix_listeners.h).
#include "tests/differential/unix_listeners.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>

namespace sv::differential {

Result<std::unique_ptr<UnixListeners>> UnixListeners::start(const std::vector<std::string>& paths) {
  std::unique_ptr<UnixListeners> l(new UnixListeners());
  for (const auto& path : paths) {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) return errnoError("socket");
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) return Error{ENAMETOOLONG, "bind " + path};
    path.copy(addr.sun_path, path.size());
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      return errnoError("bind " + path);
    if (::listen(fd.get(), SOMAXCONN) != 0) return errnoError("listen " + path);
    l->sockets_.push_back(std::move(fd));
  }
  l->stop_ = UniqueFd(::eventfd(0, EFD_CLOEXEC));
  if (!l->stop_) return errnoError("eventfd");
  l->thread_ = std::thread([raw = l.get()] { raw->acceptUntilStopped(); });
  return l;
}

UnixListeners::~UnixListeners() {
  const uint64_t one = 1;
  if (thread_.joinable()) {
    (void)!::write(stop_.get(), &one, sizeof one);
    thread_.join();
  }
}

void UnixListeners::acceptUntilStopped() {
  std::vector<pollfd> fds;
  for (const auto& s : sockets_) fds.push_back({s.get(), POLLIN, 0});
  fds.push_back({stop_.get(), POLLIN, 0});
  while (true) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds.back().revents) return;
    for (size_t i = 0; i + 1 < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      // Drop every connection waiting: the requests only need connect's result.
      while (true) {
        UniqueFd conn(::accept4(fds[i].fd, nullptr, nullptr, SOCK_CLOEXEC));
        if (!conn) break;
      }
    }
  }
}

}  // namespace sv::differential
