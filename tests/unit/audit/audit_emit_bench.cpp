// audit_emit_bench: cost of AuditLog::emit() for a typical file decision.
//
// Not a test: a small binary to run under `valgrind --tool=callgrind` (the
// instruction count per emit is the number we track) or plainly for events/s.
// Usage: audit_emit_bench [N] [SINK]   (N emits, default 100000, to SINK):
//   a PATH (default /dev/null; a file on tmpfs is the baseline), "none" (no
//   sink, as a session without audit output), udp|tcp://HOST:PORT (syslog),
//   "kafka" (librdkafka's mock cluster in this process) or kafka:BOOTSTRAPS
//   (topic "audit"), http://HOST:PORT/v1/logs (OTLP, e.g. to
//   `otlp_receiver.py --no-check`). Network sinks are flushed every 64 emits
//   as the loop would. The time includes close(): until the last event was
//   written, or acknowledged. Prints events/s on stderr; tools/sink-bench
//   runs every sink in one run.
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "supervisor/audit/audit_log.h"
#include "supervisor/audit/sinks/kafka_transport.h"
#include "tests/unit/audit/kafka_mock.h"
#include "tests/unit/audit/audit_samples.h"

using namespace sv::supervisor;

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 100000;
  const std::string path = argc > 2 ? argv[2] : "/dev/null";
  SessionInfo info;
  info.session_id = "0123456789abcdef0123456789abcdef";
  info.host = "build-host";
  info.policy_name = "code-sandbox";
  info.agent_version = "0.1.0";
  AuditLog log(info);
  const bool kafka = path.rfind("kafka", 0) == 0;
  const bool otlp = path.rfind("http", 0) == 0;
  const bool syslog = path.rfind("udp://", 0) == 0 || path.rfind("tcp://", 0) == 0;
  std::unique_ptr<sv::test::MockKafka> mock;
  sv::Status st;
  if (kafka) {
    std::string brokers = path.size() > 6 ? path.substr(6) : "";
    if (brokers.empty()) {
      mock = std::make_unique<sv::test::MockKafka>("audit", 1);
      brokers = mock->bootstraps();
    }
    auto t = audit::openKafkaTransport(
        {.brokers = brokers, .topic = "audit", .key = info.session_id});
    st = t ? log.addSpooledSink(std::move(*t), "/var/tmp", 256u << 20) : sv::Status(t.error());
  } else if (otlp) {
    OtlpSinkOptions o;
    o.otlp.url = path;
    st = log.addOtlpSink(o);
  } else if (syslog) {
    st = log.addSyslogSink(path);
  } else if (path != "none") {
    st = log.addFileSink(path);
  }
  if (!st) {
    std::fprintf(stderr, "%s\n", st.error().message().c_str());
    return 1;
  }
  const ProcessInfo p = samples::nodeProcess();
  const AuditEvent ev = samples::envWriteDenied(&p);
  timespec t0{}, t1{};
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (long i = 0; i < n; ++i) {
    log.emit(ev);
    if (i % 64 == 0 && (kafka || otlp || syslog)) log.flush();
  }
  log.close();
  clock_gettime(CLOCK_MONOTONIC, &t1);
  const double secs = double(t1.tv_sec - t0.tv_sec) + double(t1.tv_nsec - t0.tv_nsec) / 1e9;
  std::fprintf(stderr, "%ld events in %.3f s: %.0f events/s (dropped %llu)\n", n, secs,
               double(n) / secs, static_cast<unsigned long long>(log.counters().dropped));
  return 0;
}
