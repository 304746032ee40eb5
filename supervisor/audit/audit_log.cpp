// AuditLog implementation: per-sink bounded queues, framing, non-blocking
// transports, spool and replay, gap-free seq, drop accounting. See
// audit_log.h for the contract.
#include "supervisor/audit/audit_log.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "supervisor/audit/sha256.h"
#include "supervisor/audit/sinks/kafka_transport.h"
#include "supervisor/audit/sinks/net_transport.h"
#include "supervisor/audit/sinks/syslog_frame.h"

namespace sv::supervisor {
namespace {

timespec realtimeNow() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts;
}

int64_t toNs(timespec ts) { return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec; }

int64_t monotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return toNs(ts);
}

int syslogSeverity(const AuditEvent& e) {
  if (e.decision == "deny") return 4;                               // warning
  if (e.decision == "would-deny" || e.category == "session") return 5;  // notice
  return 6;                                                         // informational
}

// No spool when the cap is 0: the sink drops (and counts) once memory is full.
Result<std::unique_ptr<audit::Spool>> createSpool(const std::string& dir, uint64_t cap) {
  if (cap == 0) return std::unique_ptr<audit::Spool>();
  return audit::Spool::create(dir, cap);
}

}  // namespace

std::string chainSeed(std::string_view session_id) { return sha256Hex(session_id); }

AuditLog::AuditLog(SessionInfo session, AuditLogOptions options)
    : session_(std::move(session)),
      options_(options),
      pid_(int(::getpid())),
      wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

AuditLog::~AuditLog() { close(); }

Status AuditLog::open(const AuditSinkConfig& config) {
  // Take ownership of every fd first so none leaks if an earlier sink fails.
  std::vector<UniqueFd> fds;
  for (int fd : config.fds) fds.emplace_back(fd);
  for (const auto& path : config.paths) SV_TRY(addFileSink(path));
  for (auto& fd : fds) SV_TRY(addFdSink(std::move(fd)));
  if (config.to_stdout) SV_TRY(addStdoutSink());
  for (const auto& url : config.syslog) SV_TRY(addSyslogSink(url));
  for (const auto& sink : config.policy_sinks) SV_TRY(addPolicySink(sink));
  return {};
}

Status AuditLog::addPolicySink(const policy::AuditSink& sink) {
  if (sink.type == "file") {
    audit::FileRotation rotation;
    rotation.max_bytes = uint64_t(sink.max_size_mb * (1 << 20));
    rotation.max_files = sink.max_files;
    return addFileSink(sink.path, rotation);
  }
  if (sink.type == "fd") {
    // The fd a policy names is inherited, not ours: dup it so closing the
    // sink never closes someone else's descriptor.
    int fd = fcntl(sink.fd, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) return errnoError("audit fd " + std::to_string(sink.fd));
    return addFdSink(UniqueFd(fd));
  }
  if (sink.type == "stdout") return addStdoutSink();
  if (sink.type == "syslog") {
    SyslogSinkOptions o;
    o.ca_file = sink.ca_file;
    o.spool_dir = sink.spool_dir;
    o.spool_max_bytes = uint64_t(sink.spool_max_mb * (1 << 20));
    return addSyslogSink(sink.path, o);
  }
  if (sink.type == "kafka") {
    auto t = audit::openKafkaTransport({.brokers = sink.brokers,
                                        .topic = sink.topic,
                                        .key = session_.session_id,
                                        .properties = sink.options});
    if (!t) return t.error();
    return addSpooledSink(std::move(*t), sink.spool_dir, uint64_t(sink.spool_max_mb * (1 << 20)));
  }
  if (sink.type == "otlp") {
    OtlpSinkOptions o;
    o.otlp.url = sink.url;
    o.otlp.headers = sink.headers;
    o.otlp.ca_file = sink.ca_file;
    o.spool_dir = sink.spool_dir;
    o.spool_max_bytes = uint64_t(sink.spool_max_mb * (1 << 20));
    return addOtlpSink(std::move(o));
  }
  return Error{EINVAL, "unknown audit sink type " + sink.type};
}

