// Peer credentials and the "not from inside a session" check; see peer.h.
#include "supervisor/serve/peer.h"

#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <csignal>
#include <vector>

#include "common/read_file.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77  // Linux 6.5; Debian 12's headers predate it
#endif

namespace sv::supervisor::serve {
namespace {

// "supervise-" and 12 lowercase hex digits: the session cgroup's name.
bool isSessionCgroupName(std::string_view name) {
  constexpr std::string_view kPrefix = "supervise-";
  if (name.size() != kPrefix.size() + 12 || !name.starts_with(kPrefix)) return false;
  for (char c : name.substr(kPrefix.size()))
    if (!std::isxdigit(static_cast<unsigned char>(c)) || std::isupper(static_cast<unsigned char>(c)))
      return false;
  return true;
}

// Every session cgroup name on the lines' paths ("N:controllers:/a/b").
std::vector<std::string_view> sessionNames(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    const size_t colon = line.find(':', line.find(':') + 1);
    if (colon == std::string_view::npos) continue;
    std::string_view path = line.substr(colon + 1);
    while (!path.empty()) {
      const size_t slash = path.find('/');
      std::string_view part = path.substr(0, slash);
      path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
      if (isSessionCgroupName(part)) out.push_back(part);
    }
  }
  return out;
}

}  // namespace

Result<Peer> peerOf(int connection) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
    return errnoError("getsockopt SO_PEERCRED");
  Peer peer;
  peer.pid = cred.pid;
  peer.uid = cred.uid;
  peer.gid = cred.gid;
  int pidfd = -1;
  len = sizeof pidfd;
  if (::getsockopt(connection, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 && pidfd >= 0)
    peer.pidfd = UniqueFd(pidfd);
  return peer;
}

std::string supervisedSessionOf(std::string_view proc_cgroup, std::string_view own_cgroup) {
  const std::vector<std::string_view> own = sessionNames(own_cgroup);
  for (std::string_view name : sessionNames(proc_cgroup)) {
    bool ours = false;
    for (std::string_view o : own) ours = ours || o == name;
    if (!ours) return std::string(name);
  }
  return "";
}

std::string supervisedSessionOfPeer(const Peer& peer) {
  if (peer.pid <= 0) return "(unknown peer)";
  std::string theirs, own;
  if (!readFileInto("/proc/" + std::to_string(peer.pid) + "/cgroup", theirs, 64 * 1024))
    return "(peer gone)";
  // The pid read above is still the peer: its pidfd answers a null signal.
  if (peer.pidfd &&
      ::syscall(SYS_pidfd_send_signal, peer.pidfd.get(), 0, nullptr, 0) != 0)
    return "(peer gone)";
  (void)readFileInto("/proc/self/cgroup", own, 64 * 1024);
  return supervisedSessionOf(theirs, own);
}

}  // namespace sv::supervisor::serve
