// UDP / TCP / TLS transports with reconnect and backoff: see net_transport.h.
#include "supervisor/audit/sinks/net_transport.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/unique_fd.h"
#include "supervisor/audit/sinks/gnutls_api.h"

namespace sv::supervisor::audit {
namespace {

constexpr int64_t kMs = 1000000;
constexpr int64_t kFirstBackoff = 100 * kMs;
constexpr int64_t kMaxBackoff = 5000 * kMs;
constexpr int64_t kEagerRetry = 100 * kMs;      // the final drain retries this often
constexpr int64_t kHandshakeTimeout = 10000 * kMs;
constexpr size_t kTlsRecord = 16384;  // one TLS record per gnutls_record_send

struct GnutlsCreds {
  const Gnutls* lib = nullptr;
  gnutls_certificate_credentials_t creds = nullptr;
  ~GnutlsCreds() {
    if (creds) lib->certificate_free_credentials(creds);
  }
};

class NetTransport : public Transport {
 public:
  NetTransport(std::string name, NetAddress address, sockaddr_storage addr, socklen_t addr_len,
               NetOptions options)
      : name_(std::move(name)),
        address_(std::move(address)),
        addr_(addr),
        addr_len_(addr_len),
        options_(std::move(options)) {}
  ~NetTransport() override { closeConnection(); }

  Status initTls() {
    auto lib = gnutls();
    if (!lib) return lib.error();
    tls_lib_ = creds_.lib = *lib;
    if (tls_lib_->certificate_allocate_credentials(&creds_.creds) < 0)
      return Error{ENOMEM, "gnutls credentials"};
    int r = options_.ca_file.empty()
                ? tls_lib_->certificate_set_x509_system_trust(creds_.creds)
                : tls_lib_->certificate_set_x509_trust_file(creds_.creds, options_.ca_file.c_str(),
                                                         GNUTLS_X509_FMT_PEM);
    if (r <= 0)
      return Error{EINVAL, "tls trust " + (options_.ca_file.empty() ? "(system)" : options_.ca_file) +
                               ": " + (r < 0 ? tls_lib_->strerror(r) : "no certificate")};
    return {};
  }

  const std::string& name() const override { return name_; }
  bool recoverable() const override { return true; }
  bool datagram() const override { return address_.proto == NetProto::kUdp; }
  bool loopOnly() const override { return true; }
  size_t replayBytes() const override { return datagram() ? 0 : options_.replay_bytes; }
  int pollFd() const override { return state_ == State::kDown ? -1 : fd_.get(); }
  uint64_t connection() const override { return connections_; }
  short pollEvents() const override {
    if (state_ == State::kHandshake && tls_ && tls_lib_->record_get_direction(tls_) == 0)
      return POLLIN;
    return POLLOUT;
  }

  bool up(int64_t now, bool eager) override {
    switch (state_) {
      case State::kUp:
        if (!datagram() && peerClosed()) {
          down(Error{ECONNRESET, "audit sink " + name_ + ": receiver closed the connection"}, now);
          return false;
        }
        return true;
      case State::kDown:
        if (now < (eager ? last_try_ + kEagerRetry : next_try_)) return false;
        startConnect(now);
        break;
      case State::kConnecting:
        finishConnect(now);
        break;
      case State::kHandshake:
        handshake(now);
        break;
    }
    return state_ == State::kUp;
  }

  void down(const Error& why, int64_t now) override {
    last_error_ = why;
    closeConnection();
    next_try_ = now + backoff_;
    backoff_ = std::min(backoff_ * 2, kMaxBackoff);
  }

  Result<size_t> write(const char* data, size_t len) override {
    if (state_ != State::kUp) return size_t(0);
    if (tls_) return tlsWrite(data, len);
    for (;;) {
      ssize_t n = ::send(fd_.get(), data, len, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n >= 0) return size_t(n);
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) return size_t(0);
      // A datagram the network can never carry: count it sent rather than
      // block the queue behind it forever.
      if (errno == EMSGSIZE && datagram()) return len;
      return errnoError("send audit sink " + name_);
    }
  }

