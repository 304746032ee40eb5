// OTLP/HTTP JSON bodies and the record scan: see otlp_encode.h.
#include "supervisor/audit/sinks/otlp_encode.h"

#include <climits>
#include <cstdint>
#include <string>

#include "common/civil_date.h"
#include "common/rapidjson_reader.h"
#include "supervisor/audit/json_writer.h"

namespace sv::supervisor::audit {
namespace {

// YYYY-MM-DDTHH:MM:SS[.fraction]Z → ns since the epoch; 0 if it is not that.
int64_t parseRfc3339(std::string_view t) {
  auto digits = [&t](size_t at, size_t n, int64_t& out) {
    if (at + n > t.size()) return false;
    out = 0;
    for (size_t k = at; k < at + n; ++k) {
      if (t[k] < '0' || t[k] > '9') return false;
      out = out * 10 + (t[k] - '0');
    }
    return true;
  };
  int64_t y, mo, d, h, mi, s;
  if (!digits(0, 4, y) || t.size() < 20 || t[4] != '-' || !digits(5, 2, mo) || t[7] != '-' ||
      !digits(8, 2, d) || (t[10] != 'T' && t[10] != 't') || !digits(11, 2, h) || t[13] != ':' ||
      !digits(14, 2, mi) || t[16] != ':' || !digits(17, 2, s))
    return 0;
  // int64 nanoseconds end in April 2262 (found by the fuzzer: year 4052 overflowed).
  if (y < 1970 || y > 2261 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60)
    return 0;
  size_t i = 19;
  int64_t frac = 0;
  if (i < t.size() && t[i] == '.') {
    int n = 0;
    for (++i; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i, ++n)
      if (n < 9) frac = frac * 10 + (t[i] - '0');
    if (n == 0) return 0;
    for (; n < 9; ++n) frac *= 10;
  }
  if (i + 1 != t.size() || (t[i] != 'Z' && t[i] != 'z')) return 0;
  const int64_t days = sv::daysFromCivil(y, unsigned(mo), unsigned(d));
  return ((days * 24 + h) * 60 + mi) * 60 * 1000000000 + s * 1000000000 + frac;
}

// The members a LogRecord takes, read by RapidJSON's SAX reader: top-level
// ones, and rule.id, process.pid and the seq of OCSF (metadata.sequence) and
// ECS (event.sequence) one level down. Everything else is parsed and passed by.
class FieldsHandler : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, FieldsHandler> {
 public:
  explicit FieldsHandler(RecordFields& f) : f_(f) {}

  bool StartObject() {
    if (depth_ == 0 && started_) return false;  // one object per record
    started_ = true;
    outer_ = depth_ == 1 ? key_ : std::string_view();
    ++depth_;
    return true;
  }
  bool EndObject(rapidjson::SizeType) { return end(); }
  bool StartArray() {
    if (depth_ == 0) return false;  // a record is an object
    if (depth_ == 1) outer_ = {};
    ++depth_;
    return true;
  }
  bool EndArray(rapidjson::SizeType) { return end(); }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    key_ = std::string_view(s, n);
    return true;
  }
  bool String(const char* s, rapidjson::SizeType n, bool) {
    const std::string_view v(s, n);
    if (depth_ == 1) {
      if (key_ == "time" || key_ == "@timestamp") f_.time_ns = parseRfc3339(v);
      else if (key_ == "event_id") f_.event_id = v;
      else if (key_ == "session_id") f_.session_id = v;
      else if (key_ == "category") f_.category = v;
      else if (key_ == "operation") f_.operation = v;
      else if (key_ == "decision") f_.decision = v;
      else if (key_ == "enforced_by") f_.enforced_by = v;
    } else if (nested("rule", "id")) {
      f_.rule_id = v;
    }
    return depth_ > 0;
  }
  bool Int(int n) { return integer(n); }
  bool Uint(unsigned n) { return integer(n); }
  bool Int64(int64_t n) { return integer(n); }
  bool Uint64(uint64_t n) { return integer(n <= uint64_t(INT64_MAX) ? int64_t(n) : -1); }
  bool Default() { return depth_ > 0; }  // null, booleans, doubles: nothing we read

 private:
  bool end() {
    if (--depth_ == 1) outer_ = {};
    return true;
  }
  bool nested(std::string_view outer, std::string_view key) const {
    return depth_ == 2 && outer_ == outer && key_ == key;
  }
  bool integer(int64_t n) {
    if (depth_ == 1 && key_ == "seq" && n > 0) f_.seq = uint64_t(n);
    if (depth_ == 1 && key_ == "time" && n > 0 && n < INT64_MAX / 1000000)
      f_.time_ns = n * 1000000;  // OCSF: milliseconds since the epoch
    if (nested("process", "pid")) f_.pid = n;
    if ((nested("metadata", "sequence") || nested("event", "sequence")) && n > 0)
      f_.seq = uint64_t(n);
    return depth_ > 0;
  }

