// OTLP/HTTP JSON bodies and the record scan: see otlp_encode.h.
#include "supervisor/audit/sinks/otlp_encode.h"

#include "supervisor/audit/json_writer.h"

namespace sv::supervisor::audit {
namespace {

constexpr int kMaxDepth = 64;  // deeper than any record we write; bounds the recursion

// Just enough JSON to find a few members: strings are returned raw (between
// the quotes, escapes left in), everything else is skipped.
class Scanner {
 public:
  explicit Scanner(std::string_view s) : s_(s) {}

  bool consume(char c) {
    ws();
    if (i_ >= s_.size() || s_[i_] != c) return false;
    ++i_;
    return true;
  }
  bool peek(char c) {
    ws();
    return i_ < s_.size() && s_[i_] == c;
  }
  // The raw text of a string; escaped: it holds a backslash sequence.
  bool string(std::string_view& out, bool& escaped) {
    if (!consume('"')) return false;
    const size_t start = i_;
    escaped = false;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '"') {
        out = s_.substr(start, i_ - start);
        ++i_;
        return true;
      }
      if (c == '\\') {
        escaped = true;
        i_ += 2;
        continue;
      }
      ++i_;
    }
    return false;
  }
  // An unsigned or negative integer (no fraction or exponent: else false).
  bool integer(int64_t& out) {
    ws();
    bool neg = false;
    if (i_ < s_.size() && s_[i_] == '-') {
      neg = true;
      ++i_;
    }
    const size_t start = i_;
    uint64_t v = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      if (v > (uint64_t(INT64_MAX) - 9) / 10) return false;
      v = v * 10 + uint64_t(s_[i_++] - '0');
    }
    if (i_ == start) return false;
    if (i_ < s_.size() && (s_[i_] == '.' || s_[i_] == 'e' || s_[i_] == 'E')) return false;
    out = neg ? -int64_t(v) : int64_t(v);
    return true;
  }
  bool skipValue(int depth = 0) {
    if (depth > kMaxDepth) return false;
    ws();
    if (i_ >= s_.size()) return false;
    const char c = s_[i_];
    if (c == '"') {
      std::string_view unused;
      bool esc;
      return string(unused, esc);
    }
    if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++i_;
      if (consume(close)) return true;
      do {
        if (c == '{') {
          std::string_view k;
          bool esc;
          if (!string(k, esc) || !consume(':')) return false;
        }
        if (!skipValue(depth + 1)) return false;
      } while (consume(','));
      return consume(close);
    }
    // true, false, null, numbers: up to the next delimiter.
    const size_t start = i_;
    while (i_ < s_.size() && s_[i_] != ',' && s_[i_] != '}' && s_[i_] != ']' && s_[i_] != ' ') ++i_;
    return i_ > start;
  }

 private:
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  std::string_view s_;
  size_t i_ = 0;
};

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
int64_t daysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = unsigned(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + int64_t(doe) - 719468;
}

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
  const int64_t days = daysFromCivil(y, unsigned(mo), unsigned(d));
  return ((days * 24 + h) * 60 + mi) * 60 * 1000000000 + s * 1000000000 + frac;
}

// The members of a nested object worth reading: rule.id, process.pid, and the
// seq of OCSF (metadata.sequence) and ECS (event.sequence).
bool scanNested(Scanner& sc, std::string_view outer, RecordFields& f) {
  if (!sc.consume('{')) return false;
  if (sc.consume('}')) return true;
  do {
    std::string_view key;
    bool esc;
    if (!sc.string(key, esc) || !sc.consume(':')) return false;
    int64_t n;
    if (outer == "rule" && key == "id" && sc.peek('"')) {
      std::string_view v;
      if (!sc.string(v, esc)) return false;
      if (!esc) f.rule_id = v;
    } else if (outer == "process" && key == "pid" && !sc.peek('"') && !sc.peek('{') &&
               !sc.peek('[') && !sc.peek('n')) {
      if (!sc.integer(n)) return false;
      f.pid = n;
    } else if ((outer == "metadata" || outer == "event") && key == "sequence" && !sc.peek('"') &&
               !sc.peek('{') && !sc.peek('[') && !sc.peek('n')) {
      if (!sc.integer(n)) return false;
      if (n > 0) f.seq = uint64_t(n);
    } else if (!sc.skipValue(1)) {
      return false;
    }
  } while (sc.consume(','));
  return sc.consume('}');
}

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
  RecordFields f;
  Scanner sc(record);
  if (!sc.consume('{') || sc.consume('}')) return f;
  do {
    std::string_view key;
    bool esc;
    if (!sc.string(key, esc) || !sc.consume(':')) return f;
    if (sc.peek('"')) {
      std::string_view v;
      if (!sc.string(v, esc)) return f;
      if (esc) continue;  // ids and names we route on have no escapes; the body keeps it
      if (key == "time" || key == "@timestamp")
        f.time_ns = parseRfc3339(v);
      else if (key == "event_id")
        f.event_id = v;
      else if (key == "session_id")
        f.session_id = v;
      else if (key == "category")
        f.category = v;
      else if (key == "operation")
        f.operation = v;
      else if (key == "decision")
        f.decision = v;
      else if (key == "enforced_by")
        f.enforced_by = v;
    } else if (sc.peek('{') &&
               (key == "rule" || key == "process" || key == "metadata" || key == "event")) {
      if (!scanNested(sc, key, f)) return f;
    } else if (key == "seq" && !sc.peek('{') && !sc.peek('[') && !sc.peek('n')) {
      int64_t n;
      if (!sc.integer(n)) return f;
      if (n > 0) f.seq = uint64_t(n);
    } else if (key == "time" && !sc.peek('{') && !sc.peek('[') && !sc.peek('n')) {
      int64_t ms;  // OCSF: milliseconds since the epoch
      if (!sc.integer(ms)) return f;
      if (ms > 0 && ms < INT64_MAX / 1000000) f.time_ns = ms * 1000000;
    } else if (!sc.skipValue()) {
      return f;
    }
  } while (sc.consume(','));
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
