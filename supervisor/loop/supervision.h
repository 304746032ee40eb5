// Supervision: the session's libuv loop and everything it watches.
//
// The loop owns no policy: session.cpp registers what to watch (the
// command's pidfd, the forwarded signals, each backend's event fd, periodic
// drains) and the loop runs until the command exits. User-notify decisions
// do not run here (see notify_thread.h); the loop carries what may wait a
// few milliseconds: BPF event rings, audit flushing, signals.
//
// Callbacks run on the loop thread from libuv's C callbacks; an exception
// thrown by one is caught and reported at the boundary, never propagated.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <uv.h>

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <optional>

namespace sv::supervisor {

class Supervision {
 public:
  using Callback = std::function<void()>;

  Supervision();
  ~Supervision();
  Supervision(const Supervision&) = delete;
  Supervision& operator=(const Supervision&) = delete;

  // Calls `fn` whenever `fd` is readable or hung up. The fd stays the
  // caller's and must outlive the loop.
  void watchReadable(int fd, Callback fn);
  // Calls `fn` the first time `fd` is readable or hung up, then stops
  // watching it (an fd at EOF stays readable).
  void watchOnce(int fd, Callback fn);
  // Calls `fn` every `period_ms` while the loop runs.
  void addTimer(uint64_t period_ms, Callback fn);
  // Calls `fn` once after the command exited and the loop stopped: the last
  // drain of an event ring.
  void atStop(Callback fn);

  // The loop stops when the command (pid) exits: when `fd` (its pidfd) is
  // readable and waitid() on it has the status; or, given `reaped`, when
  // `fd` is readable and `reaped` has it (someone else waits for the
  // command: the ptrace backend's tracing thread).
  void watchChild(pid_t pid, int fd,
                  std::function<std::optional<siginfo_t>()> reaped = nullptr);
  // Signals read from `sigfd` (a signalfd) are relayed to the command unless
  // intercepted: an intercepted signal sent to supervise runs `fn` instead.
  void watchSignals(int sigfd);
  void interceptSignal(int signo, Callback fn);

  // Runs until the command exits; its waitid() status, or nullopt if the
  // loop ended without one.
  std::optional<siginfo_t> run();

 private:
  struct Poll {
    uv_poll_t handle{};
    int fd = -1;
    Callback fn;
  };
  struct Timer {
    uv_timer_t handle{};
    uint64_t period_ms = 0;
    Callback fn;
  };
  static void invoke(const Callback& fn) noexcept;
  void onChildReadable();
  void onSignalReadable();

  uv_loop_t loop_{};
  std::list<Poll> polls_;  // stable addresses: libuv holds pointers to the handles
  std::list<Timer> timers_;
  std::list<Callback> at_stop_;
  std::map<int, Callback> intercepted_;
  pid_t child_pid_ = -1;
  int child_pidfd_ = -1;
  std::function<std::optional<siginfo_t>()> child_reaped_;
  int signal_fd_ = -1;
  std::optional<siginfo_t> exit_;
};

}  // namespace sv::supervisor
