// OTLP/HTTP JSON request bodies for the otlp sink (otlp_transport.h).
//
// One ExportLogsServiceRequest per batch: one ResourceLogs (host.name,
// service.name "supervise", service.version, service.instance.id = the session
// id), one ScopeLogs (scope "supervise"), one LogRecord per audit record, in
// the JSON mapping of opentelemetry/proto/logs/v1/logs.proto: lowerCamelCase
// names, 64-bit integers as decimal strings, enums as integers. The body is
// the record itself as a stringValue, byte for byte what a file sink writes,
// so `supervise verify`/`explain` and a SIEM's JSON parser read it unchanged;
// the attributes a pipeline routes on are read from it with RapidJSON's SAX
// reader (scanRecord), which keeps nothing else. docs/audit-events.md, "OTLP", has the
// mapping table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sv::supervisor::audit {

// What the LogRecord takes from a native audit record. Views into a
// per-thread copy of the record, valid until the next scanRecord() on the
// thread; empty / 0 when absent (OCSF and ECS records: only seq and the body).
struct RecordFields {
  uint64_t seq = 0;
  int64_t time_ns = 0;  // "time", RFC 3339 with 9 digits; 0 when absent or malformed
  std::string_view event_id, session_id, category, operation, decision, rule_id, enforced_by;
  int64_t pid = -1;
};

// Top-level members and rule.id / process.pid of one JSON object line, JSON
// escapes decoded. Never throws; malformed input yields what was read before
// the fault (fuzzed: tests/fuzz/otlp_fuzz.cpp).
RecordFields scanRecord(std::string_view record);

// SeverityNumber (logs.proto) and its text: deny WARN (13); would-deny and
// session records INFO2 (10, the syslog sink's "notice"); a dropped record
// WARN; everything else INFO (9).
struct Severity {
  int number;
  const char* text;
};
Severity severityOf(const RecordFields& f);

struct OtlpResource {
  std::string host_name;
  std::string service_version;
  std::string session_id;
};

// Builds one request body record by record (append() as records arrive, so a
// batch is encoded while it fills), then body() wraps them.
class OtlpBatchEncoder {
 public:
  explicit OtlpBatchEncoder(const OtlpResource& resource);
  // `record` without its '\n'. observed_ns: CLOCK_REALTIME when the sink took it.
  void append(std::string_view record, int64_t observed_ns);
  size_t records() const { return count_; }
  size_t bytes() const { return log_records_.size(); }
  // The whole ExportLogsServiceRequest.
  void body(std::string& out) const;
  void clear();

 private:
  std::string prefix_, suffix_;
  std::string log_records_;  // LogRecord objects, comma separated
  size_t count_ = 0;
};

}  // namespace sv::supervisor::audit
