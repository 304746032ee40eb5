// NotifyThread: answers user-notify requests on a thread of their own.
//
// Why not the libuv loop: with SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP the kernel
// wakes the listener's waiter on the CPU of the process that is blocked in
// the syscall, and the reply wakes that process back on ours, so a round trip
// stays on one CPU (~6 µs here instead of 40-60 µs across CPUs). The hint
// survives a plain poll() wait (pollwake passes the wake flags on) but not
// epoll, whose callback re-wakes the loop thread without it. So this thread
// waits in poll() on the listener alone and calls NotifyHandler::handleOne();
// the loop keeps everything else. AuditLog is thread-safe; the handler's other
// state is used only here.
#pragma once

#include <pthread.h>

#include <memory>

#include "common/result.h"
#include "common/unique_fd.h"
#include "supervisor/notify/notify_handler.h"

namespace sv::supervisor {

class NotifyThread {
 public:
  // Starts answering `listener_fd` with `handler` (both must outlive this).
  // The thread blocks every signal: they belong to the loop's signalfd.
  static Result<std::unique_ptr<NotifyThread>> start(NotifyHandler& handler, int listener_fd);

  // Stops the thread (after the request it is handling, if any) and joins it.
  ~NotifyThread();
  NotifyThread(const NotifyThread&) = delete;
  NotifyThread& operator=(const NotifyThread&) = delete;

 private:
  NotifyThread(NotifyHandler& handler, int listener_fd, UniqueFd stop)
      : handler_(handler), listener_fd_(listener_fd), stop_(std::move(stop)) {}
  static void* main(void* self) noexcept;

  NotifyHandler& handler_;
  int listener_fd_;
  UniqueFd stop_;  // eventfd: readable = stop
  pthread_t thread_{};
};

}  // namespace sv::supervisor
