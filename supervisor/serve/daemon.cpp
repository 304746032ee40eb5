// ExecDaemon: the socket, the loop, one session runner per command; see
// daemon.h and docs/serve.md.
#include "supervisor/serve/daemon.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <list>
#include <map>
#include <optional>

#include "common/unique_fd.h"
#include "supervisor/audit/audit_log.h"
#include "supervisor/audit/policy_json.h"
#include "supervisor/proc/process_info.h"
#include "supervisor/serve/peer.h"
#include "supervisor/serve/protocol.h"
#include "supervisor/serve/runner.h"
#include "supervisor/serve/wire.h"

extern char** environ;

namespace sv::supervisor::serve {
namespace {

// A client has this long to send its whole request: a slow or silent one
// must not hold a connection slot for ever.
constexpr uint64_t kRequestDeadlineMs = 10'000;
// Connections still sending their request, at most.
constexpr size_t kMaxPendingConnections = 64;
// A ready session is replaced after this long unused: what it was prepared
// on (the host's features, resolv.conf, the inodes of its Landlock rules)
// is checked or stays put, but not for ever.
constexpr uint64_t kReadyMaxAgeMs = 60'000;
// Ready runners that die unused in a row before the daemon stops making
// them (and says why): each command then sets its session up itself.
constexpr int kReadyFailuresToGiveUp = 3;
// After a ready session was taken, the next one is set up this much later
// (or when the command ends, if sooner).
constexpr uint64_t kRefillDelayMs = 50;

void say(const std::string& line) { std::fprintf(stderr, "supervise serve: %s\n", line.c_str()); }

// ---- the socket ----

// The socket's directory: created 0700 if missing; an existing one must be
// ours and closed to everyone else, or another user could swap the socket.
Status prepareSocketDir(const std::string& socket_path) {
  const size_t slash = socket_path.rfind('/');
  if (socket_path.empty() || socket_path[0] != '/' || slash == std::string::npos)
    return Error{0, "--socket " + socket_path + ": an absolute path is needed"};
  const std::string dir = slash == 0 ? "/" : socket_path.substr(0, slash);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return errnoError("create the socket directory " + dir);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return errnoError("stat " + dir);
  if (!S_ISDIR(st.st_mode)) return Error{ENOTDIR, dir};
  if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0)
    return Error{0, "the socket directory " + dir +
                        " must belong to this user and be closed to everyone else (mode "
                        "0700): another user could replace the socket"};
  return {};
}

Result<UniqueFd> listenOn(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path)
    return Error{ENAMETOOLONG, "--socket " + path + " (at most 107 bytes)"};
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) return Error{EEXIST, path + " exists and is not a socket"};
    // A live daemon answers; a stale socket (a daemon that was killed) is replaced.
    UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (probe && ::connect(probe.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0)
      return Error{EADDRINUSE, "another supervise serve is listening on " + path};
    if (::unlink(path.c_str()) != 0) return errnoError("remove the stale socket " + path);
  }
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return errnoError("socket");
  const mode_t old = ::umask(0177);  // the socket file is 0600 from its first moment
  const int bound = ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::umask(old);
  if (bound != 0) return errnoError("bind " + path);
  if (::listen(fd.get(), 128) != 0) return errnoError("listen " + path);
  return fd;
}

// ---- the loop ----

class Daemon;

// One client connection and, once its request is in, its command.
struct Connection {
  Daemon* daemon = nullptr;
  UniqueFd fd;
  Peer peer;
  FrameReader reader{kMaxRequestBytes};
  std::vector<UniqueFd> stdio;  // the client's stdin, stdout, stderr
  uv_poll_t poll{};
  uv_timer_t timer{};  // the request deadline, then the command's --timeout
  int open_handles = 0;
  bool closing = false;

  // Once running:
  pid_t runner = -1;
  UniqueFd runner_pidfd;
  uv_poll_t runner_poll{};
  UniqueFd control;  // the runner's control channel (runner.h)
  uv_poll_t control_poll{};
  bool aborted = false;  // the abort byte went
  bool replied = false;  // the client has its exit status
  std::string command_id;
  uint64_t timeout_ms = 0;
  bool timed_out = false;
  bool client_gone = false;
  bool running() const { return runner > 0; }
};

