// Transport: where a sink's bytes go, separated from how records are framed.
//
// The AuditLog keeps, per sink, a queue of framed records (JSON lines, RFC 5424
// syslog messages...) and hands their bytes to a Transport. A transport only
// moves bytes: a file (rotation, reopen on SIGHUP), an inherited fd, a socket
// (UDP, TCP, TLS) that reconnects with backoff. An HTTP transport (Splunk HEC,
// Elastic _bulk) or OTLP fits the same shape: its framing batches records into
// a request body, its transport posts it and says how much was accepted.
//
// Contract: every call is non-blocking. write() takes a prefix of the bytes
// and returns how many it took, 0 meaning "not now" (wait for pollFd() to be
// writable, or for the next flush). A datagram transport takes one whole
// record per call or nothing. An error from a recoverable transport means the
// peer went away: the AuditLog calls down(), resends what the peer may not have
// got (replayBytes()), and keeps queueing (and spooling) until up() is true
// again. An error from any other transport fails the sink for good.
//
// An acknowledging transport (Kafka, OTLP/HTTP) keeps what it took until the
// receiver confirms it, and retries on its own. It takes one whole record per
// write() (datagram() is true) and returns 0 while its own queue is full, so
// the AuditLog's memory queue and spool take over; it needs no replay window.
// inFlight() counts records taken but not yet confirmed (the final drain waits
// for 0); takeLost() hands back, once each, the records it gave up on for
// good (rejected, timed out, abandoned), which the AuditLog counts in the
// sink's `dropped` record by their seq.
#pragma once

#include <poll.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace sv::supervisor::audit {

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const std::string& name() const = 0;
  virtual Result<size_t> write(const char* data, size_t len) = 0;
  // Advances a (re)connect without blocking; true when write() may be called.
  // now_ns: CLOCK_MONOTONIC. `eager` ignores the backoff (the final drain).
  virtual bool up(int64_t /*now_ns*/, bool /*eager*/ = false) { return true; }
  // The peer is gone (a write failed): close and schedule a reconnect.
  virtual void down(const Error& /*why*/, int64_t /*now_ns*/) {}
  // Counts established connections: when it changes, whatever the previous
  // connection may have lost (the replay window) is sent again.
  virtual uint64_t connection() const { return 0; }
  virtual bool recoverable() const { return false; }
  virtual bool datagram() const { return false; }
  // Written only by the loop's flush(), never from emit() on the decision
  // path: connecting, TLS and the spool stay off the notify thread.
  virtual bool loopOnly() const { return false; }
  // Bytes kept after a successful write and sent again after a reconnect: a
  // TCP peer that dies loses what sat in the socket buffers, and syslog has no
  // acknowledgement. Receivers see a few duplicates (same seq and event_id)
  // instead of a gap.
  virtual size_t replayBytes() const { return 0; }
  // What to poll for while write() returns 0 (-1: nothing, wait for a timer).
  virtual int pollFd() const = 0;
  virtual short pollEvents() const { return POLLOUT; }
  // SIGHUP: a file transport reopens its path (logrotate moved it away).
  virtual Status reopen() { return {}; }

  // Acknowledging transports (see above); the defaults fit every other one.
  virtual size_t inFlight() const { return 0; }
  // The drain deadline passed: stop retrying; what is unconfirmed is lost.
  virtual void abandon() {}
  // Calls lost(record) for each record given up on since the last call.
  virtual void takeLost(const std::function<void(std::string_view record)>& /*lost*/) {}
};

}  // namespace sv::supervisor::audit