// A healthy sink holds at most one batch plus the record that completes it:
// reserving that up front keeps emit() allocation-free from the first event
// (growth then only happens under backpressure, up to max_buffer_bytes).
void AuditLog::reserveBatch(Sink& sink) const {
  constexpr size_t kLongLine = 16u << 10;  // an event with long paths and argv
  // A stream sink also keeps its replay window, compacted once the bytes
  // before the window outweigh the rest: up to twice window plus batch.
  const size_t batch = options_.write_batch_bytes + kLongLine;
  const size_t replay = sink.transport->replayBytes();
  const size_t bytes = replay ? 2 * (replay + batch) : batch;
  sink.buf.reserve(bytes);
  sink.line_lens.reserve(bytes / 64);
}

Status AuditLog::addFileSink(const std::string& path, audit::FileRotation rotation) {
  auto t = audit::openFileTransport(path, rotation);
  if (!t) return t.error();
  SV_TRY(addSinkLocked(std::move(*t), Framing::kLines, nullptr));
  if (options_.chain) {
    std::lock_guard lock(mu_);
    sinks_.back().chain = true;
    sinks_.back().chain_prev = chainSeed(session_.session_id);
  }
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
  auto t = audit::openFdTransport("fd:" + std::to_string(n), std::move(fd), false);
  if (!t) return t.error();
  return addSinkLocked(std::move(*t), Framing::kLines, nullptr);
}

Status AuditLog::addStdoutSink() {
  UniqueFd fd(fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3));
  if (!fd) return errnoError("dup stdout for audit");
  auto t = audit::openFdTransport("stdout", std::move(fd), /*shared_with_command=*/true);
  if (!t) return t.error();
  return addSinkLocked(std::move(*t), Framing::kLines, nullptr);
}

Status AuditLog::addSyslogSink(const std::string& url, SyslogSinkOptions options) {
  audit::NetOptions net;
  net.ca_file = options.ca_file;
  net.replay_bytes = options.replay_bytes;
  auto t = audit::openNetTransport(url, net);
  if (!t) return t.error();
  auto spool = createSpool(options.spool_dir, options.spool_max_bytes);
  if (!spool) return spool.error();
  const Framing framing =
      (*t)->datagram() ? Framing::kSyslogDatagram : Framing::kSyslogOctetCounted;
  return addSinkLocked(std::move(*t), framing, std::move(*spool));
}

Status AuditLog::addOtlpSink(OtlpSinkOptions options) {
  options.otlp.resource.host_name = session_.host;
  options.otlp.resource.service_version = session_.agent_version;
  options.otlp.resource.session_id = session_.session_id;
  auto t = audit::openOtlpTransport(std::move(options.otlp));
  if (!t) return t.error();
  return addSpooledSink(std::move(*t), options.spool_dir, options.spool_max_bytes);
}

Status AuditLog::addSink(std::unique_ptr<audit::Transport> transport) {
  return addSinkLocked(std::move(transport), Framing::kLines, nullptr);
}

Status AuditLog::addSpooledSink(std::unique_ptr<audit::Transport> transport,
                                const std::string& spool_dir, uint64_t spool_max_bytes) {
  auto spool = createSpool(spool_dir, spool_max_bytes);
  if (!spool) return spool.error();
  return addSinkLocked(std::move(transport), Framing::kLines, std::move(*spool));
}

Status AuditLog::addSinkLocked(std::unique_ptr<audit::Transport> transport, Framing framing,
                               std::unique_ptr<audit::Spool> spool) {
  std::lock_guard lock(mu_);
  if (closed_) return Error{EBADF, "audit log already closed"};
  Sink sink;
  sink.loop_only = transport->loopOnly();
  sink.transport = std::move(transport);
  sink.framing = framing;
  sink.spool = std::move(spool);
  reserveBatch(sink);
  if (framing != Framing::kLines) frame_.reserve(32u << 10);
  sinks_.push_back(std::move(sink));
  return {};
}