// A runner preparing a session for the next request (runner.h).
struct ReadyRunner {
  Daemon* daemon = nullptr;
  RunnerProcess process;
  uint64_t born_ms = 0;
  bool retired = false;  // told to go (EOF): its end is expected
  uv_poll_t exit_poll{};
};

class Daemon {
 public:
  explicit Daemon(const DaemonOptions& options) : options_(options) {}
  int run();

  void onReadable(Connection& c);
  void onRunnerExit(Connection& c);
  void onRunnerEnd(Connection& c);
  void onTimer(Connection& c);
  void onReadyExit(ReadyRunner& r);
  void onReadyTimer() {
    retireReady(false);
    refillReady();
  }

 private:
  // 0, or the exit status to stop with (what went wrong already said).
  int setUp();
  void accept();
  void refuse(Connection& c, int status, const std::string& message);
  void refuseClient(Connection& c, const std::string& rule, const std::string& reason);
  void onRequest(Connection& c, ExecRequest request);
  Status spawn(Connection& c, const ExecRequest& request);
  void abortCommand(Connection& c, char why);
  void reply(Connection& c, int status, int signal);
  SessionOptions sessionTemplate() const;
  void refillReady();
  std::optional<RunnerProcess> takeReady();
  void retireReady(bool all);
  void close(Connection& c);
  void onSignal();
  void reload();
  void drain();
  void maybeFinish();
  size_t runningFor(uid_t uid) const;

  const DaemonOptions& options_;
  std::shared_ptr<const policy::Policy> policy_;
  std::string policy_sha256_;
  uv_loop_t loop_{};
  UniqueFd listener_;
  uv_poll_t listen_poll_{};
  bool listening_ = false;
  UniqueFd sigfd_;
  uv_poll_t signal_poll_{};
  std::optional<AuditLog> audit_;
  uv_timer_t audit_timer_{};
  std::list<Connection> connections_;
  std::list<ReadyRunner> ready_;
  uv_timer_t ready_timer_{};
  int ready_failures_ = 0;  // in a row
  std::vector<uid_t> allowed_;
  uint64_t commands_started_ = 0;
  bool draining_ = false;
  sigset_t old_mask_{};
};

int Daemon::setUp() {
  auto fail = [](const Error& e, int code) {
    say(e.message());
    return code;
  };
  // fds 0-2 open (/dev/null where closed): a client's fds received into
  // them would be clobbered by the runner's dup2 onto its stdio.
  for (int fd = 0; fd < 3; ++fd)
    if (::fcntl(fd, F_GETFD) < 0 && ::open("/dev/null", O_RDWR) < 0)
      return fail(errnoError("open /dev/null"), kExitSupervisorError);
  auto loaded = options_.load_policy();
  if (!loaded) return fail(loaded.error(), kExitPolicyError);
  policy_ = *loaded;
  policy_sha256_ = policyDigest(*policy_);
  allowed_ = options_.allowed_uids.empty() ? std::vector<uid_t>{::getuid()} : options_.allowed_uids;
  if (auto st = prepareSocketDir(options_.socket_path); !st)
    return fail(st.error(), kExitSupervisorError);
  auto fd = listenOn(options_.socket_path);
  if (!fd) return fail(fd.error(), kExitSupervisorError);
  listener_ = std::move(*fd);
  // The daemon's own trail: same sinks as its commands, its own session id.
  if (auto st = openSessionAudit(audit_, options_.session, *policy_, newSessionId(),
                                 policy_sha256_);
      !st)
    return fail(Error{0, "audit: " + st.error().message()}, kExitSupervisorError);
  return 0;
}

// Writes `body` as one frame; a client that stopped reading loses it (the
// socket is non-blocking: the daemon never waits on a client).
void sendFrame(int fd, const std::string& body) {
  const std::string bytes = frame(body);
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return;
    }
    off += size_t(n);
  }
}

void Daemon::refuse(Connection& c, int status, const std::string& message) {
  Reply r;
  r.type = "error";
  r.status = status;
  r.message = message;
  sendFrame(c.fd.get(), encodeReply(r));
  close(c);
}

