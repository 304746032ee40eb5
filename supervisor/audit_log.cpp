// AuditLog implementation: per-sink bounded buffers, non-blocking writes,
// gap-free seq, drop accounting. See audit_log.h for the contract.
#include "supervisor/audit_log.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <string>

namespace sv::supervisor {
namespace {

timespec realtimeNow() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts;
}

int64_t toNs(timespec ts) { return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec; }

// write(2) to a pipe whose reader is gone raises SIGPIPE, which would kill the
// supervisor (and with it the supervised tree). Block it for this thread
// around the write and consume the one we caused; a SIGPIPE that was already
// pending before stays pending for whoever expects it.
ssize_t writeNoSigpipe(int fd, const char* data, size_t len) {
  sigset_t pipe_set, old_set, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  ssize_t n = ::write(fd, data, len);
  int saved = errno;
  if (n < 0 && saved == EPIPE && !was_pending) {
    timespec zero{};
    while (sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
  errno = saved;
  return n;
}

}  // namespace

AuditLog::AuditLog(SessionInfo session, AuditLogOptions options)
    : session_(std::move(session)), options_(options) {}

AuditLog::~AuditLog() { close(); }

Status AuditLog::open(const AuditSinkConfig& config) {
  // Take ownership of every fd first so none leaks if an earlier sink fails.
  std::vector<UniqueFd> fds;
  for (int fd : config.fds) fds.emplace_back(fd);
  for (const auto& path : config.paths) SV_TRY(addFileSink(path));
  for (auto& fd : fds) SV_TRY(addFdSink(std::move(fd)));
  if (config.to_stdout) SV_TRY(addStdoutSink());
  return {};
}

// A healthy sink holds at most one batch plus the line that completes it:
// reserving that up front keeps emit() allocation-free from the first event
// (growth then only happens under backpressure, up to max_buffer_bytes).
void AuditLog::reserveBatch(Sink& sink) const {
  constexpr size_t kLongLine = 16u << 10;  // an event with long paths and argv
  sink.buf.reserve(options_.write_batch_bytes + kLongLine);
  sink.line_lens.reserve((options_.write_batch_bytes + kLongLine) / 64);
}

Status AuditLog::addFileSink(const std::string& path) {
  // O_NONBLOCK: a FIFO at that path must not block us in open() waiting for a
  // reader (ENXIO instead), and then writes to it must not block either.
  // Regular files ignore it.
  UniqueFd fd(::open(path.c_str(),
                     O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0600));
  if (!fd) return errnoError("open audit log " + path);
  struct stat st {};
  if (fstat(fd.get(), &st) < 0) return errnoError("fstat audit log " + path);
  std::lock_guard lock(mu_);
  if (closed_) return Error{EBADF, "audit log already closed"};
  Sink sink;
  sink.name = path;
  sink.fd = std::move(fd);
  sink.mode = S_ISREG(st.st_mode)    ? WriteMode::kFile
              : S_ISSOCK(st.st_mode) ? WriteMode::kSocket
                                     : WriteMode::kNonBlocking;
  reserveBatch(sink);
  sinks_.push_back(std::move(sink));
  return {};
}

Status AuditLog::addFdSink(UniqueFd fd) {
  if (!fd) return Error{EBADF, "audit fd: invalid descriptor"};
  const int n = fd.get();
  if (n <= 2) {
    fd.release();  // stdio is not ours to close
    return Error{EINVAL, "audit fd " + std::to_string(n) +
                             " is the command's stdio; use --audit-stdout to mix explicitly"};
  }
  int fdflags = fcntl(n, F_GETFD);
  if (fdflags < 0) {
    fd.release();  // not open: nothing to close, and closing a stranger's fd later is worse
    return errnoError("audit fd " + std::to_string(n));
  }
  // The command must not inherit the audit channel.
  fcntl(n, F_SETFD, fdflags | FD_CLOEXEC);
  return addSink("fd:" + std::to_string(n), std::move(fd), /*shared_with_command=*/false);
}

Status AuditLog::addStdoutSink() {
  UniqueFd fd(fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3));
  if (!fd) return errnoError("dup stdout for audit");
  return addSink("stdout", std::move(fd), /*shared_with_command=*/true);
}

Status AuditLog::addSink(std::string name, UniqueFd fd, bool shared_with_command) {
  struct stat st {};
  if (fstat(fd.get(), &st) < 0) return errnoError("fstat audit sink " + name);
  Sink sink;
  sink.name = std::move(name);
  if (S_ISREG(st.st_mode)) {
    sink.mode = WriteMode::kFile;
  } else if (S_ISSOCK(st.st_mode)) {
    sink.mode = WriteMode::kSocket;  // MSG_DONTWAIT per call, no shared flag touched
  } else {
    // Pipe, FIFO, tty: reopening the magic link yields a new open file
    // description of the same object, so O_NONBLOCK stays ours.
    std::string link = "/proc/self/fd/" + std::to_string(fd.get());
    UniqueFd own(::open(link.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
    if (own) {
      fd = std::move(own);
      sink.mode = WriteMode::kNonBlocking;
    } else if (!shared_with_command) {
      // No /proc or no reader yet (ENXIO): setting O_NONBLOCK on the shared
      // description only affects whoever handed us the fd, which is acceptable.
      int fl = fcntl(fd.get(), F_GETFL);
      if (fl >= 0 && fcntl(fd.get(), F_SETFL, fl | O_NONBLOCK) == 0) {
        sink.mode = WriteMode::kNonBlocking;
      } else {
        sink.mode = WriteMode::kBlocking;
      }
    } else {
      // Never flip O_NONBLOCK under the command's stdout; blocking writes it is.
      sink.mode = WriteMode::kBlocking;
    }
  }
  sink.fd = std::move(fd);
  std::lock_guard lock(mu_);
  if (closed_) return Error{EBADF, "audit log already closed"};
  reserveBatch(sink);
  sinks_.push_back(std::move(sink));
  return {};
}

uint64_t AuditLog::emit(const AuditEvent& event) {
  std::lock_guard lock(mu_);
  return emitLocked(event);
}

uint64_t AuditLog::emitLocked(const AuditEvent& event) {
  const uint64_t seq = next_seq_++;
  if (!event.decision.empty()) {
    ++counters_.decisions;
    if (event.decision == "deny") ++counters_.denials;
    if (event.decision == "would-deny") ++counters_.would_deny;
  }
  if (closed_) {
    ++counters_.dropped;  // emitted after close: visible in the counters at least
    return seq;
  }
  const timespec now = realtimeNow();
  const int64_t now_ns = toNs(now);
  line_.clear();
  encodeEventAs(options_.format, line_, event, session_, seq, now);
  line_ += '\n';
  const std::string_view line = line_;
  // Session start/end are rare and carry the counters: never drop them.
  const bool must_keep = event.category == "session";
  for (auto& sink : sinks_) {
    if (sink.failed) {
      drop(sink, seq);
      continue;
    }
    // Normally a sink that said EAGAIN waits for flush(); but if this event
    // would not fit, one more non-blocking try is cheaper than losing it (and
    // covers a loop that flushes only on a timer).
    if (sink.pending() && (sink.pending() + line.size() > options_.max_buffer_bytes ||
                           (!sink.want_writable && shouldWriteNow(sink, now_ns, line.size())))) {
      writeSome(sink, now_ns);
    }
    maybeReportDrops(sink, now, /*force=*/must_keep);
    // While a loss is unreported the sink takes nothing new, so each dropped
    // record describes one contiguous seq range that precedes it.
    if (must_keep ||
        (sink.lost_count == 0 && sink.pending() + line.size() <= options_.max_buffer_bytes)) {
      const bool write_now = must_keep || shouldWriteNow(sink, now_ns, line.size());
      append(sink, line);
      if (!sink.want_writable && write_now) writeSome(sink, now_ns);
    } else {
      drop(sink, seq);
    }
  }
  return seq;
}

bool AuditLog::shouldWriteNow(const Sink& sink, int64_t now_ns, size_t incoming) const {
  return sink.pending() + incoming >= options_.write_batch_bytes ||
         now_ns - sink.last_write_ns >=
             std::chrono::duration_cast<std::chrono::nanoseconds>(options_.write_coalesce).count();
}

void AuditLog::append(Sink& sink, std::string_view line) {
  if (sink.off > 0 && sink.off >= sink.buf.size() / 2) {
    sink.buf.erase(0, sink.off);
    sink.off = 0;
  }
  if (sink.line_first > 0 && sink.line_first >= sink.line_lens.size() / 2) {
    sink.line_lens.erase(sink.line_lens.begin(),
                         sink.line_lens.begin() + std::ptrdiff_t(sink.line_first));
    sink.line_first = 0;
  }
  sink.buf.append(line);
  sink.line_lens.push_back(uint32_t(line.size()));
}

void AuditLog::drop(Sink& sink, uint64_t seq) {
  if (sink.lost_count == 0) sink.lost_first = seq;
  sink.lost_last = seq;
  ++sink.lost_count;
  ++sink.lost_total;
  ++counters_.dropped;
}

void AuditLog::maybeReportDrops(Sink& sink, timespec now, bool force) {
  if (sink.lost_count == 0 || sink.failed) return;
  std::string line = encodeDroppedAs(options_.format, session_, now, sink.lost_count, sink.lost_first, sink.lost_last,
                                   sink.lost_total);
  line += '\n';
  if (!force && sink.pending() + line.size() > options_.max_buffer_bytes) return;
  append(sink, line);
  sink.lost_count = 0;
}

void AuditLog::writeSome(Sink& sink, int64_t now_ns) {
  sink.last_write_ns = now_ns;
  while (!sink.failed && sink.pending() > 0) {
    const char* data = sink.buf.data() + sink.off;
    const size_t len = sink.pending();
    ssize_t n;
    switch (sink.mode) {
      case WriteMode::kSocket:
        n = ::send(sink.fd.get(), data, len, MSG_DONTWAIT | MSG_NOSIGNAL);
        break;
      case WriteMode::kFile:
        n = ::write(sink.fd.get(), data, len);
        break;
      default:
        n = writeNoSigpipe(sink.fd.get(), data, len);
        break;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        sink.want_writable = true;
        return;
      }
      failSink(sink, errnoError("write audit sink " + sink.name));
      return;
    }
    if (n == 0) {  // no progress and no error: treat as "try later"
      sink.want_writable = true;
      return;
    }
    sink.off += size_t(n);
    sink.head += size_t(n);
    while (sink.line_first < sink.line_lens.size() &&
           sink.head >= sink.line_lens[sink.line_first]) {
      sink.head -= sink.line_lens[sink.line_first++];
    }
  }
  if (sink.pending() == 0) {
    sink.buf.clear();
    sink.off = 0;
    sink.line_lens.clear();
    sink.line_first = 0;
    sink.want_writable = false;
  }
}

void AuditLog::failSink(Sink& sink, Error error) {
  // Everything still queued for this sink is lost; a broken sink gets no
  // dropped record (nobody would read it), the counters show the loss.
  const uint64_t lost = sink.line_lens.size() - sink.line_first;
  sink.lost_total += lost;
  counters_.dropped += lost;
  sink.failed = true;
  sink.error = std::move(error);
  sink.buf.clear();
  sink.off = 0;
  sink.line_lens.clear();
  sink.line_first = 0;
  sink.head = 0;
  sink.want_writable = false;
}

bool AuditLog::flush() {
  std::lock_guard lock(mu_);
  bool done = true;
  const timespec now = realtimeNow();
  for (auto& sink : sinks_) {
    if (sink.failed) continue;
    writeSome(sink, toNs(now));
    if (sink.lost_count) {
      maybeReportDrops(sink, now, /*force=*/false);
      writeSome(sink, toNs(now));
    }
    if (sink.pending() || sink.lost_count) done = false;
  }
  return done;
}

std::vector<int> AuditLog::pendingFds() const {
  std::lock_guard lock(mu_);
  std::vector<int> fds;
  for (const auto& sink : sinks_) {
    if (!sink.failed && sink.pending() && sink.want_writable) fds.push_back(sink.fd.get());
  }
  return fds;
}

void AuditLog::drainBlocking(Sink& sink, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    writeSome(sink, toNs(realtimeNow()));
    if (sink.failed) return;
    if (sink.pending() == 0) {
      if (sink.lost_count == 0) return;
      maybeReportDrops(sink, realtimeNow(), /*force=*/true);
      continue;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      // The reader is stuck: give up on what is queued, but count it.
      failSink(sink, Error{ETIMEDOUT, "audit sink " + sink.name + " did not drain"});
      return;
    }
    pollfd pfd{sink.fd.get(), POLLOUT, 0};
    int r = ::poll(&pfd, 1, int(left.count()));
    if (r < 0 && errno != EINTR) {
      failSink(sink, errnoError("poll audit sink " + sink.name));
      return;
    }
  }
}

void AuditLog::closeLocked() {
  if (closed_) return;
  const auto deadline = std::chrono::steady_clock::now() + options_.close_timeout;
  for (auto& sink : sinks_) drainBlocking(sink, deadline);
  for (auto& sink : sinks_) {
    if (sink.failed) closed_errors_.push_back(sink.error);
  }
  sinks_.clear();  // closes the fds
  closed_ = true;
}

void AuditLog::close() {
  std::lock_guard lock(mu_);
  closeLocked();
}

void AuditLog::finish(const ExitStatus& exit) {
  std::lock_guard lock(mu_);
  if (closed_) return;
  // Drain first so every drop is recorded and in the counters the end event
  // carries.
  const auto deadline = std::chrono::steady_clock::now() + options_.close_timeout;
  for (auto& sink : sinks_) drainBlocking(sink, deadline);
  emitLocked(sessionEndEvent(exit, counters_));
  closeLocked();
}

AuditCounters AuditLog::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

std::vector<Error> AuditLog::sinkErrors() const {
  std::lock_guard lock(mu_);
  std::vector<Error> errors = closed_errors_;
  for (const auto& sink : sinks_) {
    if (sink.failed) errors.push_back(sink.error);
  }
  return errors;
}

}  // namespace sv::supervisor
