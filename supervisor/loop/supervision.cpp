// Supervision: see supervision.h.
#include "supervisor/loop/supervision.h"

#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>

namespace sv::supervisor {

Supervision::Supervision() { uv_loop_init(&loop_); }

Supervision::~Supervision() {
  uv_walk(&loop_, [](uv_handle_t* h, void*) { if (!uv_is_closing(h)) uv_close(h, nullptr); },
          nullptr);
  uv_run(&loop_, UV_RUN_DEFAULT);
  uv_loop_close(&loop_);
}

void Supervision::invoke(const Callback& fn) noexcept {
  try {
    fn();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "supervise: internal error in the event loop: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "supervise: internal error in the event loop\n");
  }
}

void Supervision::watchReadable(int fd, Callback fn) {
  Poll& p = polls_.emplace_back();
  p.fd = fd;
  p.fn = std::move(fn);
  uv_poll_init(&loop_, &p.handle, fd);
  p.handle.data = &p;
  uv_poll_start(&p.handle, UV_READABLE | UV_DISCONNECT,
                [](uv_poll_t* h, int, int) { invoke(static_cast<Poll*>(h->data)->fn); });
}

void Supervision::watchOnce(int fd, Callback fn) {
  Poll& p = polls_.emplace_back();
  p.fd = fd;
  p.fn = std::move(fn);
  uv_poll_init(&loop_, &p.handle, fd);
  p.handle.data = &p;
  uv_poll_start(&p.handle, UV_READABLE | UV_DISCONNECT, [](uv_poll_t* h, int, int) {
    uv_poll_stop(h);
    invoke(static_cast<Poll*>(h->data)->fn);
  });
}

void Supervision::addTimer(uint64_t period_ms, Callback fn) {
  Timer& t = timers_.emplace_back();
  t.period_ms = period_ms;
  t.fn = std::move(fn);
  uv_timer_init(&loop_, &t.handle);
  t.handle.data = &t;
}

void Supervision::atStop(Callback fn) { at_stop_.push_back(std::move(fn)); }

void Supervision::watchChild(pid_t pid, int fd,
                             std::function<std::optional<siginfo_t>()> reaped) {
  child_pid_ = pid;
  child_pidfd_ = fd;
  child_reaped_ = std::move(reaped);
  watchReadable(fd, [this] { onChildReadable(); });
}

void Supervision::onChildReadable() {
  if (child_reaped_) {
    if (auto info = child_reaped_()) {
      exit_ = *info;
      uv_stop(&loop_);
    }
    return;
  }
  siginfo_t info{};
  if (::waitid(P_PIDFD, static_cast<id_t>(child_pidfd_), &info, WEXITED | WNOHANG) != 0 ||
      info.si_pid == 0)
    return;
  exit_ = info;
  uv_stop(&loop_);
}

void Supervision::watchSignals(int sigfd) {
  signal_fd_ = sigfd;
  watchReadable(sigfd, [this] { onSignalReadable(); });
}

void Supervision::interceptSignal(int signo, Callback fn) { intercepted_[signo] = std::move(fn); }

void Supervision::onSignalReadable() {
  signalfd_siginfo si;
  while (::read(signal_fd_, &si, sizeof si) == sizeof si) {
    const int signo = static_cast<int>(si.ssi_signo);
    if (auto it = intercepted_.find(signo); it != intercepted_.end()) {
      invoke(it->second);
      continue;
    }
    // A terminal's Ctrl-C (SI_KERNEL) already reached the command, which
    // shares our process group; only relay what was sent to us alone.
    if (si.ssi_code != SI_KERNEL) ::kill(child_pid_, signo);
  }
}

std::optional<siginfo_t> Supervision::run() {
  for (Timer& t : timers_)
    uv_timer_start(&t.handle, [](uv_timer_t* h) { invoke(static_cast<Timer*>(h->data)->fn); },
                   t.period_ms, t.period_ms);
  uv_run(&loop_, UV_RUN_DEFAULT);
  for (const Callback& fn : at_stop_) invoke(fn);
  return exit_;
}

}  // namespace sv::supervisor