// A client the daemon will not serve: a decision like any other, in the
// daemon's trail (category network, operation accept), then a clear refusal.
void Daemon::refuseClient(Connection& c, const std::string& rule, const std::string& reason) {
  const ProcessInfo process = readProcessInfo(c.peer.pid, c.peer.pid);
  AuditEvent e;
  e.category = "network";
  e.operation = "accept";
  e.decision = "deny";
  e.enforced_by = "supervise-serve";
  e.err = EACCES;
  e.rule_id = rule;
  e.rule_name = "serve: " + rule;
  e.rule_reason = reason;
  e.process = &process;
  e.network.family = "unix";
  e.network.unix_path = options_.socket_path;
  audit_->emit(e);
  refuse(c, kExitSupervisorError, "refused: " + reason);
}

void Daemon::accept() {
  for (;;) {
    UniqueFd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN) say(std::string("accept: ") + std::strerror(errno));
      return;
    }
    size_t pending = 0;
    for (const auto& c : connections_) pending += c.running() ? 0 : 1;
    if (pending >= kMaxPendingConnections) continue;  // closed: a flood of silent clients
    Connection& c = connections_.emplace_back();
    c.daemon = this;
    c.fd = std::move(fd);
    uv_poll_init(&loop_, &c.poll, c.fd.get());
    uv_timer_init(&loop_, &c.timer);
    c.poll.data = c.timer.data = &c;
    c.open_handles = 2;
    uv_poll_start(&c.poll, UV_READABLE | UV_DISCONNECT, [](uv_poll_t* h, int, int) {
      auto* conn = static_cast<Connection*>(h->data);
      conn->daemon->onReadable(*conn);
    });
    uv_timer_start(&c.timer, [](uv_timer_t* t) {
      auto* conn = static_cast<Connection*>(t->data);
      conn->daemon->onTimer(*conn);
    }, kRequestDeadlineMs, 0);

    auto peer = peerOf(c.fd.get());
    if (!peer) {
      refuse(c, kExitSupervisorError, "refused: " + peer.error().message());
      continue;
    }
    c.peer = std::move(*peer);
    if (std::find(allowed_.begin(), allowed_.end(), c.peer.uid) == allowed_.end()) {
      refuseClient(c, "serve-peer-uid",
                   "uid " + std::to_string(c.peer.uid) +
                       " may not use this daemon (supervise serve --allow-uid)");
      continue;
    }
    if (const std::string session = supervisedSessionOfPeer(c.peer); !session.empty()) {
      refuseClient(c, "serve-peer-supervised",
                   "a supervised command may not reach the exec daemon (it runs in " + session +
                       "): a tree must not start commands outside its own session");
      continue;
    }
  }
}

void Daemon::onReadable(Connection& c) {
  if (c.closing) return;
  for (;;) {
    std::vector<UniqueFd> fds;
    char buf[64 * 1024];
    bool truncated = false;
    const ssize_t n = receiveWithFds(c.fd.get(), buf, sizeof buf, &fds, &truncated);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return;
    }
    if (truncated) return refuse(c, kExitPolicyError, "malformed request: more than 3 fds sent");
    for (auto& fd : fds) {
      if (c.running() || c.stdio.size() >= 3)
        return refuse(c, kExitPolicyError, "malformed request: fds sent more than once");
      c.stdio.push_back(std::move(fd));
    }
    if (n <= 0) {  // EOF (or a reset): the client is gone
      if (!c.running()) return close(c);
      c.client_gone = true;
      uv_poll_stop(&c.poll);
      abortCommand(c, kAbortClientGone);
      return;
    }
    c.reader.feed(std::string_view(buf, size_t(n)));
    for (;;) {
      auto body = c.reader.next();
      if (!body) return refuse(c, kExitPolicyError, "malformed request: " + body.error().message());
      if (!*body) break;
      auto message = decodeClientMessage(**body);
      if (!message) return refuse(c, kExitPolicyError, message.error().message());
      if (message->exec) {
        if (c.running()) return refuse(c, kExitPolicyError, "malformed request: a second exec");
        c.reader.setMax(kMaxControlBytes);
        onRequest(c, std::move(*message->exec));
        if (c.closing) return;
      } else if (message->signal) {
        if (!c.running()) return refuse(c, kExitPolicyError, "malformed request: signal before exec");
        // The runner forwards it to the command as `supervise --` does.
        (void)::syscall(SYS_pidfd_send_signal, c.runner_pidfd.get(), message->signal, nullptr, 0);
      }
    }
  }
}