  RecordFields& f_;
  int depth_ = 0;
  bool started_ = false;
  std::string_view key_;    // the last key read
  std::string_view outer_;  // the top-level key whose object is open (depth 2)
};

// One KeyValue; `kind` the AnyValue member ("stringValue", or "intValue",
// whose int64 the JSON mapping writes as a decimal string).
void attribute(JsonWriter& w, std::string_view key, std::string_view value,
               std::string_view kind = "stringValue") {
  w.beginObject();
  w.member("key", key);
  w.key("value");
  w.beginObject();
  w.member(kind, value);
  w.endObject();
  w.endObject();
}

void intAttribute(JsonWriter& w, std::string_view key, int64_t value) {
  attribute(w, key, std::to_string(value), "intValue");
}

}  // namespace

RecordFields scanRecord(std::string_view record) {
  // In situ: the strings are unescaped in a per-thread copy of the record and
  // the fields are views into it (no allocation once the copy is warm).
  thread_local std::string copy;
  copy.assign(record);
  RecordFields f;
  FieldsHandler handler(f);
  rapidjson::InsituStringStream in(copy.data());
  rapidjson::Reader reader;
  // Iterative: no recursion however deep the record; invalid UTF-8 stops it.
  // On an error, what was read before it stays.
  reader.Parse<rapidjson::kParseInsituFlag | rapidjson::kParseIterativeFlag |
               rapidjson::kParseValidateEncodingFlag | rapidjson::kParseStopWhenDoneFlag>(in,
                                                                                          handler);
  return f;
}

Severity severityOf(const RecordFields& f) {
  if (f.decision == "deny" || f.operation == "dropped") return {13, "WARN"};
  if (f.decision == "would-deny" || f.category == "session") return {10, "INFO2"};
  return {9, "INFO"};
}

OtlpBatchEncoder::OtlpBatchEncoder(const OtlpResource& resource) {
  JsonWriter w(prefix_);
  w.beginObject();
  w.key("resourceLogs");
  w.beginArray();
  w.beginObject();
  w.key("resource");
  w.beginObject();
  w.key("attributes");
  w.beginArray();
  attribute(w, "host.name", resource.host_name);
  attribute(w, "service.name", "supervise");
  if (!resource.service_version.empty()) attribute(w, "service.version", resource.service_version);
  if (!resource.session_id.empty()) attribute(w, "service.instance.id", resource.session_id);
  w.endArray();
  w.endObject();
  w.key("scopeLogs");
  w.beginArray();
  w.beginObject();
  w.key("scope");
  w.beginObject();
  w.member("name", "supervise");
  if (!resource.service_version.empty()) w.member("version", resource.service_version);
  w.endObject();
  w.key("logRecords");
  // JsonWriter tracks commas per level; the records are joined by hand.
  prefix_ += '[';
  suffix_ = "]}]}]}";
}

void OtlpBatchEncoder::append(std::string_view record, int64_t observed_ns) {
  const RecordFields f = scanRecord(record);
  const Severity sev = severityOf(f);
  if (count_++) log_records_ += ',';
  JsonWriter w(log_records_);
  w.beginObject();
  // No time in the record (not an event we know): the time we saw it.
  w.member("timeUnixNano", std::to_string(f.time_ns > 0 ? f.time_ns : observed_ns));
  w.member("observedTimeUnixNano", std::to_string(observed_ns));
  w.memberNumber("severityNumber", sev.number);
  w.member("severityText", sev.text);
  w.key("body");
  w.beginObject();
  w.member("stringValue", record);
  w.endObject();
  w.key("attributes");
  w.beginArray();
  if (!f.event_id.empty()) attribute(w, "log.record.uid", f.event_id);
  if (!f.session_id.empty()) attribute(w, "supervise.session_id", f.session_id);
  if (f.seq) intAttribute(w, "supervise.seq", int64_t(f.seq));
  if (!f.category.empty()) attribute(w, "supervise.category", f.category);
  if (!f.operation.empty()) attribute(w, "supervise.operation", f.operation);
  if (!f.decision.empty()) attribute(w, "supervise.decision", f.decision);
  if (!f.rule_id.empty()) attribute(w, "supervise.rule_id", f.rule_id);
  if (!f.enforced_by.empty()) attribute(w, "supervise.enforced_by", f.enforced_by);
  if (f.pid >= 0) intAttribute(w, "process.pid", f.pid);
  w.endArray();
  w.endObject();
}

void OtlpBatchEncoder::body(std::string& out) const {
  out.clear();
  out.reserve(prefix_.size() + log_records_.size() + suffix_.size());
  out += prefix_;
  out += log_records_;
  out += suffix_;
}

void OtlpBatchEncoder::clear() {
  log_records_.clear();
  count_ = 0;
}

}  // namespace sv::supervisor::audit
