// NotifyListener: the supervisor's end of a seccomp user-notify filter.
//
// Owns the listener fd the child got from installSeccompFilter(). Buffers are
// sized once with SECCOMP_GET_NOTIF_SIZES because the running kernel's structs
// may be larger than the ones in the build host's headers; receive() then never
// allocates. All methods are plain ioctls on the fd: none allocate after
// create(), and all are async-signal-safe except create().
//
// Kernel quirks handled here (callers get simple answers):
// - RECV fails with ENOENT when the target was killed or its syscall was
//   interrupted by a signal between our poll() wake-up and RECV: nothing to
//   answer, receive() returns false.
// - SEND/ADDFD fail with ENOENT for the same reason after RECV: the kernel
//   already unblocked the target (it sees EINTR/restarts or is dead), so the
//   respond*() calls treat it as success.
#pragma once

#include <linux/seccomp.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>

#include "common/result.h"
#include "common/unique_fd.h"

namespace sv::tracer {

// True when the kernel behind `listener_fd` supports SECCOMP_IOCTL_NOTIF_ADDFD
// with SECCOMP_ADDFD_FLAG_SEND (5.14), which every emulated open relies on.
// Asks about a notification id that cannot exist: a kernel that knows the
// ioctl and the flag looks the id up and says ENOENT; one that does not
// rejects the command or flag first. Raw ioctl only: async-signal-safe.
bool notifyAddFdSendSupported(int listener_fd) noexcept;

class NotifyListener {
 public:
  // Takes ownership of a listener fd; queries the notify struct sizes.
  static Result<NotifyListener> create(UniqueFd listener);

  NotifyListener(NotifyListener&&) noexcept = default;
  NotifyListener& operator=(NotifyListener&&) noexcept = default;
  NotifyListener(const NotifyListener&) = delete;
  NotifyListener& operator=(const NotifyListener&) = delete;

  // The fd to poll (readable = a notification is pending; POLLHUP = every
  // process using the filter is gone).
  int fd() const { return fd_.get(); }

  // SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (6.6): the kernel wakes the supervisor
  // on the same CPU, which roughly halves notification latency. Optional:
  // fails with EINVAL on older kernels and nothing else changes.
  Status enableSyncWakeUp();

  // Receives one notification into the internal buffer and points `out` at it
  // (valid until the next receive()). Returns false when there was nothing to
  // handle: ENOENT (the target went away or was interrupted after poll woke
  // us) or EINTR (our own signal). Blocks if nothing is pending.
  Result<bool> receive(seccomp_notif*& out);

  // Fail the syscall with `err` (positive errno) in the target.
  Status respondErrno(uint64_t id, int err);
  // Make the syscall return `val` without running it (emulation).
  Status respondValue(uint64_t id, int64_t val);
  // Let the kernel run the syscall as issued. Only safe when the decision did
  // not depend on target memory (another thread may change it after we read
  // it); see docs/enforcement.md on why user-notify is racy by nature.
  Status respondContinue(uint64_t id);

  // Installs `fd` (ours) into the target and returns the target's fd number.
  // With send_atomically the syscall also returns that number (the one-step
  // ADDFD|SEND: no window where the fd exists but the syscall hangs). ENOENT
  // is returned as an Error (target gone; nothing more to respond).
  Result<int> addFd(uint64_t id, int fd, bool cloexec, bool send_atomically);

  // True while the notification `id` is still pending (the target has not
  // died or been interrupted). Check after reading target memory: if false,
  // the pid may already belong to someone else.
  bool idValid(uint64_t id);

 private:
  NotifyListener(UniqueFd fd, seccomp_notif_sizes sizes);
  Status send(uint64_t id, int64_t val, int32_t err, uint32_t flags);

  UniqueFd fd_;
  seccomp_notif_sizes sizes_{};
  std::unique_ptr<unsigned char[]> req_;
  std::unique_ptr<unsigned char[]> resp_;
};

}  // namespace sv::tracer