size_t Daemon::runningFor(uid_t uid) const {
  size_t n = 0;
  for (const auto& c : connections_) n += c.running() && c.peer.uid == uid ? 1 : 0;
  return n;
}

void Daemon::onRequest(Connection& c, ExecRequest request) {
  if (draining_) return refuse(c, kExitSupervisorError, "the daemon is shutting down");
  if (c.stdio.size() != 3)
    return refuse(c, kExitPolicyError,
                  "malformed request: stdin, stdout and stderr must come with it (SCM_RIGHTS)");
  if (!request.profile.empty() && !policy_->profiles.count(request.profile))
    return refuse(c, kExitPolicyError, "no profile \"" + request.profile + "\" in the policy");
  size_t running = 0;
  for (const auto& other : connections_) running += other.running() ? 1 : 0;
  if (running >= options_.max_commands)
    return refuse(c, kExitSupervisorError,
                  "busy: " + std::to_string(running) + " commands are running (at most " +
                      std::to_string(options_.max_commands) + ", supervise serve --max-commands)");
  if (runningFor(c.peer.uid) >= options_.max_per_client)
    return refuse(c, kExitSupervisorError,
                  "busy: uid " + std::to_string(c.peer.uid) + " runs " +
                      std::to_string(runningFor(c.peer.uid)) + " commands (at most " +
                      std::to_string(options_.max_per_client) +
                      " per client, supervise serve --max-per-client)");
  if (auto st = spawn(c, request); !st)
    return refuse(c, kExitSupervisorError, "cannot start the command: " + st.error().message());
  uv_timer_stop(&c.timer);
  c.timeout_ms = request.timeout_ms;
  if (c.timeout_ms) uv_timer_start(&c.timer, [](uv_timer_t* t) {
    auto* conn = static_cast<Connection*>(t->data);
    conn->daemon->onTimer(*conn);
  }, c.timeout_ms, 0);
}

// Each command's session: the daemon's template under the policy in effect.
SessionOptions Daemon::sessionTemplate() const {
  SessionOptions session = options_.session;
  session.policy = policy_;
  return session;
}

uint64_t nowMs(uv_loop_t* loop) { return uv_now(loop); }

// Keeps options_.ready_sessions runners preparing ahead of the requests.
void Daemon::refillReady() {
  auto waiting = [this] {
    return size_t(std::count_if(ready_.begin(), ready_.end(),
                                [](const ReadyRunner& r) { return !r.retired; }));
  };
  while (!draining_ && ready_failures_ < kReadyFailuresToGiveUp &&
         waiting() < options_.ready_sessions) {
    audit_->flush();  // nothing of the daemon's queue is written twice by a child
    auto forked = forkReadyRunner(sessionTemplate());
    if (!forked) {
      say("ready sessions: " + forked.error().message());
      ready_failures_ = kReadyFailuresToGiveUp;
      return;
    }
    ReadyRunner& r = ready_.emplace_back();
    r.daemon = this;
    r.process = std::move(*forked);
    r.born_ms = nowMs(&loop_);
    uv_poll_init(&loop_, &r.exit_poll, r.process.pidfd.get());
    r.exit_poll.data = &r;
    uv_poll_start(&r.exit_poll, UV_READABLE, [](uv_poll_t* h, int, int) {
      auto* runner = static_cast<ReadyRunner*>(h->data);
      runner->daemon->onReadyExit(*runner);
    });
  }
}

