// NotifyThread: see notify_thread.h.
#include "supervisor/notify/notify_thread.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace sv::supervisor {

Result<std::unique_ptr<NotifyThread>> NotifyThread::start(NotifyHandler& handler,
                                                          int listener_fd) {
  UniqueFd stop(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop) return errnoError("eventfd for the notify thread");
  std::unique_ptr<NotifyThread> self(new NotifyThread(handler, listener_fd, std::move(stop)));

  // The new thread inherits the creator's mask: block everything around the
  // create so no signal is ever delivered to it.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int err = pthread_create(&self->thread_, nullptr, &NotifyThread::main, self.get());
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (err != 0) return Error{err, "pthread_create for the notify thread"};
  return self;
}

NotifyThread::~NotifyThread() {
  const uint64_t one = 1;
  ssize_t unused = ::write(stop_.get(), &one, sizeof one);
  (void)unused;
  pthread_join(thread_, nullptr);
}

void* NotifyThread::main(void* arg) noexcept {
  auto* self = static_cast<NotifyThread*>(arg);
  pollfd fds[2] = {{self->listener_fd_, POLLIN, 0}, {self->stop_.get(), POLLIN, 0}};
  for (;;) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents != 0) break;
    if (fds[0].revents & POLLIN) {
      self->handler_.handleOne();  // never throws
    } else if (fds[0].revents & (POLLHUP | POLLERR | POLLNVAL)) {
      break;  // every process of the tree left the filter
    }
  }
  return nullptr;
}

}  // namespace sv::supervisor
