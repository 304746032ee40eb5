// AuditLog: numbers, encodes and writes audit events to the session's sinks.
//
// A sink is a framing (JSON lines, or RFC 5424 syslog with or without octet
// counting) over a Transport (supervisor/audit/sinks/transport.h: file with
// rotation, fd, UDP/TCP/TLS). Several sinks at once, all in one format.
//
// The decision path never waits on a sink. emit() encodes into one reused
// buffer and appends the framed record to a per-sink bounded queue (both keep
// their capacity, so a steady-state emit() allocates nothing). Local sinks
// (file, fd) are written at once when the sink has been quiet for
// write_coalesce; during a burst records collect until write_batch_bytes and go
// out in one write(2), and the loop's flush() (every iteration or tick) writes
// the tail. Network sinks are written only by flush() on the loop thread:
// connecting, TLS and reconnect backoff never touch the decision path.
//
// Nothing lost: when a sink's memory queue is full, a network sink spills to
// its on-disk spool (size-capped, audit/sinks/spool.h) and replays it in order
// once the receiver is back; a stream sink also resends its last replay window
// after a reconnect (duplicates, never a gap). Only when the spool cap (or, for
// a local sink, the memory queue) is exhausted is an event dropped for that
// sink, counted, and as soon as there is room again the sink gets a `dropped`
// record naming the exact seq range it lost. close() drains everything,
// blocking up to a timeout (a reader that never reads must not hang session
// end); what is still queued then is counted as dropped.
//
// Thread-safe (one mutex); the intended caller is the supervisor's libuv loop:
// after handling events, poll pendingFds() for writability and call flush();
// on SIGHUP call reopen().
#pragma once

#include <signal.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <memory>

#include "common/result.h"
#include "common/unique_fd.h"
#include "policy/model.h"
#include "supervisor/audit/formats/formats.h"
#include "supervisor/audit/sinks/fd_transport.h"
#include "supervisor/audit/sinks/otlp_transport.h"
#include "supervisor/audit/sinks/spool.h"
#include "supervisor/audit/sinks/transport.h"
#include "supervisor/audit/audit_event.h"