// A ready runner ended before any request: retired (expected), or it died.
void Daemon::onReadyExit(ReadyRunner& r) {
  siginfo_t info{};
  if (::waitid(P_PIDFD, static_cast<id_t>(r.process.pidfd.get()), &info, WEXITED | WNOHANG) != 0 ||
      info.si_pid == 0)
    return;
  uv_poll_stop(&r.exit_poll);
  if (!r.retired && ++ready_failures_ >= kReadyFailuresToGiveUp)
    say("ready sessions: " + std::to_string(kReadyFailuresToGiveUp) +
        " runners ended before their command (the last: " +
        (info.si_code == CLD_EXITED ? "exit " + std::to_string(info.si_status)
                                    : "signal " + std::to_string(info.si_status)) +
        "); each command sets its session up itself from now on");
  uv_close(reinterpret_cast<uv_handle_t*>(&r.exit_poll), [](uv_handle_t* h) {
    auto* runner = static_cast<ReadyRunner*>(h->data);
    Daemon* d = runner->daemon;
    d->ready_.remove_if([runner](const ReadyRunner& x) { return &x == runner; });
    d->refillReady();
    d->maybeFinish();
  });
}

// The oldest ready runner, out of the pool (its exit no longer watched
// there: the connection watches it from now on).
std::optional<RunnerProcess> Daemon::takeReady() {
  for (auto& r : ready_) {
    if (r.retired || !uv_is_active(reinterpret_cast<uv_handle_t*>(&r.exit_poll))) continue;
    uv_poll_stop(&r.exit_poll);
    RunnerProcess taken = std::move(r.process);
    r.retired = true;
    uv_close(reinterpret_cast<uv_handle_t*>(&r.exit_poll), [](uv_handle_t* h) {
      auto* runner = static_cast<ReadyRunner*>(h->data);
      runner->daemon->ready_.remove_if([runner](const ReadyRunner& x) { return &x == runner; });
    });
    return taken;
  }
  return std::nullopt;
}

// Tells ready runners to go (EOF on their control channel): all of them
// (a reload, a drain), or those prepared too long ago.
void Daemon::retireReady(bool all) {
  for (auto& r : ready_) {
    if (r.retired || !r.process.control) continue;
    if (!all && nowMs(&loop_) - r.born_ms < kReadyMaxAgeMs) continue;
    r.retired = true;
    r.process.control.reset();
  }
}

Status Daemon::spawn(Connection& c, const ExecRequest& request) {
  c.command_id = audit_->session().session_id + "-" + std::to_string(++commands_started_);
  std::optional<RunnerProcess> runner;
  // A ready session when there is one; one that cannot take the hand-off
  // (gone, or stuck) is killed and the command gets a fresh one.
  while (!runner) {
    auto ready = takeReady();
    if (!ready) break;
    const HandOff handoff{.request = request,
                          .command_id = c.command_id,
                          .client_pid = c.peer.pid,
                          .client_uid = c.peer.uid};
    if (auto st = handOff(*ready, handoff, c.stdio); st.ok()) {
      runner = std::move(*ready);
    } else {
      say("ready session runner " + std::to_string(ready->pid) + ": " + st.error().message());
      ::kill(ready->pid, SIGKILL);
      ::waitpid(ready->pid, nullptr, 0);
    }
  }
  if (!runner) {
    SessionOptions session = sessionTemplate();
    session.daemon = SessionOptions::FromDaemon{.command_id = c.command_id,
                                                .client_pid = c.peer.pid,
                                                .client_uid = c.peer.uid,
                                                .profile = request.profile};
    audit_->flush();  // nothing of the daemon's queue is written twice by a child
    auto forked = forkRunner(session, request, c.stdio);
    if (!forked) return forked.error();
    runner = std::move(*forked);
  }
  c.runner = runner->pid;
  c.runner_pidfd = std::move(runner->pidfd);
  c.control = std::move(runner->control);
  c.stdio.clear();  // the runner has them; the client sees EOF when the command is done
  uv_poll_init(&loop_, &c.runner_poll, c.runner_pidfd.get());
  uv_poll_init(&loop_, &c.control_poll, c.control.get());
  c.runner_poll.data = c.control_poll.data = &c;
  c.open_handles += 2;
  uv_poll_start(&c.runner_poll, UV_READABLE, [](uv_poll_t* h, int, int) {
    auto* conn = static_cast<Connection*>(h->data);
    conn->daemon->onRunnerExit(*conn);
  });
  uv_poll_start(&c.control_poll, UV_READABLE | UV_DISCONNECT, [](uv_poll_t* h, int, int) {
    auto* conn = static_cast<Connection*>(h->data);
    conn->daemon->onRunnerEnd(*conn);
  });
  Reply started;
  started.type = "started";
  started.command_id = c.command_id;
  started.policy_name = policy_->name;
  started.policy_sha256 = policy_sha256_;
  sendFrame(c.fd.get(), encodeReply(started));
  // The next ready session is set up once this command is under way (or
  // has ended, onRunnerEnd): its set-up must not compete with this start.
  uv_timer_start(&ready_timer_, [](uv_timer_t* t) { static_cast<Daemon*>(t->data)->onReadyTimer(); },
                 kRefillDelayMs, kReadyMaxAgeMs / 4);
  return {};
}

