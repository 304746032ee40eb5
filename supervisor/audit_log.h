// AuditLog: numbers, encodes and writes audit events to the session's sinks.
//
// The decision path never waits on a sink. emit() encodes into one reused
// buffer and appends the line to a per-sink bounded buffer (both keep their
// capacity, so a steady-state emit() allocates nothing). It writes at once when
// the sink has been quiet for write_coalesce; during a burst lines collect
// until write_batch_bytes and go out in one write(2), and the loop's flush()
// (every iteration or tick) writes the tail. What the sink does not take stays
// buffered until the loop sees the fd writable and calls flush(). When a buffer is full the event is dropped for that sink and
// counted; as soon as there is room again the sink gets a `dropped` record
// naming the exact seq range it lost. close() drains everything, blocking up
// to a timeout (a reader that never reads must not hang session end).
//
// Non-blocking without side effects: O_NONBLOCK is a property of the open file
// description, which a pipe or terminal shares with the supervised command
// (stdout!). So a pipe/FIFO/tty sink is reopened through /proc/self/fd/N to get
// a description of our own, and sockets use send(MSG_DONTWAIT). Regular files
// are written directly (O_APPEND). SIGPIPE from a reader that went away is
// blocked and consumed around the write, so the caller need not ignore it.
//
// Thread-safe (one mutex); the intended caller is the supervisor's libuv loop:
// after handling events, poll pendingFds() for writability and call flush().
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "supervisor/audit/formats.h"
#include "supervisor/audit_event.h"

namespace sv::supervisor {

struct AuditLogOptions {
  AuditFormat format = AuditFormat::Native;  // every sink gets the same format
  size_t max_buffer_bytes = 4u << 20;  // per sink; session events may exceed it
  // A line emitted within this long of the sink's last write waits for the
  // batch to fill or for flush(); zero writes every line at once.
  std::chrono::microseconds write_coalesce{1000};
  size_t write_batch_bytes = 64u << 10;
  std::chrono::milliseconds close_timeout{5000};
};

// What the CLI asked for: --audit-log PATH, --audit-fd N, --audit-stdout.
struct AuditSinkConfig {
  std::vector<std::string> paths;
  std::vector<int> fds;  // ownership passes to the AuditLog
  bool to_stdout = false;
};

class AuditLog {
 public:
  explicit AuditLog(SessionInfo session, AuditLogOptions options = {});
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // Opens every sink in the config; on error nothing stays half-added from
  // the failing entry, earlier sinks stay.
  Status open(const AuditSinkConfig& config);
  // O_WRONLY|O_APPEND|O_CREAT|O_CLOEXEC, mode 0600.
  Status addFileSink(const std::string& path);
  // An inherited descriptor (--audit-fd). fds 0-2 are refused: the command's
  // stdio must never carry audit lines unless addStdoutSink() says so.
  Status addFdSink(UniqueFd fd);
  // Only on explicit request: the command's stdout and the audit lines mix.
  Status addStdoutSink();

  // Assigns seq (1, 2, ... per session, gap-free) and time, encodes, queues
  // and tries a non-blocking write. Returns the seq. Never blocks, never throws.
  uint64_t emit(const AuditEvent& event);

  // Non-blocking: writes what the sinks take. True when nothing is pending.
  bool flush();
  // Sinks with bytes pending that the kernel refused (EAGAIN): watch them for
  // POLLOUT / UV_WRITABLE and call flush().
  std::vector<int> pendingFds() const;

  // Drains all sinks (blocking up to close_timeout, then counts the rest as
  // dropped) and closes them. Idempotent.
  void close();
  // Emits the session end event with the final counters, then close().
  void finish(const ExitStatus& exit);

  AuditCounters counters() const;
  const SessionInfo& session() const { return session_; }
  // First error of a sink that failed (EPIPE, EIO...), empty if none.
  std::vector<Error> sinkErrors() const;

 private:
  enum class WriteMode { kFile, kNonBlocking, kSocket, kBlocking };
  struct Sink {
    std::string name;
    UniqueFd fd;
    WriteMode mode = WriteMode::kFile;
    std::string buf;  // unwritten bytes start at buf[off]
    size_t off = 0;
    // Lengths of the unwritten lines, from line_first on; the first one is
    // partly written by `head` bytes. Compacted like buf, so no allocation
    // once warm (a deque allocates and frees a node every few dozen lines).
    std::vector<uint32_t> line_lens;
    size_t line_first = 0;
    size_t head = 0;
    int64_t last_write_ns = INT64_MIN / 2;  // CLOCK_REALTIME of the last write attempt
    bool want_writable = false;
    bool failed = false;
    Error error;
    uint64_t lost_count = 0, lost_first = 0, lost_last = 0;  // not yet reported
    uint64_t lost_total = 0;
    size_t pending() const { return buf.size() - off; }
  };
  void reserveBatch(Sink& sink) const;

  Status addSink(std::string name, UniqueFd fd, bool shared_with_command);
  void append(Sink& sink, std::string_view line);
  bool shouldWriteNow(const Sink& sink, int64_t now_ns, size_t incoming) const;
  void drop(Sink& sink, uint64_t seq);
  uint64_t emitLocked(const AuditEvent& event);
  void maybeReportDrops(Sink& sink, timespec now, bool force);
  void writeSome(Sink& sink, int64_t now_ns);
  void failSink(Sink& sink, Error error);
  void drainBlocking(Sink& sink, std::chrono::steady_clock::time_point deadline);
  void closeLocked();

  mutable std::mutex mu_;
  SessionInfo session_;
  AuditLogOptions options_;
  std::vector<Sink> sinks_;
  uint64_t next_seq_ = 1;
  std::string line_;  // the encode buffer, reused by every emit()
  AuditCounters counters_;
  bool closed_ = false;
  std::vector<Error> closed_errors_;  // sink errors kept after close()
};

}  // namespace sv::supervisor
