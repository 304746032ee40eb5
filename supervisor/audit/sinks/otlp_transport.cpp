// OTLP/HTTP logs over libcurl's multi interface: see otlp_transport.h.
#include "supervisor/audit/sinks/otlp_transport.h"

#include <curl/curl.h>
#include <sys/epoll.h>
#include <time.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "common/unique_fd.h"
#include "supervisor/audit/sinks/curl_api.h"

namespace sv::supervisor::audit {
namespace {

// libcurl's functions: openOtlpTransport() loaded them before any use.
const Curl& curl() { return *curlApi().value(); }

constexpr int64_t kMs = 1000000;
constexpr int64_t kEagerBackoff = 100 * kMs;  // the final drain retries this often (no Retry-After)
constexpr size_t kMaxResponse = 64u
                                << 10;  // what we keep of a response body (errors, partial success)
constexpr int64_t kWarnEvery = 60000 * kMs;  // one partial-success warning per minute at most

int64_t monotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t realtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

struct MultiDeleter {
  void operator()(CURLM* m) const { curl().multi_cleanup(m); }
};
struct EasyDeleter {
  void operator()(CURL* e) const { curl().easy_cleanup(e); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl().slist_free_all(l); }
};

// gzip (RFC 1952) with one reused deflate state.
class Gzip {
 public:
  Gzip() = default;
  Gzip(const Gzip&) = delete;
  Gzip& operator=(const Gzip&) = delete;
  ~Gzip() {
    if (ready_) deflateEnd(&z_);
  }
  Status compress(const std::string& in, std::string& out) {
    if (!ready_) {
      // 15 + 16: a gzip header and trailer. Level 1: JSON compresses ~10x
      // even so, and the loop thread's time matters more than bytes.
      if (deflateInit2(&z_, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return Error{ENOMEM, "zlib deflateInit2"};
      ready_ = true;
    } else if (deflateReset(&z_) != Z_OK) {
      return Error{EINVAL, "zlib deflateReset"};
    }
    out.resize(deflateBound(&z_, uLong(in.size())));
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z_.avail_in = uInt(in.size());
    z_.next_out = reinterpret_cast<Bytef*>(out.data());
    z_.avail_out = uInt(out.size());
    if (deflate(&z_, Z_FINISH) != Z_STREAM_END) return Error{EIO, "zlib deflate"};
    out.resize(out.size() - z_.avail_out);
    return {};
  }

 private:
  z_stream z_{};
  bool ready_ = false;
};

// A batch: the raw records (what takeLost() hands back) and their encoding.
struct Batch {
  explicit Batch(const OtlpResource& r) : encoder(r) {}
  std::string raw;
  std::vector<uint32_t> lens;
  OtlpBatchEncoder encoder;
  int64_t first_ns = 0;  // CLOCK_MONOTONIC of the first record
  size_t records() const { return lens.size(); }
  void clear() {
    raw.clear();
    lens.clear();
    encoder.clear();
  }
  void forEach(const std::function<void(std::string_view)>& fn) const {
    size_t off = 0;
    for (uint32_t len : lens) {
      fn(std::string_view(raw).substr(off, len));
      off += len;
    }
  }
};

// The seq range of a batch, for messages.
std::string seqRange(const Batch& b) {
  uint64_t lo = UINT64_MAX, hi = 0;
  b.forEach([&](std::string_view r) {
    if (const uint64_t s = scanRecord(r).seq) {
      lo = std::min(lo, s);
      hi = std::max(hi, s);
    }
  });
  if (hi == 0) return std::to_string(b.records()) + " records";
  return std::to_string(b.records()) + " records, seq " + std::to_string(lo) + ".." +
         std::to_string(hi);
}

class OtlpTransport : public Transport {
 public:
  explicit OtlpTransport(OtlpOptions options)
      : options_(std::move(options)),
        name_("otlp " + options_.url),
        filling_(options_.resource),
        sending_(options_.resource),
        rng_(std::random_device{}()) {}

  ~OtlpTransport() override {
    // The easy handle leaves the multi before either is cleaned up.
    if (in_flight_) curl().multi_remove_handle(multi_.get(), easy_.get());
  }

  const std::string& name() const override { return name_; }
  bool recoverable() const override { return true; }
  bool datagram() const override { return true; }
  bool loopOnly() const override { return true; }
  // Readable when one of curl's sockets is ready (the drain waits on it).
  int pollFd() const override { return epoll_.get(); }
  short pollEvents() const override { return POLLIN; }
  size_t inFlight() const override {
    return filling_.records() + (have_request_ ? sending_.records() : 0);
  }

  Result<size_t> write(const char* data, size_t len) override {
    const int64_t now = monotonicNs();
    if (full(filling_)) {
      if (have_request_ || !started()) return size_t{0};  // one request at a time: not now
      cut();
      startIfDue(now, /*eager=*/false);
    }
    std::string_view record(data, len);
    if (!record.empty() && record.back() == '\n') record.remove_suffix(1);
    if (filling_.records() == 0) filling_.first_ns = now;
    filling_.raw.append(record);
    filling_.lens.push_back(uint32_t(record.size()));
    filling_.encoder.append(record, realtimeNs());
    if (full(filling_) && !have_request_ && started()) {
      cut();
      startIfDue(now, /*eager=*/false);
    }
    return len;
  }

  bool up(int64_t now, bool eager) override {
    if (!started() && !start()) return false;
    pump(now);
    if (!have_request_ && filling_.records() &&
        (eager || full(filling_) || now - filling_.first_ns >= options_.linger.count() * kMs))
      cut();
    startIfDue(now, eager);
    // Backing off: the records wait in the AuditLog's queue and spool.
    return !(have_request_ && !in_flight_);
  }

  void abandon() override {
    if (in_flight_) {
      curl().multi_remove_handle(multi_.get(), easy_.get());
      in_flight_ = false;
    }
    if (have_request_) lose(sending_);
    have_request_ = false;
    lose(filling_);
  }

  void takeLost(const std::function<void(std::string_view)>& lost) override {
    lost_.forEach(lost);
    lost_.clear();
  }

 private:
  bool full(const Batch& b) const {
    return b.records() >= options_.batch_records || b.encoder.bytes() >= options_.batch_bytes;
  }
  bool started() const { return multi_ != nullptr; }

  void lose(Batch& b) {
    b.forEach([this](std::string_view r) {
      lost_.raw.append(r);
      lost_.lens.push_back(uint32_t(r.size()));
    });
    b.clear();
  }

  // The first up(): curl's global state, the multi and the easy handle (see
  // the header for why not earlier).
  bool start() {
    static std::once_flag once;
    static CURLcode global = CURLE_OK;
    std::call_once(once, [] { global = curl().global_init(CURL_GLOBAL_DEFAULT); });
    if (global != CURLE_OK) return complainOnce("curl_global_init failed"), false;
    epoll_ = UniqueFd(epoll_create1(EPOLL_CLOEXEC));
    std::unique_ptr<CURLM, MultiDeleter> multi(curl().multi_init());
    std::unique_ptr<CURL, EasyDeleter> easy(curl().easy_init());
    if (!epoll_ || !multi || !easy) return complainOnce("cannot create the curl handles"), false;
    curl().multi_setopt(multi.get(), CURLMOPT_SOCKETFUNCTION, &OtlpTransport::onSocket);
    curl().multi_setopt(multi.get(), CURLMOPT_SOCKETDATA, this);
    curl().multi_setopt(multi.get(), CURLMOPT_TIMERFUNCTION, &OtlpTransport::onTimer);
    curl().multi_setopt(multi.get(), CURLMOPT_TIMERDATA, this);
    curl_slist* list = nullptr;
    auto add = [&list](const std::string& h) {
      if (curl_slist* l = curl().slist_append(list, h.c_str())) list = l;
    };
    add("Content-Type: application/json");
    add("Content-Encoding: gzip");
    add("Expect:");  // no 100-continue round trip for a large body
    for (const auto& [k, v] : options_.headers) add(k + ": " + v);
    headers_.reset(list);
    CURL* e = easy.get();
    curl().easy_setopt(e, CURLOPT_URL, options_.url.c_str());
    curl().easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl().easy_setopt(e, CURLOPT_POST, 1L);
    curl().easy_setopt(e, CURLOPT_HTTPHEADER, headers_.get());
    const std::string agent = "supervise/" + (options_.resource.service_version.empty()
                                                  ? std::string("unknown")
                                                  : options_.resource.service_version);
    curl().easy_setopt(e, CURLOPT_USERAGENT, agent.c_str());  // curl copies strings
    curl().easy_setopt(e, CURLOPT_NOSIGNAL, 1L);              // no SIGALRM in a threaded supervisor
    curl().easy_setopt(e, CURLOPT_TIMEOUT_MS, long(options_.request_timeout.count()));
    curl().easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl().easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl().easy_setopt(e, CURLOPT_WRITEFUNCTION, &OtlpTransport::onBody);
    curl().easy_setopt(e, CURLOPT_WRITEDATA, this);
    if (!options_.ca_file.empty()) curl().easy_setopt(e, CURLOPT_CAINFO, options_.ca_file.c_str());
    multi_ = std::move(multi);
    easy_ = std::move(easy);
    return true;
  }

  // The filling batch becomes the request.
  void cut() {
    std::swap(filling_, sending_);
    filling_.clear();
    have_request_ = true;
    attempts_ = 0;
    retry_at_ = 0;
    retry_after_ = false;
    std::string body;
    sending_.encoder.body(body);
    if (auto st = gzip_.compress(body, gz_); !st) {
      complainOnce(st.error().message() + ": " + seqRange(sending_) + " dropped");
      lose(sending_);
      have_request_ = false;
    }
  }

  void startIfDue(int64_t now, bool eager) {
    if (!have_request_ || in_flight_) return;
    int64_t due = retry_at_;
    if (eager && !retry_after_) due = std::min(due, failed_at_ + kEagerBackoff);
    if (now < due) return;
    response_.clear();
    curl().easy_setopt(easy_.get(), CURLOPT_POSTFIELDS, gz_.data());
    curl().easy_setopt(easy_.get(), CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(gz_.size()));
    if (curl().multi_add_handle(multi_.get(), easy_.get()) != CURLM_OK) {
      backoff(now, 0);
      return;
    }
    in_flight_ = true;
    drive(now);  // connect now, not on the next tick
  }

  // curl's socket interface: the sockets it wants watched are in epoll_ (so
  // the drain's poll wakes on a response), and its timer is timer_due_. Only
  // what is ready is serviced; nothing waits. (curl_multi_perform would be
  // simpler, but 7.88 tells the socket callback nothing from there.)
  void drive(int64_t now) {
    int running = 0;
    epoll_event evs[8];
    const int n = epoll_wait(epoll_.get(), evs, 8, 0);
    for (int i = 0; i < n; ++i) {
      int flags = 0;
      if (evs[i].events & EPOLLIN) flags |= CURL_CSELECT_IN;
      if (evs[i].events & EPOLLOUT) flags |= CURL_CSELECT_OUT;
      if (evs[i].events & (EPOLLERR | EPOLLHUP)) flags |= CURL_CSELECT_ERR;
      curl().multi_socket_action(multi_.get(), evs[i].data.fd, flags, &running);
    }
    if (timer_due_ >= 0 && now >= timer_due_) {
      timer_due_ = -1;
      curl().multi_socket_action(multi_.get(), CURL_SOCKET_TIMEOUT, 0, &running);
    }
  }

  // Moves the transfer on and handles its end.
  void pump(int64_t now) {
    if (!in_flight_) return;
    drive(now);
    int left = 0;
    while (CURLMsg* msg = curl().multi_info_read(multi_.get(), &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      const CURLcode rc = msg->data.result;
      curl().multi_remove_handle(multi_.get(), easy_.get());
      in_flight_ = false;
      finished(rc, now);
    }
  }

  void finished(CURLcode rc, int64_t now) {
    long status = 0;
    curl().easy_getinfo(easy_.get(), CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK) {  // refused, reset, timed out: the collector may come back
      backoff(now, 0);
      return;
    }
    if (status >= 200 && status < 300) {
      checkPartialSuccess(now);
      sending_.clear();
      have_request_ = false;
      return;
    }
    if (status == 429 || status == 502 || status == 503 || status == 504) {
      curl_off_t wait_s = 0;  // Retry-After, seconds or an HTTP-date (curl parses both)
      curl().easy_getinfo(easy_.get(), CURLINFO_RETRY_AFTER, &wait_s);
      backoff(now, int64_t(std::min<curl_off_t>(wait_s, options_.max_retry_after.count())));
      return;
    }
    // Permanent (400 malformed, 401/403 credentials, 413 too large...): the
    // spec says not to retry. The records are counted in a dropped record.
    if (!permanent_reported_) {
      permanent_reported_ = true;
      std::fprintf(stderr,
                   "supervise: audit %s: HTTP %ld, not retried: %s dropped%s%s (later "
                   "rejections are only counted in dropped records)\n",
                   name_.c_str(), status, seqRange(sending_).c_str(), response_.empty() ? "" : ": ",
                   excerpt(response_).c_str());
    }
    lose(sending_);
    have_request_ = false;
  }

  void backoff(int64_t now, int64_t retry_after_s) {
    failed_at_ = now;
    if (retry_after_s > 0) {
      retry_after_ = true;
      retry_at_ = now + retry_after_s * 1000000000;
    } else {
      retry_after_ = false;
      const int64_t first = options_.first_backoff.count() * kMs;
      const int64_t cap = options_.max_backoff.count() * kMs;
      const int64_t base = attempts_ >= 30 ? cap : std::min(cap, first << attempts_);
      // Jitter in [base/2, base]: retries of many supervisors spread out.
      std::uniform_int_distribution<int64_t> jitter(base / 2, base);
      retry_at_ = now + jitter(rng_);
    }
    ++attempts_;
  }

  // A 2xx may still reject records (partialSuccess.rejectedLogRecords), and
  // cannot say which: the spec says not to retry. Say so, at most once a minute.
  void checkPartialSuccess(int64_t now) {
    if (response_.empty()) return;
    const auto j = nlohmann::json::parse(response_, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return;
    auto ps = j.find("partialSuccess");
    if (ps == j.end() || !ps->is_object()) return;
    int64_t rejected = 0;
    if (auto r = ps->find("rejectedLogRecords"); r != ps->end()) {
      if (r->is_number_integer()) rejected = r->get<int64_t>();
      if (r->is_string()) rejected = std::strtoll(r->get<std::string>().c_str(), nullptr, 10);
    }
    if (rejected <= 0) return;
    partial_rejected_ += uint64_t(rejected);
    if (warned_at_ && now - warned_at_ < kWarnEvery) return;
    warned_at_ = now;
    std::string msg;
    if (auto m = ps->find("errorMessage"); m != ps->end() && m->is_string())
      msg = m->get<std::string>();
    std::fprintf(stderr,
                 "supervise: audit %s: the collector rejected %llu log records in all (partial "
                 "success, it does not say which; not retried)%s%s\n",
                 name_.c_str(), static_cast<unsigned long long>(partial_rejected_),
                 msg.empty() ? "" : ": ", excerpt(msg).c_str());
  }

  static std::string excerpt(const std::string& s) {
    std::string out = s.substr(0, 200);
    for (char& c : out)
      if (c == '\n' || c == '\r') c = ' ';
    return out;
  }

  void complainOnce(const std::string& what) {
    if (complained_) return;
    complained_ = true;
    std::fprintf(stderr, "supervise: audit %s: %s\n", name_.c_str(), what.c_str());
  }

  // C callbacks: no exception may leave them (nothing here throws but the
  // string append, which the try keeps in).
  static size_t onBody(char* data, size_t size, size_t n, void* self_ptr) {
    auto* self = static_cast<OtlpTransport*>(self_ptr);
    const size_t len = size * n;
    try {
      if (self->response_.size() < kMaxResponse)
        self->response_.append(data, std::min(len, kMaxResponse - self->response_.size()));
    } catch (...) {
    }
    return len;
  }
  static int onTimer(CURLM*, long timeout_ms, void* self_ptr) {
    auto* self = static_cast<OtlpTransport*>(self_ptr);
    self->timer_due_ = timeout_ms < 0 ? -1 : monotonicNs() + int64_t(timeout_ms) * kMs;
    return 0;
  }
  static int onSocket(CURL*, curl_socket_t s, int what, void* self_ptr, void*) {
    auto* self = static_cast<OtlpTransport*>(self_ptr);
    const int ep = self->epoll_.get();
    if (what == CURL_POLL_REMOVE) {
      epoll_ctl(ep, EPOLL_CTL_DEL, s, nullptr);
      return 0;
    }
    epoll_event ev{};
    ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) | (what & CURL_POLL_OUT ? EPOLLOUT : 0u);
    ev.data.fd = s;
    if (epoll_ctl(ep, EPOLL_CTL_MOD, s, &ev) != 0) epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
    return 0;
  }

  OtlpOptions options_;
  std::string name_;
  Batch filling_, sending_;
  Batch lost_{OtlpResource{}};
  bool have_request_ = false;  // sending_ holds a request (in flight or waiting for a retry)
  bool in_flight_ = false;     // easy_ is in multi_
  int attempts_ = 0;
  int64_t retry_at_ = 0, failed_at_ = 0;
  int64_t timer_due_ = -1;    // CLOCK_MONOTONIC when curl wants CURL_SOCKET_TIMEOUT; -1: never
  bool retry_after_ = false;  // retry_at_ came from the collector's Retry-After
  std::string gz_;            // the request body as sent
  std::string response_;
  Gzip gzip_;
  UniqueFd epoll_;
  std::unique_ptr<curl_slist, SlistDeleter> headers_;
  std::unique_ptr<CURLM, MultiDeleter> multi_;  // declared before easy_: easy_ is cleaned up first
  std::unique_ptr<CURL, EasyDeleter> easy_;
  std::mt19937_64 rng_;
  bool permanent_reported_ = false, complained_ = false;
  uint64_t partial_rejected_ = 0;
  int64_t warned_at_ = 0;
};

}  // namespace

Result<std::unique_ptr<Transport>> openOtlpTransport(OtlpOptions options) {
  if (auto lib = curlApi(); !lib) return lib.error();
  // curl's URL parser: no thread, no global init needed.
  CURLU* u = curl().url();
  if (!u) return Error{ENOMEM, "curl_url"};
  const CURLUcode rc = curl().url_set(u, CURLUPART_URL, options.url.c_str(), 0);
  char* scheme = nullptr;
  char* host = nullptr;
  if (rc == CURLUE_OK) {
    curl().url_get(u, CURLUPART_SCHEME, &scheme, 0);
    curl().url_get(u, CURLUPART_HOST, &host, 0);
  }
  const std::string s = scheme ? scheme : "", h = host ? host : "";
  curl().free(scheme);
  curl().free(host);
  curl().url_cleanup(u);
  if (rc != CURLUE_OK || (s != "http" && s != "https") || h.empty())
    return Error{EINVAL, "otlp url " + options.url + ": want http(s)://HOST:PORT/v1/logs"};
  if (options.batch_records == 0) options.batch_records = 1;
  return std::unique_ptr<Transport>(new OtlpTransport(std::move(options)));
}

}  // namespace sv::supervisor::audit