namespace sv::supervisor {

struct AuditLogOptions {
  AuditFormat format = AuditFormat::Native;  // every sink gets the same format
  size_t max_buffer_bytes = 4u << 20;  // per sink; session events may exceed it
  // A line emitted within this long of the sink's last write waits for the
  // batch to fill or for flush(); zero writes every line at once.
  std::chrono::microseconds write_coalesce{1000};
  size_t write_batch_bytes = 64u << 10;
  std::chrono::milliseconds close_timeout{5000};
  // audit.chain: every line of a file sink carries "chain", the sha256 of the
  // previous line of that sink in this session (the first: of the session
  // id). docs/audit-events.md, "Hash chain"; `supervise verify` checks it.
  bool chain = false;
};

// A syslog sink: udp|tcp|tls://HOST:PORT (RFC 5424; octet counting on TCP/TLS).
struct SyslogSinkOptions {
  std::string ca_file;    // tls: the receiver's CA (PEM); empty: system trust
  std::string spool_dir;  // empty: /var/tmp
  uint64_t spool_max_bytes = 256u << 20;  // 0: no spool, drop when memory is full
  size_t replay_bytes = 4u << 20;        // tcp/tls: resent after a reconnect
};

// An OTLP/HTTP logs sink (sinks/otlp_transport.h): url, headers, caFile and
// the batching/backoff knobs in `otlp`; its resource (host.name,
// service.version, service.instance.id) is filled from the session.
struct OtlpSinkOptions {
  audit::OtlpOptions otlp;
  std::string spool_dir;  // empty: /var/tmp
  uint64_t spool_max_bytes = 256u << 20;  // 0: no spool
};

// What the CLI and the policy asked for: --audit-file PATH, --audit-fd N,
// --audit-stdout, --audit-syslog URL, and the policy's audit.sinks.
struct AuditSinkConfig {
  std::vector<std::string> paths;
  std::vector<int> fds;  // ownership passes to the AuditLog
  bool to_stdout = false;
  std::vector<std::string> syslog;     // addresses, default options
  std::vector<policy::AuditSink> policy_sinks;
};

// The "chain" of a session's first line in a chained sink: sha256 hex of
// the session id (its 32 hex characters).
std::string chainSeed(std::string_view session_id);

class AuditLog {
 public:
  explicit AuditLog(SessionInfo session, AuditLogOptions options = {});
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // Opens every sink in the config; on error nothing stays half-added from
  // the failing entry, earlier sinks stay.
  Status open(const AuditSinkConfig& config);
  // O_WRONLY|O_APPEND|O_CREAT|O_CLOEXEC, mode 0600; rotated by size if asked.
  Status addFileSink(const std::string& path, audit::FileRotation rotation = {});
  // An inherited descriptor (--audit-fd). fds 0-2 are refused: the command's
  // stdio must never carry audit lines unless addStdoutSink() says so.
  Status addFdSink(UniqueFd fd);
  // Only on explicit request: the command's stdout and the audit lines mix.
  Status addStdoutSink();
  // RFC 5424 to a receiver; does not wait for it (the loop connects).
  Status addSyslogSink(const std::string& url, SyslogSinkOptions options = {});
  // OTLP/HTTP logs to a collector; does not connect yet (the loop does).
  Status addOtlpSink(OtlpSinkOptions options);
  // Any transport with JSON-lines framing (tests, future transports).
  Status addSink(std::unique_ptr<audit::Transport> transport);
  // The same with an on-disk spool for while the receiver is away (network
  // transports: Kafka, OTLP). spool_max_bytes 0: no spool.
  Status addSpooledSink(std::unique_ptr<audit::Transport> transport, const std::string& spool_dir,
                        uint64_t spool_max_bytes);

  // Assigns seq (1, 2, ... per session, gap-free) and time, encodes, queues
  // and tries a non-blocking write. Returns the seq. Never blocks, never throws.
  uint64_t emit(const AuditEvent& event);
  // Whether an event emitted now is encoded (a sink is open): what an event
  // needs only to be written, such as its process's /proc fields, is worth
  // reading then and only then.
  bool encodes() const;

  // Non-blocking: writes what the sinks take. True when nothing is pending.
  bool flush();
  // Sinks with bytes pending that the kernel refused (EAGAIN): watch them for
  // POLLOUT / UV_WRITABLE and call flush().
  std::vector<int> pendingFds() const;
  // Readable when a network sink has a batch waiting for flush() (an
  // eventfd): watch it with the loop's timer so a burst goes out at once.
  int wakeFd() const { return wake_fd_.get(); }
  // SIGHUP: file sinks reopen their paths (after logrotate moved them). The
  // bytes queued so far go to the new file. Returns the first error; a sink
  // that cannot reopen keeps writing to its old file.
  Status reopen();

  // Hooks the log into the session loop (any type with addTimer(ms, fn),
  // watchReadable(fd, fn) and interceptSignal(signo, fn), e.g. Supervision):
  // a flush every 50 ms and whenever a network sink has a batch waiting, and
  // SIGHUP sent to supervise reopens the audit files (logrotate). SIGHUP is
  // not relayed to the command: a terminal hang-up reaches it through its
  // process group. A failed reopen goes to on_reopen_error.
  template <typename Loop, typename OnError>
  void watch(Loop& loop, OnError on_reopen_error) {
    loop.addTimer(50, [this] { flush(); });
    loop.watchReadable(wakeFd(), [this] { flush(); });
    loop.interceptSignal(SIGHUP, [this, on_reopen_error] {
      if (auto st = reopen(); !st) on_reopen_error(st.error());
    });
  }

