// audit_emit_bench: cost of AuditLog::emit() for a typical file decision.
//
// Not a test: a small binary to run under `valgrind --tool=callgrind` (the
// instruction count per emit is the number we track) or plainly for events/s.
// Usage: audit_emit_bench [N] [PATH]   (N emits to PATH, default 100000 to
// /dev/null; PATH "none": no sink, as a session without audit output; PATH
// http://HOST:PORT/v1/logs: an OTLP sink, e.g. to `otlp_receiver.py
// --no-check`, flushed every 64 emits as the loop would, and the time
// includes close(), i.e. until the collector acknowledged the last batch).
// Prints events/s on stderr.
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "supervisor/audit/audit_log.h"
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
  const bool otlp = path.rfind("http", 0) == 0;
  OtlpSinkOptions o;
  o.otlp.url = path;
  if (auto st = path == "none" ? sv::Status{} : otlp ? log.addOtlpSink(o) : log.addFileSink(path);
      !st) {
    std::fprintf(stderr, "%s\n", st.error().message().c_str());
    return 1;
  }
  const ProcessInfo p = samples::nodeProcess();
  const AuditEvent ev = samples::envWriteDenied(&p);
  timespec t0{}, t1{};
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (long i = 0; i < n; ++i) {
    log.emit(ev);
    if (otlp && i % 64 == 0) log.flush();
  }
  log.flush();
  if (otlp) log.close();
  clock_gettime(CLOCK_MONOTONIC, &t1);
  const double secs = double(t1.tv_sec - t0.tv_sec) + double(t1.tv_nsec - t0.tv_nsec) / 1e9;
  std::fprintf(stderr, "%ld events in %.3f s: %.0f events/s (dropped %llu)\n", n, secs,
               double(n) / secs, static_cast<unsigned long long>(log.counters().dropped));
  return 0;
}
