// sendWithFds / receiveWithFds; see wire.h.
#include "supervisor/serve/wire.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace sv::supervisor::serve {

Status sendWithFds(int sock, std::string_view bytes, const std::vector<int>& fds) {
  if (fds.size() > kMaxFdsPerMessage) return Error{EINVAL, "sendWithFds: too many fds"};
  size_t off = 0;
  bool fds_sent = fds.empty();
  while (off < bytes.size() || !fds_sent) {
    iovec iov{const_cast<char*>(bytes.data()) + off, bytes.size() - off};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)] = {};
    if (!fds_sent) {
      msg.msg_control = control;
      msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
      std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    const ssize_t n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errnoError("send to the exec daemon");
    }
    fds_sent = true;
    off += size_t(n);
  }
  return {};
}

ssize_t receiveWithFds(int sock, char* buf, size_t size, std::vector<UniqueFd>* fds,
                       bool* too_many) {
  iovec iov{buf, size};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  // Room for one more than allowed, so a message with too many is seen as such.
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * (kMaxFdsPerMessage + 1))];
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  const ssize_t n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  if (n < 0) return n;
  size_t received = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds->emplace_back(fd);
      ++received;
    }
  }
  if ((msg.msg_flags & MSG_CTRUNC) || received > kMaxFdsPerMessage) {
    *too_many = true;
    fds->clear();
  }
  return n;
}

}  // namespace sv::supervisor::serve
