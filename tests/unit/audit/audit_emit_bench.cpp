// audit_emit_bench: cost of AuditLog::emit() for a typical file decision.
//
// Not a test: a small binary to run under `valgrind --tool=callgrind` (the
// instruction count per emit is the number we track) or plainly for events/s.
// Usage: audit_emit_bench [N] [PATH]   (N emits to PATH, default 100000 to
// /dev/null; PATH "none": no sink, as a session without audit output; PATH
// "kafka": a Kafka sink to librdkafka's in-process mock cluster, flushed
// every 256 emits as the loop would, the time including the final drain that
// waits for every acknowledgement); PATH http://HOST:PORT/v1/logs: an OTLP
// sink, e.g. to `otlp_receiver.py --no-check`, flushed every 64 emits, the
// time including close(), i.e. until the collector acknowledged the last batch).
// Prints events/s on stderr.
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
  const bool kafka = path == "kafka";
  const bool otlp = path.rfind("http", 0) == 0;
  std::unique_ptr<sv::test::MockKafka> mock;
  sv::Status st;
  if (kafka) {
    mock = std::make_unique<sv::test::MockKafka>("audit", 1);
    auto t = audit::openKafkaTransport(
        {.brokers = mock->bootstraps(), .topic = "audit", .key = info.session_id});
    st = t ? log.addSpooledSink(std::move(*t), "/var/tmp", 256u << 20) : sv::Status(t.error());
  } else if (otlp) {
    OtlpSinkOptions o;
    o.otlp.url = path;
    st = log.addOtlpSink(o);
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
    if ((kafka && i % 256 == 0) || (otlp && i % 64 == 0)) log.flush();
  }
  log.flush();
  if (kafka || otlp) log.close();
  clock_gettime(CLOCK_MONOTONIC, &t1);
  const double secs = double(t1.tv_sec - t0.tv_sec) + double(t1.tv_nsec - t0.tv_nsec) / 1e9;
  std::fprintf(stderr, "%ld events in %.3f s: %.0f events/s (dropped %llu)\n", n, secs,
               double(n) / secs, static_cast<unsigned long long>(log.counters().dropped));
  return 0;
}