 private:
  enum class State { kDown, kConnecting, kHandshake, kUp };

  Result<size_t> tlsWrite(const char* data, size_t len) {
    // After GNUTLS_E_AGAIN the same record must be retried; (NULL, 0) does
    // that and returns its length when it finally goes out.
    ssize_t r = again_ ? tls_lib_->record_send(tls_, nullptr, 0)
                       : tls_lib_->record_send(tls_, data, std::min(len, kTlsRecord));
    if (r >= 0) {
      again_ = false;
      return size_t(r);
    }
    if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) {
      again_ = true;
      return size_t(0);
    }
    return Error{EPIPE, "tls send audit sink " + name_ + ": " + tls_lib_->strerror(int(r))};
  }

  bool peerClosed() {
    char c;
    ssize_t n = ::recv(fd_.get(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) return true;
    if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
    return false;  // a receiver has nothing to say; TLS may send a ticket
  }

  void startConnect(int64_t now) {
    last_try_ = now;
    closeConnection();
    const int type = datagram() ? SOCK_DGRAM : SOCK_STREAM;
    fd_.reset(::socket(addr_.ss_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd_) return fail(errnoError("socket for audit sink " + name_), now);
    if (!datagram()) {
      // Bounded bytes in flight: what a receiver that dies may take with it
      // is what the replay window resends.
      int sndbuf = 256 << 10;
      (void)setsockopt(fd_.get(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
      int one = 1;
      (void)setsockopt(fd_.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    if (::connect(fd_.get(), reinterpret_cast<const sockaddr*>(&addr_), addr_len_) == 0) {
      connected(now);
    } else if (errno == EINPROGRESS) {
      state_ = State::kConnecting;
    } else {
      fail(errnoError("connect audit sink " + name_), now);
    }
  }

  void finishConnect(int64_t now) {
    pollfd p{fd_.get(), POLLOUT, 0};
    if (::poll(&p, 1, 0) <= 0) return;  // still connecting
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
    if (err) return fail(Error{err, "connect audit sink " + name_ + ": " + strerror(err)}, now);
    connected(now);
  }

  void connected(int64_t now) {
    if (address_.proto != NetProto::kTls) {
      state_ = State::kUp;
      ++connections_;
      backoff_ = kFirstBackoff;
      return;
    }
    int r = tls_lib_->init(&tls_, GNUTLS_CLIENT | GNUTLS_NONBLOCK | GNUTLS_NO_SIGNAL);
    if (r < 0) return fail(Error{ENOMEM, std::string("gnutls_init: ") + tls_lib_->strerror(r)}, now);
    tls_lib_->set_default_priority(tls_);
    tls_lib_->credentials_set(tls_, GNUTLS_CRD_CERTIFICATE, creds_.creds);
    in6_addr probe;
    const bool literal = inet_pton(AF_INET, address_.host.c_str(), &probe) == 1 ||
                         inet_pton(AF_INET6, address_.host.c_str(), &probe) == 1;
    if (!literal)
      tls_lib_->server_name_set(tls_, GNUTLS_NAME_DNS, address_.host.data(), address_.host.size());
    tls_lib_->session_set_verify_cert(tls_, address_.host.c_str(), 0);
    tls_lib_->transport_set_int2(tls_, fd_.get(), fd_.get());
    handshake_deadline_ = now + kHandshakeTimeout;
    state_ = State::kHandshake;
    handshake(now);
  }

  void handshake(int64_t now) {
    int r = tls_lib_->handshake(tls_);
    if (r == GNUTLS_E_SUCCESS) {
      state_ = State::kUp;
      ++connections_;
      backoff_ = kFirstBackoff;
      return;
    }
    if (tls_lib_->error_is_fatal(r) == 0 && now < handshake_deadline_) return;  // again later
    std::string why = tls_lib_->strerror(r);
    if (r == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
      gnutls_datum_t out{};
      const unsigned status = tls_lib_->session_get_verify_cert_status(tls_);
      if (tls_lib_->certificate_verification_status_print(status, GNUTLS_CRT_X509, &out, 0) == 0) {
        why += std::string(": ") + reinterpret_cast<const char*>(out.data);
        (*tls_lib_->free)(out.data);
      }
    }
    fail(Error{EPROTO, "tls handshake audit sink " + name_ + ": " + why}, now);
  }

  void fail(Error e, int64_t now) { down(e, now); }

  void closeConnection() {
    if (tls_) {
      tls_lib_->deinit(tls_);
      tls_ = nullptr;
    }
    again_ = false;
    fd_.reset();
    state_ = State::kDown;
  }

  std::string name_;
  NetAddress address_;
  sockaddr_storage addr_;
  socklen_t addr_len_;
  NetOptions options_;
  GnutlsCreds creds_;
  UniqueFd fd_;
  const Gnutls* tls_lib_ = nullptr;  // set by initTls (TLS sinks only)
  gnutls_session_t tls_ = nullptr;
  bool again_ = false;
  State state_ = State::kDown;
  int64_t next_try_ = 0, last_try_ = INT64_MIN / 2, handshake_deadline_ = 0;
  int64_t backoff_ = kFirstBackoff;
  uint64_t connections_ = 0;
  Error last_error_;
};

}  // namespace

Result<NetAddress> parseNetAddress(const std::string& url) {
  NetAddress a;
  const size_t sep = url.find("://");
  if (sep == std::string::npos) return Error{EINVAL, "syslog address " + url + ": expected udp|tcp|tls://HOST:PORT"};
  const std::string scheme = url.substr(0, sep);
  if (scheme == "udp") a.proto = NetProto::kUdp;
  else if (scheme == "tcp") a.proto = NetProto::kTcp;
  else if (scheme == "tls") a.proto = NetProto::kTls;
  else return Error{EINVAL, "syslog address " + url + ": scheme must be udp, tcp or tls"};
  std::string rest = url.substr(sep + 3);
  size_t colon;
  if (!rest.empty() && rest[0] == '[') {
    const size_t close = rest.find(']');
    if (close == std::string::npos || close + 1 >= rest.size() || rest[close + 1] != ':')
      return Error{EINVAL, "syslog address " + url + ": expected [IPv6]:PORT"};
    a.host = rest.substr(1, close - 1);
    colon = close + 1;
  } else {
    colon = rest.rfind(':');
    if (colon == std::string::npos || colon == 0) return Error{EINVAL, "syslog address " + url + ": expected HOST:PORT"};
    a.host = rest.substr(0, colon);
  }
  const std::string port = rest.substr(colon + 1);
  char* end = nullptr;
  const long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end || p < 1 || p > 65535) return Error{EINVAL, "syslog address " + url + ": bad port"};
  a.port = int(p);
  return a;
}

Result<std::unique_ptr<Transport>> openNetTransport(const std::string& url, NetOptions options) {
  auto parsed = parseNetAddress(url);
  if (!parsed) return parsed.error();
  const NetAddress address = *parsed;
  addrinfo hints{};
  hints.ai_socktype = address.proto == NetProto::kUdp ? SOCK_DGRAM : SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(address.port);
  if (int r = getaddrinfo(address.host.c_str(), port.c_str(), &hints, &res); r != 0)
    return Error{EHOSTUNREACH, "syslog address " + url + ": " + gai_strerror(r)};
  sockaddr_storage addr{};
  std::memcpy(&addr, res->ai_addr, res->ai_addrlen);
  const socklen_t len = res->ai_addrlen;
  freeaddrinfo(res);
  auto t = std::make_unique<NetTransport>(url, address, addr, len, std::move(options));
  if (address.proto == NetProto::kTls) SV_TRY(t->initTls());
  return std::unique_ptr<Transport>(std::move(t));
}

}  // namespace sv::supervisor::audit
