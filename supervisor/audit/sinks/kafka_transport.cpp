// Kafka transport over librdkafka: see kafka_transport.h.
//
// Threads: kafka().create() starts librdkafka's threads (a main thread and one
// per broker). The session opens the AuditLog (openAudit) after the command
// was cloned (launchCommand: CLONE_VM|CLONE_VFORK, raw syscalls only until
// execve, and its fd table is a copy taken at clone time, so it never holds a
// broker socket) and before the watchdog is cloned (CLONE_VM or fork, raw
// syscalls only, and it closes every fd above 3 first). Neither child runs
// code that a lock held by a librdkafka thread could block, so creating the
// producer here, where a bad option can still fail the start (exit 125), is
// safe. The supervisor installs no seccomp filter or Landlock on itself; the
// command's confinement is applied in its child only. librdkafka blocks every
// signal in its threads, so SIGCHLD/SIGHUP still reach the loop.
// Capabilities are per thread and lowerOwnCapabilities() runs later, on the
// main thread only: each librdkafka thread drops every capability as it
// starts (an on_thread_start interceptor), since it only talks to brokers.
#include "supervisor/audit/sinks/kafka_transport.h"

#include <errno.h>
#include <fcntl.h>
#include <librdkafka/rdkafka.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <syslog.h>
#include <unistd.h>

#include <cstdio>
#include <set>
#include <utility>
#include <string_view>
#include <vector>

#include "common/unique_fd.h"
#include "supervisor/audit/sinks/rdkafka_api.h"

namespace sv::supervisor::audit {
namespace {

// librdkafka's functions: openKafkaTransport() loaded them before any use.
const Rdkafka& kafka() { return *rdkafka().value(); }

// A thread that only talks to brokers needs no capability: none, for good
// (effective, permitted and inheritable cleared; capset affects this thread).
rd_kafka_resp_err_t dropThreadCapabilities(rd_kafka_t*, rd_kafka_thread_type_t, const char*,
                                           void*) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct none[2] = {};
  return ::syscall(SYS_capset, &header, none) == 0 ? RD_KAFKA_RESP_ERR_NO_ERROR
                                                   : RD_KAFKA_RESP_ERR__FAIL;
}

rd_kafka_resp_err_t addThreadInterceptor(rd_kafka_t* rk, const rd_kafka_conf_t*, void*, char*,
                                         size_t) {
  return kafka().interceptor_add_on_thread_start(rk, "supervise-caps", &dropThreadCapabilities,
                                                  nullptr);
}

struct ConfDeleter {
  void operator()(rd_kafka_conf_t* c) const { kafka().conf_destroy(c); }
};
struct KafkaDeleter {
  void operator()(rd_kafka_t* rk) const { kafka().destroy(rk); }
};
struct TopicDeleter {
  void operator()(rd_kafka_topic_t* t) const { kafka().topic_destroy(t); }
};
struct QueueDeleter {
  void operator()(rd_kafka_queue_t* q) const { kafka().queue_destroy(q); }
};
using ConfPtr = std::unique_ptr<rd_kafka_conf_t, ConfDeleter>;

// How long abandon() serves the delivery reports of what it purged. Purged
// messages are reported at once; this only bounds a librdkafka that does not.
constexpr int kPurgeReportMs = 2000;

// The producer's defaults (kafka_transport.h says why each); the sink's
// options come after them.
constexpr std::pair<const char*, const char*> kDefaults[] = {
    {"client.id", "supervise"},
    {"acks", "all"},
    {"enable.idempotence", "true"},
    {"compression.type", "lz4"},  // Debian's build has lz4, zstd, snappy, gzip
    {"linger.ms", "10"},
    {"message.timeout.ms", "0"},
    {"queue.buffering.max.messages", "10000"},
    {"queue.buffering.max.kbytes", "16384"},
    {"reconnect.backoff.max.ms", "5000"},  // as the syslog transport's backoff
};

void toStderr(const std::string& line) { std::fprintf(stderr, "supervise: audit: %s\n", line.c_str()); }

class KafkaTransport : public Transport {
 public:
  explicit KafkaTransport(KafkaOptions options)
      : options_(std::move(options)), name_("kafka:" + options_.brokers + "/" + options_.topic) {
    if (!options_.report) options_.report = toStderr;
  }

