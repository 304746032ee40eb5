// NETLINK_AUDIT sockets: the control request (AUDIT_GET/AUDIT_SET) and the read-only
// multicast listener that receives every kernel audit record.
//
// The listener binds AUDIT_NLGRP_READLOG (needs CAP_AUDIT_READ): it receives the
// records whether or not an auditd is registered, and it never registers as auditd,
// so it cannot take a running auditd's place. Multicast is best effort: when the
// socket's receive buffer is full the kernel drops the datagram and the next recv()
// fails with ENOBUFS; that is counted (overruns()), never silent. Setting only
// AUDIT_STATUS_ENABLED / _BACKLOG_LIMIT is all AuditControl can do: it has no way to
// send AUDIT_STATUS_PID, by design.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"

namespace sv::tracer::kernel_audit {

// struct audit_status as the kernel returns it (fields newer than the reply are 0).
struct AuditStatus {
  uint32_t enabled = 0;  // 0 off, 1 on, 2 on and locked (immutable until reboot)
  uint32_t failure = 0;
  uint32_t pid = 0;  // registered auditd, 0 for none
  uint32_t rate_limit = 0;
  uint32_t backlog_limit = 0;
  uint32_t lost = 0;
  uint32_t backlog = 0;
  uint32_t feature_bitmap = 0;
  uint32_t backlog_wait_time = 0;
  uint32_t backlog_wait_time_actual = 0;
};

class AuditControl {
 public:
  // Fails with EPROTONOSUPPORT when the kernel has no audit (CONFIG_AUDIT=n or audit=0
  // at boot: then there is no NETLINK_AUDIT socket at all).
  static Result<AuditControl> open();

  // Needs CAP_AUDIT_CONTROL. The kernel starts a thread of its own for the
  // reply while it handles the request, so the send alone takes 0.5-3 ms
  // here (more under load).
  Result<AuditStatus> getStatus();
  Status setEnabled(uint32_t enabled);     // mask AUDIT_STATUS_ENABLED only
  Status setBacklogLimit(uint32_t limit);  // mask AUDIT_STATUS_BACKLOG_LIMIT only
  Status setRateLimit(uint32_t per_second);  // mask AUDIT_STATUS_RATE_LIMIT only; 0: none
  // Writes a user record (AUDIT_TRUSTED_APP) into the kernel's audit queue. It
  // reaches listeners after every record queued before it: a session sends
  // one when its command has exited and reads until it sees it, so no denial
  // of the tree is still in flight (kernel_denials.cpp).
  Status sendUserMessage(std::string_view text);

 private:
  explicit AuditControl(UniqueFd fd) : fd_(std::move(fd)) {}
  Status request(uint16_t type, const void* payload, size_t len, AuditStatus* reply);
  Status sendRequest(uint16_t type, const void* payload, size_t len);
  Status awaitReply(AuditStatus* reply);

  UniqueFd fd_;
  uint32_t seq_ = 0;
};

class AuditListener {
 public:
  // 64 MiB holds a burst of ~100k records (measured: 10,000 denials = 40,000 records
  // arrive whole with it; the 208 KiB default overran after ~200 records).
  static constexpr int kDefaultReceiveBuffer = 64 << 20;

  // Non-blocking socket bound to the read-only group. SO_RCVBUFFORCE (CAP_NET_ADMIN)
  // lifts the rmem_max cap; without it SO_RCVBUF gives what the sysctl allows.
  static Result<AuditListener> open(int receive_buffer = kDefaultReceiveBuffer);

  int fd() const { return fd_.get(); }  // for poll/libuv: readable when records wait
  int receiveBuffer() const { return receive_buffer_; }
  uint64_t overruns() const { return overruns_; }
  uint64_t records() const { return records_; }

  // Reads every datagram waiting, without blocking, and calls sink(type, text) for each
  // record in them. Returns how many records it passed on.
  template <typename Sink>
  Result<size_t> drain(Sink&& sink);

 private:
  explicit AuditListener(UniqueFd fd, int receive_buffer)
      : fd_(std::move(fd)), receive_buffer_(receive_buffer), buf_(kBufferSize) {}
  // One recv(): >0 bytes in buf_, 0 nothing waiting, or an error. ENOBUFS is counted
  // and reported as 1 (call again).
  Result<int> receiveOne();
  // Calls emit(type, text) for each record of the last datagram.
  template <typename Sink>
  size_t split(int len, Sink& sink);

  UniqueFd fd_;
  int receive_buffer_ = 0;
  uint64_t overruns_ = 0;
  uint64_t records_ = 0;
  int last_len_ = 0;
  // A record is at most MAX_AUDIT_MESSAGE_LENGTH (8970) bytes; on the heap so the
  // listener moves cheaply.
  static constexpr size_t kBufferSize = 16384;
  std::vector<char> buf_;
};

// The text of a record without the trailing NULs and newline the kernel may add.
std::string_view trimRecordText(const char* data, size_t len);

template <typename Sink>
size_t AuditListener::split(int len, Sink& sink) {
  size_t n = 0;
  size_t off = 0;
  const size_t total = static_cast<size_t>(len);
  constexpr size_t kHdr = 16;  // NLMSG_HDRLEN
  while (off + kHdr <= total) {
    uint32_t msg_len;
    uint16_t type;
    __builtin_memcpy(&msg_len, buf_.data() + off, 4);
    __builtin_memcpy(&type, buf_.data() + off + 4, 2);
    if (msg_len < kHdr || msg_len > total - off) break;  // malformed: drop the rest
    if (type >= 1000) {  // below are netlink control messages (NOOP, ERROR, DONE)
      sink(type, trimRecordText(buf_.data() + off + kHdr, msg_len - kHdr));
      ++n;
    }
    off += (msg_len + 3) & ~3U;
  }
  records_ += n;
  return n;
}

template <typename Sink>
Result<size_t> AuditListener::drain(Sink&& sink) {
  size_t n = 0;
  for (;;) {
    auto got = receiveOne();
    if (!got.ok()) return got.error();
    if (*got == 0) return n;
    if (last_len_ > 0) n += split(last_len_, sink);
  }
}

}  // namespace sv::tracer::kernel_audit
