// seccomp user-notify ioctls with the kernel's ENOENT/EINTR semantics folded in.
#include "tracer/seccomp/notify.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "common/kernel_abi.h"

namespace sv::tracer {

Result<NotifyListener> NotifyListener::create(UniqueFd listener) {
  if (!listener) return Error{EBADF, "NotifyListener: invalid listener fd"};
  seccomp_notif_sizes sizes{};
  if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) != 0) {
    return errnoError("seccomp(SECCOMP_GET_NOTIF_SIZES)");
  }
  return NotifyListener(std::move(listener), sizes);
}

NotifyListener::NotifyListener(UniqueFd fd, seccomp_notif_sizes sizes)
    : fd_(std::move(fd)), sizes_(sizes) {
  // Never smaller than our headers' structs: we write their fields.
  sizes_.seccomp_notif = std::max<uint16_t>(sizes_.seccomp_notif, sizeof(seccomp_notif));
  sizes_.seccomp_notif_resp =
      std::max<uint16_t>(sizes_.seccomp_notif_resp, sizeof(seccomp_notif_resp));
  req_ = std::make_unique<unsigned char[]>(sizes_.seccomp_notif);
  resp_ = std::make_unique<unsigned char[]>(sizes_.seccomp_notif_resp);
}

bool notifyAddFdSendSupported(int listener_fd) noexcept {
  seccomp_notif_addfd addfd{};
  addfd.id = 0xffffffffffffULL;
  addfd.flags = SECCOMP_ADDFD_FLAG_SEND;
  addfd.srcfd = static_cast<uint32_t>(listener_fd);  // any open fd: fget() precedes the lookup
  return ioctl(listener_fd, SECCOMP_IOCTL_NOTIF_ADDFD, &addfd) != 0 && errno == ENOENT;
}

Status NotifyListener::enableSyncWakeUp() {
  if (ioctl(fd_.get(), abi::kSeccompIoctlNotifSetFlags, abi::kSeccompUserNotifFdSyncWakeUp) != 0) {
    return errnoError("SECCOMP_IOCTL_NOTIF_SET_FLAGS(SYNC_WAKE_UP)");
  }
  return {};
}

Result<bool> NotifyListener::receive(seccomp_notif*& out) {
  // The kernel rejects a RECV buffer that is not zeroed (EINVAL).
  std::memset(req_.get(), 0, sizes_.seccomp_notif);
  auto* req = reinterpret_cast<seccomp_notif*>(req_.get());
  if (ioctl(fd_.get(), SECCOMP_IOCTL_NOTIF_RECV, req) != 0) {
    // ENOENT: the notification we were woken for vanished (target killed, or
    // a signal interrupted its syscall) before we picked it up.
    // EINTR: a signal for us; the caller's loop polls again.
    if (errno == ENOENT || errno == EINTR) return false;
    return errnoError("SECCOMP_IOCTL_NOTIF_RECV");
  }
  out = req;
  return true;
}

Status NotifyListener::send(uint64_t id, int64_t val, int32_t err, uint32_t flags) {
  std::memset(resp_.get(), 0, sizes_.seccomp_notif_resp);
  auto* resp = reinterpret_cast<seccomp_notif_resp*>(resp_.get());
  resp->id = id;
  resp->val = val;
  resp->error = err;
  resp->flags = flags;
  while (ioctl(fd_.get(), SECCOMP_IOCTL_NOTIF_SEND, resp) != 0) {
    if (errno == EINTR) continue;
    // ENOENT: the target was killed or its syscall interrupted after RECV; the
    // kernel has already unblocked it, so there is nobody left to answer.
    if (errno == ENOENT) return {};
    return errnoError("SECCOMP_IOCTL_NOTIF_SEND");
  }
  return {};
}

Status NotifyListener::respondErrno(uint64_t id, int err) { return send(id, 0, -std::abs(err), 0); }

Status NotifyListener::respondValue(uint64_t id, int64_t val) { return send(id, val, 0, 0); }

Status NotifyListener::respondContinue(uint64_t id) {
  return send(id, 0, 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE);
}

Result<int> NotifyListener::addFd(uint64_t id, int fd, bool cloexec, bool send_atomically) {
  seccomp_notif_addfd addfd{};
  addfd.id = id;
  addfd.flags = send_atomically ? SECCOMP_ADDFD_FLAG_SEND : 0;
  addfd.srcfd = static_cast<uint32_t>(fd);
  addfd.newfd = 0;
  addfd.newfd_flags = cloexec ? O_CLOEXEC : 0;
  int rc;
  do {
    rc = ioctl(fd_.get(), SECCOMP_IOCTL_NOTIF_ADDFD, &addfd);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) {
    // ENOENT: the target went away (see file comment); nothing to respond to.
    return errnoError("SECCOMP_IOCTL_NOTIF_ADDFD");
  }
  return rc;
}

bool NotifyListener::idValid(uint64_t id) {
  return ioctl(fd_.get(), SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

}  // namespace sv::tracer