void Daemon::abortCommand(Connection& c, char why) {
  if (!c.control || c.aborted) return;
  c.aborted = true;
  (void)!::send(c.control.get(), &why, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
}

void Daemon::onTimer(Connection& c) {
  if (c.closing) return;
  if (!c.running()) {
    // A loop iteration that took long (forks under load) runs the timers
    // before the polls: a request that came meanwhile is read first.
    onReadable(c);
    if (c.closing || c.running()) return;
    return refuse(c, kExitPolicyError, "no request within 10 s");
  }
  c.timed_out = true;
  abortCommand(c, kAbortTimeout);
}

// The exit status to the client, once.
void Daemon::reply(Connection& c, int status, int signal) {
  if (c.replied) return;
  c.replied = true;
  Reply r;
  r.type = "exit";
  r.timed_out = c.timed_out;
  r.status = status;
  r.signal = signal;
  if (!c.client_gone) sendFrame(c.fd.get(), encodeReply(r));
}

// The runner's byte: the session ended with this status (and its trail has
// its end); its tear-down goes on without the client.
void Daemon::onRunnerEnd(Connection& c) {
  unsigned char byte = 0;
  const ssize_t n = ::recv(c.control.get(), &byte, 1, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  uv_poll_stop(&c.control_poll);
  if (n != 1) return;  // the runner is gone without a word: its exit says how
  const int status = byte;
  reply(c, status, status > 128 && status < 128 + 65 ? status - 128 : 0);
  refillReady();
}

void Daemon::onRunnerExit(Connection& c) {
  siginfo_t info{};
  if (::waitid(P_PIDFD, static_cast<id_t>(c.runner_pidfd.get()), &info, WEXITED | WNOHANG) != 0 ||
      info.si_pid == 0)
    return;
  uv_poll_stop(&c.runner_poll);
  if (info.si_code == CLD_EXITED) {
    reply(c, info.si_status,
          info.si_status > 128 && info.si_status < 128 + 65 ? info.si_status - 128 : 0);
  } else {
    // The runner itself died: its watchdog killed the tree; say so.
    if (!c.replied)
      say("command " + c.command_id + ": its session runner died of signal " +
          std::to_string(info.si_status));
    reply(c, kExitSupervisorError, info.si_status);
  }
  c.runner = -1;
  close(c);
}

void Daemon::close(Connection& c) {
  if (c.closing) return;
  c.closing = true;
  if (c.running()) {
    // A connection never closes before its command ends (the runner stays
    // watched): only the client side goes.
    c.closing = false;
    c.client_gone = true;
    uv_poll_stop(&c.poll);
    abortCommand(c, kAbortClientGone);
    return;
  }
  auto closed = [](uv_handle_t* h) {
    auto* conn = static_cast<Connection*>(h->data);
    if (--conn->open_handles > 0) return;
    Daemon* d = conn->daemon;
    d->connections_.remove_if([conn](const Connection& x) { return &x == conn; });
    d->maybeFinish();
  };
  uv_close(reinterpret_cast<uv_handle_t*>(&c.poll), closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&c.timer), closed);
  if (c.runner_pidfd) {
    uv_close(reinterpret_cast<uv_handle_t*>(&c.runner_poll), closed);
    uv_close(reinterpret_cast<uv_handle_t*>(&c.control_poll), closed);
  }
  c.fd.reset();
}

void Daemon::reload() {
  auto loaded = options_.load_policy();
  if (!loaded) {
    say("reload refused, the policy in effect stays: " + loaded.error().message());
    return;
  }
  policy_ = *loaded;
  policy_sha256_ = policyDigest(*policy_);
  audit_->setPolicy(policy_->name, policy_sha256_);
  audit_->emit(policyReloadEvent(effectivePolicyJson(*policy_), policy_sha256_));
  say("policy reloaded (sha256 " + policy_sha256_.substr(0, 12) + "…): commands from now on");
  // Ready sessions were prepared under the old policy.
  ready_failures_ = 0;
  retireReady(true);
  refillReady();
}

void Daemon::drain() {
  if (draining_) return;
  draining_ = true;
  if (listening_) {
    uv_close(reinterpret_cast<uv_handle_t*>(&listen_poll_), nullptr);
    listening_ = false;
    ::unlink(options_.socket_path.c_str());
    listener_.reset();
  }
  retireReady(true);
  uv_close(reinterpret_cast<uv_handle_t*>(&ready_timer_), nullptr);
  std::vector<Connection*> all;
  for (auto& c : connections_) all.push_back(&c);
  for (Connection* c : all) {
    if (c->running())
      abortCommand(*c, kAbortDrain);
    else
      close(*c);
  }
  maybeFinish();
}

void Daemon::maybeFinish() {
  if (draining_ && connections_.empty() && ready_.empty()) uv_stop(&loop_);
}

void Daemon::onSignal() {
  signalfd_siginfo si;
  while (::read(sigfd_.get(), &si, sizeof si) == sizeof si) {
    if (si.ssi_signo == SIGHUP) {
      reload();
      if (auto st = audit_->reopen(); !st) say("audit: " + st.error().message());
    } else {
      drain();
    }
  }
}

int Daemon::run() {
  if (const int code = setUp()) return code;
  audit_->emit(sessionStartEvent(options_.argv, effectivePolicyJson(*policy_), {"serve"}));

  sigset_t handled;
  sigemptyset(&handled);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&handled, sig);
  ::sigprocmask(SIG_BLOCK, &handled, &old_mask_);
  sigfd_ = UniqueFd(::signalfd(-1, &handled, SFD_NONBLOCK | SFD_CLOEXEC));
  ::signal(SIGPIPE, SIG_IGN);

  uv_loop_init(&loop_);
  uv_poll_init(&loop_, &listen_poll_, listener_.get());
  listen_poll_.data = this;
  uv_poll_start(&listen_poll_, UV_READABLE,
                [](uv_poll_t* h, int, int) { static_cast<Daemon*>(h->data)->accept(); });
  listening_ = true;
  uv_poll_init(&loop_, &signal_poll_, sigfd_.get());
  signal_poll_.data = this;
  uv_poll_start(&signal_poll_, UV_READABLE,
                [](uv_poll_t* h, int, int) { static_cast<Daemon*>(h->data)->onSignal(); });
  uv_timer_init(&loop_, &audit_timer_);
  audit_timer_.data = this;
  uv_timer_start(&audit_timer_, [](uv_timer_t* t) {
    static_cast<Daemon*>(t->data)->audit_->flush();
  }, 50, 50);
  uv_timer_init(&loop_, &ready_timer_);
  ready_timer_.data = this;
  uv_timer_start(&ready_timer_, [](uv_timer_t* t) { static_cast<Daemon*>(t->data)->onReadyTimer(); },
                 kReadyMaxAgeMs / 4, kReadyMaxAgeMs / 4);
  say("listening on " + options_.socket_path + " (policy " + policy_->name + ", sha256 " +
      policy_sha256_.substr(0, 12) + "…)");
  refillReady();

  uv_run(&loop_, UV_RUN_DEFAULT);

  uv_close(reinterpret_cast<uv_handle_t*>(&signal_poll_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&audit_timer_), nullptr);
  uv_run(&loop_, UV_RUN_DEFAULT);
  uv_loop_close(&loop_);
  audit_->finish(ExitStatus{0, 0, false});
  for (const Error& e : audit_->sinkErrors()) say("audit: " + e.message());
  ::sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
  return 0;
}

}  // namespace

int runDaemon(const DaemonOptions& options) {
  try {
    Daemon daemon(options);
    return daemon.run();
  } catch (const std::exception& e) {
    say(std::string("internal error: ") + e.what());
    return kExitSupervisorError;
  }
}

}  // namespace sv::supervisor::serve