void AuditLog::setPolicy(std::string name, std::string sha256) {
  std::lock_guard lock(mu_);
  session_.policy_name = std::move(name);
  session_.policy_sha256 = std::move(sha256);
}

uint64_t AuditLog::emit(const AuditEvent& event) {
  std::lock_guard lock(mu_);
  return emitLocked(event);
}

bool AuditLog::encodes() const {
  std::lock_guard lock(mu_);
  return !closed_ && !sinks_.empty();
}

// The record for one sink: the JSON line as is, or wrapped in RFC 5424.
// event == nullptr: a dropped record for this sink's current loss.
std::string_view AuditLog::frame(Sink& sink, const AuditEvent* event, uint64_t seq, timespec now,
                                 std::string_view json_line) {
  if (sink.framing == Framing::kLines) {
    if (!sink.chain) return json_line;
    // "chain" goes last: natively a top-level member; in OCSF and ECS inside
    // the free namespace their encoders write last (`unmapped`, `supervise`),
    // so the line stays valid against their schemas.
    const size_t closers = options_.format == AuditFormat::Native ? 1 : 2;
    std::string_view body = json_line;
    if (!body.empty() && body.back() == '\n') body.remove_suffix(1);
    if (body.size() < closers) return json_line;
    frame_.assign(body.substr(0, body.size() - closers));
    frame_ += ",\"chain\":\"";
    frame_ += sink.chain_prev;
    frame_ += '"';
    frame_.append(closers, '}');
    frame_ += '\n';
    return frame_;
  }
  audit::SyslogFields f;
  f.host = session_.host;
  f.session_id = session_.session_id;
  f.procid = pid_;
  if (event) {
    f.msgid = event->category;
    f.severity = syslogSeverity(*event);
    f.seq = seq;
    f.operation = event->operation;
    f.decision = event->decision;
    f.rule_id = event->rule_id;
    f.pid = event->process ? event->process->pid : 0;
  } else {
    f.msgid = "dropped";
    f.severity = 4;
    f.dropped = sink.lost_count;
    f.dropped_first = sink.lost_first;
    f.dropped_last = sink.lost_last;
  }
  if (!json_line.empty() && json_line.back() == '\n') json_line.remove_suffix(1);
  frame_.clear();
  audit::appendSyslog(frame_, sink.framing == Framing::kSyslogOctetCounted, now, f, json_line);
  return frame_;
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
  if (sinks_.empty()) return seq;  // no audit output asked for: counted, never encoded
  const timespec now = realtimeNow();
  const int64_t now_ns = toNs(now);
  line_.clear();
  encodeEventAs(options_.format, line_, event, session_, seq, now);
  line_ += '\n';
  // Session start/end are rare and carry the counters: never drop them.
  const bool must_keep = event.category == "session";
  for (auto& sink : sinks_) {
    if (sink.failed) {
      drop(sink, seq);
      continue;
    }
    const std::string_view record = frame(sink, &event, seq, now, line_);
    // Normally a sink that said EAGAIN waits for flush(); but if this event
    // would not fit, one more non-blocking try is cheaper than losing it (and
    // covers a loop that flushes only on a timer).
    if (!sink.loop_only && sink.pending() &&
        (sink.pending() + record.size() > options_.max_buffer_bytes ||
         (!sink.want_writable && shouldWriteNow(sink, now_ns, record.size())))) {
      writeSome(sink, now_ns);
    }
    // maybeReportDrops may reframe into frame_: keep the event's record apart.
    if (sink.lost_count) {
      std::string saved(record);  // only on the loss path
      maybeReportDrops(sink, now, /*force=*/must_keep);
      // A dropped record that went in moved the chain on: chain to it.
      if (sink.chain) saved.assign(frame(sink, &event, seq, now, line_));
      if (!sink.lost_count || must_keep) {
        if (enqueue(sink, saved, must_keep)) {
          if (!sink.loop_only && !sink.want_writable) writeSome(sink, now_ns);
          continue;
        }
      }
      drop(sink, seq);
      continue;
    }
    const bool write_now = must_keep || shouldWriteNow(sink, now_ns, record.size());
    if (enqueue(sink, record, must_keep)) {
      if (!sink.loop_only && !sink.want_writable && write_now) writeSome(sink, now_ns);
      // A network sink with a batch ready: wake the loop (once until it flushes).
      if (sink.loop_only && !wake_sent_ && wake_fd_ &&
          sink.pending() >= options_.write_batch_bytes) {
        const uint64_t one = 1;
        wake_sent_ = ::write(wake_fd_.get(), &one, sizeof one) == sizeof one;
      }
    } else {
      drop(sink, seq);
    }
  }
  return seq;
}