  ~KafkaTransport() override {
    if (!rk_) return;
    // Normally the AuditLog drained us; anything left is given up on so
    // kafka().destroy() does not wait for a broker that is away.
    kafka().purge(rk_.get(), RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    queue_.reset();  // librdkafka wants queue and topic handles back before kafka().destroy()
    topic_.reset();
    rk_.reset();
  }

  Status init() {
    char err[512];
    ConfPtr conf(kafka().conf_new());
    auto set = [&](const std::string& name, const std::string& value) -> Status {
      if (kafka().conf_set(conf.get(), name.c_str(), value.c_str(), err, sizeof err) !=
          RD_KAFKA_CONF_OK)
        // Not the value: it may be a password (sasl.password, ssl.key.password).
        return Error{EINVAL, name_ + ": option " + name + ": " + err};
      return {};
    };
    SV_TRY(set("bootstrap.servers", options_.brokers));
    for (const auto& [name, value] : kDefaults) SV_TRY(set(name, value));
    for (const auto& [name, value] : options_.properties) SV_TRY(set(name, value));
    debug_ = options_.properties.count("debug") != 0;

    kafka().conf_set_opaque(conf.get(), this);
    kafka().conf_set_dr_msg_cb(conf.get(), &KafkaTransport::onDelivery);
    kafka().conf_set_error_cb(conf.get(), &KafkaTransport::onError);
    kafka().conf_set_log_cb(conf.get(), &KafkaTransport::onLog);
    // Logs are served by kafka().poll() too (one thread for every callback).
    SV_TRY(set("log.queue", "true"));
    if (kafka().conf_interceptor_add_on_new(conf.get(), "supervise-caps", &addThreadInterceptor,
                                             nullptr) != RD_KAFKA_RESP_ERR_NO_ERROR)
      return Error{EINVAL, name_ + ": cannot add the thread interceptor"};

    // The loop and the final drain wait on this pipe: librdkafka writes a
    // byte when its main queue (delivery reports, errors) becomes non-empty.
    int fds[2];
    if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return errnoError(name_ + ": pipe");
    wake_read_ = UniqueFd(fds[0]);
    wake_write_ = UniqueFd(fds[1]);

    // kafka().create() takes the conf only on success.
    rk_.reset(kafka().create(RD_KAFKA_PRODUCER, conf.get(), err, sizeof err));
    if (!rk_) return Error{EINVAL, name_ + ": " + err};
    conf.release();
    kafka().set_log_queue(rk_.get(), nullptr);  // nullptr: the main queue
    queue_.reset(kafka().queue_get_main(rk_.get()));
    kafka().queue_io_event_enable(queue_.get(), wake_write_.get(), "1", 1);
    topic_.reset(kafka().topic_new(rk_.get(), options_.topic.c_str(), nullptr));
    if (!topic_)
      return Error{EINVAL, name_ + ": topic " + options_.topic + ": " +
                               kafka().err2str(kafka().last_error())};
    return {};
  }

  const std::string& name() const override { return name_; }
  // A fatal producer error (idempotence state lost) makes every later
  // produce fail: the next write() errors and the sink fails for good.
  bool recoverable() const override { return !fatal_; }
  bool datagram() const override { return true; }
  bool loopOnly() const override { return true; }
  int pollFd() const override { return wake_read_.get(); }
  short pollEvents() const override { return POLLIN; }
  size_t inFlight() const override { return in_flight_; }

  bool up(int64_t /*now_ns*/, bool /*eager*/) override {
    char buf[64];
    while (::read(wake_read_.get(), buf, sizeof buf) > 0) {
    }
    kafka().poll(rk_.get(), 0);
    return true;  // librdkafka connects and retries on its own; write() says when it is full
  }

  Result<size_t> write(const char* data, size_t len) override {
    size_t n = len;
    if (n > 0 && data[n - 1] == '\n') --n;
    const rd_kafka_resp_err_t err = kafka().producev(
        rk_.get(), RD_KAFKA_V_RKT(topic_.get()), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_VALUE(const_cast<char*>(data), n),
        RD_KAFKA_V_KEY(options_.key.data(), options_.key.size()), RD_KAFKA_V_END);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      ++in_flight_;
      return len;
    }
    if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) return size_t{0};  // the AuditLog keeps it
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
      noteFatal();
      return Error{EIO, name_ + ": " + fatal_reason_};
    }
    // This record can never go (too large for the broker, unknown topic):
    // taken, and handed back as lost so the loss is counted, not retried forever.
    lost_.emplace_back(data, n);
    reportOnce(err, kafka().err2str(err));
    return len;
  }

  void abandon() override {
    if (!rk_) return;
    kafka().purge(rk_.get(), RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    // The purged messages come back through onDelivery() as lost.
    for (int waited = 0; in_flight_ > 0 && waited < kPurgeReportMs; waited += 10)
      kafka().poll(rk_.get(), 10);
  }

  void takeLost(const std::function<void(std::string_view record)>& lost) override {
    for (const auto& r : lost_) lost(r);
    lost_.clear();
  }

 private:
  // C callbacks, run inside kafka().poll() on our thread: nothing may throw
  // out of them (an allocation failure there is not worth a std::terminate).
  static void onDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
    auto* self = static_cast<KafkaTransport*>(opaque);
    if (self->in_flight_ > 0) --self->in_flight_;
    try {
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (self->unreachable_) {
          self->unreachable_ = false;
          self->options_.report(self->name_ + ": reachable again");
        }
        return;
      }
      // With message.timeout.ms=0 librdkafka retries retriable errors
      // forever (idempotence keeps that duplicate-free), so an error here is
      // final: rejected, purged by abandon(), or timed out under a timeout
      // the options set. Possibly persisted or not, it counts as lost.
      self->lost_.emplace_back(static_cast<const char*>(m->payload), m->len);
      if (m->err != RD_KAFKA_RESP_ERR__PURGE_QUEUE && m->err != RD_KAFKA_RESP_ERR__PURGE_INFLIGHT)
        self->reportOnce(m->err, kafka().err2str(m->err));
    } catch (...) {
    }
  }

  static void onError(rd_kafka_t*, int err, const char* reason, void* opaque) {
    auto* self = static_cast<KafkaTransport*>(opaque);
    try {
      const auto code = static_cast<rd_kafka_resp_err_t>(err);
      if (code == RD_KAFKA_RESP_ERR__FATAL) {
        self->noteFatal();
        return;
      }
      // One line when the brokers go away, one when they are back: a broker
      // that is down produces these errors at every reconnect attempt.
      if (code == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN || code == RD_KAFKA_RESP_ERR__RESOLVE ||
          code == RD_KAFKA_RESP_ERR__SSL || code == RD_KAFKA_RESP_ERR__AUTHENTICATION) {
        if (!self->unreachable_) {
          self->unreachable_ = true;
          self->options_.report(self->name_ + ": unreachable (" + reason +
                                "); events wait in memory and in the spool");
        }
        return;
      }
      if (code == RD_KAFKA_RESP_ERR__TRANSPORT) return;  // one broker of several; covered above
      self->reportOnce(code, reason);
    } catch (...) {
    }
  }

  static void onLog(const rd_kafka_t* rk, int level, const char* fac, const char* buf) {
    auto* self = static_cast<KafkaTransport*>(kafka().opaque(rk));
    if (self && self->debug_) std::fprintf(stderr, "supervise: audit: kafka %d %s: %s\n", level, fac, buf);
  }

  void noteFatal() {
    if (fatal_) return;
    fatal_ = true;
    char reason[512] = "fatal error";
    kafka().fatal_error(rk_.get(), reason, sizeof reason);
    fatal_reason_ = reason;
    options_.report(name_ + ": " + fatal_reason_ + "; the sink stops");
  }

  // Other errors: the first of each kind, so a persistent one is seen once.
  void reportOnce(rd_kafka_resp_err_t code, const char* what) {
    if (reported_.insert(code).second) options_.report(name_ + ": " + what);
  }

  KafkaOptions options_;
  std::string name_;
  std::unique_ptr<rd_kafka_t, KafkaDeleter> rk_;
  std::unique_ptr<rd_kafka_queue_t, QueueDeleter> queue_;
  std::unique_ptr<rd_kafka_topic_t, TopicDeleter> topic_;
  UniqueFd wake_read_, wake_write_;
  size_t in_flight_ = 0;
  std::vector<std::string> lost_;
  bool unreachable_ = false;
  bool fatal_ = false;
  bool debug_ = false;
  std::string fatal_reason_;
  std::set<int> reported_;
};

}  // namespace

Result<std::unique_ptr<Transport>> openKafkaTransport(KafkaOptions options) {
  if (auto lib = rdkafka(); !lib) return lib.error();
  auto t = std::make_unique<KafkaTransport>(std::move(options));
  SV_TRY(t->init());
  return std::unique_ptr<Transport>(std::move(t));
}

}  // namespace sv::supervisor::audit