  // Drains all sinks (blocking up to close_timeout, then counts the rest as
  // dropped) and closes them. Idempotent.
  void close();
  // Emits the session end event with the final counters, then close().
  void finish(const ExitStatus& exit);
  // Decisions the kernel enforced but could not report (AuditCounters::
  // unrecorded): carried by the end event, so the loss is in the trail.
  void countUnrecorded(uint64_t n);

  AuditCounters counters() const;
  const SessionInfo& session() const { return session_; }
  // The exec daemon reloaded its policy: later events name the new one
  // (the reload event itself too: emit it after this).
  void setPolicy(std::string name, std::string sha256);
  // First error of a sink that failed (EPIPE, EIO...), empty if none.
  std::vector<Error> sinkErrors() const;

 private:
  enum class Framing { kLines, kSyslogOctetCounted, kSyslogDatagram };
  struct Sink {
    std::unique_ptr<audit::Transport> transport;
    Framing framing = Framing::kLines;
    std::unique_ptr<audit::Spool> spool;  // network sinks: overflow while down
    bool loop_only = false;               // written by flush() only
    std::string buf;  // unwritten bytes start at buf[off]
    size_t off = 0;
    // Lengths of the unwritten records, from line_first on; the first one is
    // partly written by `head` bytes. Compacted like buf, so no allocation
    // once warm (a deque allocates and frees a node every few dozen lines).
    std::vector<uint32_t> line_lens;
    size_t line_first = 0;
    size_t head = 0;
    // The replay window: records [kept_first, line_first), bytes from
    // kept_off, were sent and are resent after a reconnect.
    size_t kept_first = 0, kept_off = 0;
    uint64_t connection = 0;  // the transport's connection() the queue was sent on
    int64_t last_write_ns = INT64_MIN / 2;  // CLOCK_REALTIME of the last write attempt
    bool want_writable = false;
    bool failed = false;
    Error error;
    uint64_t lost_count = 0, lost_first = 0, lost_last = 0;  // not yet reported
    uint64_t lost_total = 0;
    bool chain = false;      // a file sink of a chained session
    std::string chain_prev;  // sha256 hex of the last line queued (see AuditLogOptions::chain)
    size_t pending() const { return buf.size() - off; }
    size_t unsentRecords() const { return line_lens.size() - line_first; }
  };
  void reserveBatch(Sink& sink) const;

  Status addSinkLocked(std::unique_ptr<audit::Transport> transport, Framing framing,
                       std::unique_ptr<audit::Spool> spool);
  Status addPolicySink(const policy::AuditSink& sink);
  std::string_view frame(Sink& sink, const AuditEvent* event, uint64_t seq, timespec now,
                         std::string_view json_line);
  bool enqueue(Sink& sink, std::string_view record, bool force);
  bool chained(Sink& sink, std::string_view record);
  void append(Sink& sink, std::string_view record);
  void refill(Sink& sink);
  bool shouldWriteNow(const Sink& sink, int64_t now_ns, size_t incoming) const;
  void drop(Sink& sink, uint64_t seq);
  void collectLost(Sink& sink);
  uint64_t emitLocked(const AuditEvent& event);
  void maybeReportDrops(Sink& sink, timespec now, bool force);
  void writeSome(Sink& sink, int64_t now_ns);
  void rewind(Sink& sink);
  void flushSink(Sink& sink, timespec now, bool eager);
  void failSink(Sink& sink, Error error);
  void drainBlocking(Sink& sink, std::chrono::steady_clock::time_point deadline);
  void closeLocked();

  mutable std::mutex mu_;
  SessionInfo session_;
  AuditLogOptions options_;
  std::vector<Sink> sinks_;
  uint64_t next_seq_ = 1;
  std::string line_;   // the encode buffer, reused by every emit()
  std::string frame_;  // a syslog sink's framed record, reused
  int pid_;            // syslog PROCID
  UniqueFd wake_fd_;   // see wakeFd()
  bool wake_sent_ = false;
  AuditCounters counters_;
  bool closed_ = false;
  std::vector<Error> closed_errors_;  // sink errors kept after close()
};

}  // namespace sv::supervisor