// The record is queued: the next line of a chained sink chains to it.
bool AuditLog::chained(Sink& sink, std::string_view record) {
  if (!sink.chain) return true;
  if (!record.empty() && record.back() == '\n') record.remove_suffix(1);
  sink.chain_prev = sha256Hex(record);
  return true;
}

// Memory while the spool is empty and the queue has room (order: everything
// in memory is older than everything spooled), else the spool. `force` takes
// the record past either cap.
bool AuditLog::enqueue(Sink& sink, std::string_view record, bool force) {
  const bool spooling = sink.spool && !sink.spool->empty();
  if (!spooling && (force || sink.pending() + record.size() <= options_.max_buffer_bytes)) {
    append(sink, record);
    return chained(sink, record);
  }
  if (sink.spool && (force || sink.spool->fits(record.size()))) {
    if (sink.spool->push(record)) return chained(sink, record);
    if (force && !spooling) {
      append(sink, record);
      return chained(sink, record);
    }
  }
  return false;
}

bool AuditLog::shouldWriteNow(const Sink& sink, int64_t now_ns, size_t incoming) const {
  return sink.pending() + incoming >= options_.write_batch_bytes ||
         now_ns - sink.last_write_ns >=
             std::chrono::duration_cast<std::chrono::nanoseconds>(options_.write_coalesce).count();
}

void AuditLog::append(Sink& sink, std::string_view record) {
  // Compact from the start of the replay window (everything before it is
  // gone for good); amortized, and no allocation once the capacity is there.
  if (sink.kept_off > 0 && sink.kept_off >= sink.buf.size() / 2) {
    sink.buf.erase(0, sink.kept_off);
    sink.off -= sink.kept_off;
    sink.kept_off = 0;
  }
  if (sink.kept_first > 0 && sink.kept_first >= sink.line_lens.size() / 2) {
    sink.line_lens.erase(sink.line_lens.begin(),
                         sink.line_lens.begin() + std::ptrdiff_t(sink.kept_first));
    sink.line_first -= sink.kept_first;
    sink.kept_first = 0;
  }
  sink.buf.append(record);
  sink.line_lens.push_back(uint32_t(record.size()));
}

void AuditLog::drop(Sink& sink, uint64_t seq) {
  // In seq order from emit(); an acknowledging transport's losses may come
  // back in any order, so the range is the smallest and the largest.
  if (sink.lost_count == 0) {
    sink.lost_first = sink.lost_last = seq;
  } else {
    sink.lost_first = std::min(sink.lost_first, seq);
    sink.lost_last = std::max(sink.lost_last, seq);
  }
  ++sink.lost_count;
  ++sink.lost_total;
  ++counters_.dropped;
}

