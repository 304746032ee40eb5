// NETLINK_AUDIT control and multicast listener (audit_netlink.h).
#include "tracer/kernel_audit/audit_netlink.h"

#include <linux/audit.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstring>
#include <string>

#include "tracer/kernel_audit/audit_abi.h"

namespace sv::tracer::kernel_audit {

std::string_view trimRecordText(const char* data, size_t len) {
  while (len > 0 && (data[len - 1] == '\0' || data[len - 1] == '\n')) --len;
  return std::string_view(data, len);
}

Result<AuditControl> AuditControl::open() {
  UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT));
  if (!fd) return errnoError("socket(NETLINK_AUDIT)");
  return AuditControl(std::move(fd));
}

Status AuditControl::sendUserMessage(std::string_view text) {
  // AUDIT_TRUSTED_APP (1121): a free-text message of a trusted program; the
  // kernel queues it behind every record already queued (needs CAP_AUDIT_WRITE).
  constexpr uint16_t kAuditTrustedApp = 1121;
  // The kernel makes the payload's last byte its NUL terminator: send one.
  std::string payload(text);
  payload.push_back('\0');
  return request(kAuditTrustedApp, payload.data(), payload.size(), nullptr);
}

Status AuditControl::request(uint16_t type, const void* payload, size_t len, AuditStatus* reply) {
  SV_TRY(sendRequest(type, payload, len));
  return awaitReply(reply);
}

Status AuditControl::sendRequest(uint16_t type, const void* payload, size_t len) {
  struct {
    nlmsghdr hdr;
    alignas(audit_status) char data[512];  // an audit_status, or a user message's text
  } msg{};
  if (len > sizeof(msg.data)) return Error{EINVAL, "audit request too large"};
  msg.hdr.nlmsg_len = NLMSG_LENGTH(len);
  msg.hdr.nlmsg_type = type;
  msg.hdr.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  msg.hdr.nlmsg_seq = ++seq_;
  if (len > 0) std::memcpy(msg.data, payload, len);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd_.get(), &msg, msg.hdr.nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof(kernel)) < 0)
    return errnoError("send audit request");
  return Status{};
}

// The answer to the last request sent: its ACK, and for AUDIT_GET the status.
Status AuditControl::awaitReply(AuditStatus* reply) {
  bool have_reply = reply == nullptr;
  bool have_ack = false;
  alignas(nlmsghdr) char buf[8192];
  // AUDIT_SET is answered by the ACK (or an error). AUDIT_GET by the ACK and the status,
  // in either order: the status is sent from a kernel thread (audit_send_reply), the
  // ACK when the request handler returns. A second of silence means something is wrong.
  for (int rounds = 0; rounds < 8 && !(have_reply && have_ack); ++rounds) {
    pollfd p{fd_.get(), POLLIN, 0};
    int pr = ::poll(&p, 1, 1000);
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) return Error{ETIMEDOUT, "audit reply"};
    ssize_t n = ::recv(fd_.get(), buf, sizeof(buf), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errnoError("receive audit reply");
    }
    int left = static_cast<int>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_seq != seq_) continue;
      if (h->nlmsg_type == NLMSG_ERROR) {
        const auto* err = static_cast<const nlmsgerr*>(NLMSG_DATA(h));
        if (err->error != 0) return Error{-err->error, "audit request"};
        have_ack = true;
      } else if (h->nlmsg_type == AUDIT_GET && reply) {
        audit_status s{};
        const size_t got = h->nlmsg_len - NLMSG_HDRLEN;
        std::memcpy(&s, NLMSG_DATA(h), got < sizeof(s) ? got : sizeof(s));
        *reply = AuditStatus{s.enabled,
                             s.failure,
                             s.pid,
                             s.rate_limit,
                             s.backlog_limit,
                             s.lost,
                             s.backlog,
                             s.feature_bitmap,
                             s.backlog_wait_time,
                             s.backlog_wait_time_actual};
        have_reply = true;
      }
    }
  }
  return have_reply && have_ack ? Status{} : Status(Error{EPROTO, "audit reply"});
}

Result<AuditStatus> AuditControl::getStatus() {
  SV_TRY(sendRequest(AUDIT_GET, nullptr, 0));
  AuditStatus s;
  SV_TRY(awaitReply(&s));
  return s;
}

Status AuditControl::setEnabled(uint32_t enabled) {
  audit_status s{};
  s.mask = AUDIT_STATUS_ENABLED;
  s.enabled = enabled;
  return request(AUDIT_SET, &s, sizeof(s), nullptr);
}

Status AuditControl::setBacklogLimit(uint32_t limit) {
  audit_status s{};
  s.mask = AUDIT_STATUS_BACKLOG_LIMIT;
  s.backlog_limit = limit;
  return request(AUDIT_SET, &s, sizeof(s), nullptr);
}

Status AuditControl::setRateLimit(uint32_t per_second) {
  audit_status s{};
  s.mask = AUDIT_STATUS_RATE_LIMIT;
  s.rate_limit = per_second;
  return request(AUDIT_SET, &s, sizeof(s), nullptr);
}

Result<AuditListener> AuditListener::open(int receive_buffer) {
  UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_AUDIT));
  if (!fd) return errnoError("socket(NETLINK_AUDIT)");
  if (receive_buffer > 0 &&
      ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUFFORCE, &receive_buffer, sizeof(receive_buffer)) !=
          0 &&
      ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer)) != 0)
    return errnoError("SO_RCVBUF on the audit listener");
  int actual = 0;
  socklen_t actual_len = sizeof(actual);
  ::getsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &actual, &actual_len);
  sockaddr_nl addr{};
  addr.nl_family = AF_NETLINK;
  addr.nl_groups = 1U << (abi::kAuditNlgrpReadlog - 1);
  // EPERM here: no CAP_AUDIT_READ, or not in the initial user namespace.
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
    return errnoError("bind the audit multicast group (CAP_AUDIT_READ)");
  return AuditListener(std::move(fd), actual);
}

Result<int> AuditListener::receiveOne() {
  for (;;) {
    ssize_t n = ::recv(fd_.get(), buf_.data(), buf_.size(), MSG_DONTWAIT);
    if (n >= 0) {
      last_len_ = static_cast<int>(n);
      return n > 0 ? 1 : 0;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    if (errno == ENOBUFS) {
      // The kernel dropped datagrams for us since the last read. The socket stays
      // usable; the records are gone and only the count is left to report.
      ++overruns_;
      last_len_ = 0;
      return 1;
    }
    return errnoError("receive audit records");
  }
}

}  // namespace sv::tracer::kernel_audit