// What an acknowledging transport gave up on joins the sink's loss. A lost
// dropped record (seq 0) is not an event: its loss stays in the counters and
// in the next record's total.
void AuditLog::collectLost(Sink& sink) {
  sink.transport->takeLost([&](std::string_view record) {
    if (const uint64_t seq = recordSeq(options_.format, record)) drop(sink, seq);
  });
}

void AuditLog::maybeReportDrops(Sink& sink, timespec now, bool force) {
  if (sink.lost_count == 0 || sink.failed) return;
  std::string line = encodeDroppedAs(options_.format, session_, now, sink.lost_count,
                                     sink.lost_first, sink.lost_last, sink.lost_total);
  line += '\n';
  const std::string_view record = frame(sink, nullptr, 0, now, line);
  if (!enqueue(sink, record, force)) return;
  sink.lost_count = 0;
}

void AuditLog::writeSome(Sink& sink, int64_t now_ns) {
  sink.last_write_ns = now_ns;
  audit::Transport& t = *sink.transport;
  while (!sink.failed && sink.pending() > 0) {
    const char* data = sink.buf.data() + sink.off;
    // A datagram carries exactly one record.
    const size_t len = t.datagram() ? sink.line_lens[sink.line_first] : sink.pending();
    auto written = t.write(data, len);
    if (!written) {
      if (t.recoverable()) {
        t.down(written.error(), monotonicNs());
        rewind(sink);
      } else {
        failSink(sink, written.error());
      }
      return;
    }
    const size_t n = *written;
    if (n == 0) {  // no progress and no error: try when writable, or later
      sink.want_writable = true;
      return;
    }
    sink.off += n;
    sink.head += n;
    while (sink.line_first < sink.line_lens.size() &&
           sink.head >= sink.line_lens[sink.line_first]) {
      sink.head -= sink.line_lens[sink.line_first++];
    }
  }
  // Trim the replay window to its size, whole records at a time.
  const size_t keep = t.replayBytes();
  while (sink.kept_first < sink.line_first &&
         (sink.off - sink.head) - sink.kept_off > keep) {
    sink.kept_off += sink.line_lens[sink.kept_first++];
  }
  if (sink.pending() == 0) {
    sink.want_writable = false;
    if (sink.kept_first == sink.line_first) {
      sink.buf.clear();
      sink.off = sink.kept_off = 0;
      sink.line_lens.clear();
      sink.line_first = sink.kept_first = 0;
      sink.head = 0;
    }
  }
}

// The connection broke: whatever the peer may not have (the replay window
// and the partly sent record) goes again, from a record boundary.
void AuditLog::rewind(Sink& sink) {
  sink.off = sink.kept_off;
  sink.line_first = sink.kept_first;
  sink.head = 0;
  sink.want_writable = false;
}

// Moves spooled records back into memory while memory has room.
void AuditLog::refill(Sink& sink) {
  if (!sink.spool || sink.spool->empty()) return;
  const size_t half = options_.max_buffer_bytes / 2;
  if (sink.pending() >= half) return;
  if (auto st = sink.spool->popInto(half - sink.pending(), sink.buf, sink.line_lens); !st)
    failSink(sink, st.error());
}

void AuditLog::failSink(Sink& sink, Error error) {
  // Everything still queued for this sink is lost; a broken sink gets no
  // dropped record (nobody would read it), the counters show the loss.
  uint64_t lost = sink.unsentRecords();
  if (sink.spool) lost += sink.spool->records();
  sink.lost_total += lost;
  counters_.dropped += lost;
  sink.failed = true;
  sink.error = std::move(error);
  sink.buf.clear();
  sink.off = sink.kept_off = 0;
  sink.line_lens.clear();
  sink.line_first = sink.kept_first = 0;
  sink.head = 0;
  sink.want_writable = false;
  sink.spool.reset();
}

void AuditLog::flushSink(Sink& sink, timespec now, bool eager) {
  if (sink.failed) return;
  const bool up = sink.transport->up(monotonicNs(), eager);
  collectLost(sink);
  if (!up) return;
  if (sink.connection != sink.transport->connection()) {
    sink.connection = sink.transport->connection();
    rewind(sink);  // a new connection: resend what the last one may have lost
  }
  for (int round = 0; round < 64; ++round) {
    refill(sink);
    writeSome(sink, toNs(now));
    if (sink.lost_count && !sink.failed) {
      maybeReportDrops(sink, now, /*force=*/false);
      writeSome(sink, toNs(now));
    }
    // Go on while the spool has more and the receiver keeps taking it.
    if (sink.failed || sink.want_writable || !sink.spool || sink.spool->empty()) break;
  }
  collectLost(sink);
}

bool AuditLog::flush() {
  std::lock_guard lock(mu_);
  if (wake_sent_) {
    uint64_t n;
    (void)!::read(wake_fd_.get(), &n, sizeof n);
    wake_sent_ = false;
  }
  bool done = true;
  const timespec now = realtimeNow();
  for (auto& sink : sinks_) {
    flushSink(sink, now, /*eager=*/false);
    if (!sink.failed && (sink.pending() || sink.lost_count || sink.transport->inFlight() ||
                         (sink.spool && !sink.spool->empty())))
      done = false;
  }
  return done;
}

std::vector<int> AuditLog::pendingFds() const {
  std::lock_guard lock(mu_);
  std::vector<int> fds;
  for (const auto& sink : sinks_) {
    const int fd = sink.transport->pollFd();
    if (!sink.failed && sink.pending() && sink.want_writable && fd >= 0) fds.push_back(fd);
  }
  return fds;
}

Status AuditLog::reopen() {
  std::lock_guard lock(mu_);
  Status first;
  for (auto& sink : sinks_) {
    if (sink.failed) continue;
    if (auto st = sink.transport->reopen(); !st && first) first = st;
  }
  return first;
}

void AuditLog::drainBlocking(Sink& sink, std::chrono::steady_clock::time_point deadline) {
  // Records not yet confirmed by the receiver: while that falls, go on
  // without waiting (an acknowledging transport may have no fd to poll).
  auto outstanding = [&sink] {
    return sink.unsentRecords() + (sink.spool ? sink.spool->records() : 0) +
           sink.transport->inFlight();
  };
  for (size_t before = SIZE_MAX;;) {
    const timespec now = realtimeNow();
    flushSink(sink, now, /*eager=*/true);
    if (sink.failed) return;
    const bool spooled = sink.spool && !sink.spool->empty();
    if (sink.pending() == 0 && !spooled && sink.transport->inFlight() == 0) {
      if (sink.lost_count == 0) return;
      if (sink.transport->up(monotonicNs(), true)) {
        maybeReportDrops(sink, now, /*force=*/true);
        continue;
      }
    }
    const size_t now_outstanding = outstanding();
    const bool progress = now_outstanding < before;
    before = now_outstanding;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      // The reader is stuck or gone: give up on what is queued or awaits
      // its acknowledgement, but count it.
      sink.transport->abandon();
      collectLost(sink);
      failSink(sink, Error{ETIMEDOUT, "audit sink " + sink.transport->name() + " did not drain"});
      return;
    }
    if (progress) continue;
    // Wait for the socket (connect, handshake, room to write), or a retry tick.
    const int fd = sink.transport->pollFd();
    pollfd pfd{fd, sink.transport->pollEvents(), 0};
    const int wait_ms = int(std::min<int64_t>(left.count(), 50));
    int r = fd >= 0 ? ::poll(&pfd, 1, wait_ms) : ::poll(nullptr, 0, wait_ms);
    if (r < 0 && errno != EINTR) {
      failSink(sink, errnoError("poll audit sink " + sink.transport->name()));
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

void AuditLog::countUnrecorded(uint64_t n) {
  std::lock_guard lock(mu_);
  counters_.unrecorded += n;
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
