// decodeLine(): the native, OCSF and ECS shapes of one audit record
// (docs/audit-events.md, "Other formats") into one Record. A line is
// attacker-influenced (paths, argv): every member is checked for its type,
// and a wrong type reads as absent, never as an error of the whole report.
// Each line is parsed by simdjson's DOM parser (fully validated, UTF-8
// included), one parser reused across lines so that a line allocates
// nothing; the members read here are looked up in its tape and copied into
// the Record, nothing else is.
#include "supervisor/report/record.h"

#include <simdjson.h>

#include <cstring>
#include <initializer_list>
#include <memory>

#include "supervisor/report/reader.h"

namespace sv::report {
namespace {

using simdjson::dom::element;
using Path = std::initializer_list<std::string_view>;

// s->clear(), keeping its memory for the next line only when that is small:
// one hostile line of huge strings must not leave megabytes held per field.
constexpr size_t kKeep = 64 << 10;
void clearForReuse(std::string* s) {
  if (s->capacity() > kKeep)
    std::string().swap(*s);
  else
    s->clear();
}

// Zero pages, only ever read: sizing a parser with them (below) takes no
// memory.
char zeros[kMaxLine + simdjson::SIMDJSON_PADDING];

// One simdjson parser and the padded copy of the line it reads, both kept
// across lines. simdjson reads up to SIMDJSON_PADDING bytes past a
// document's end; a line is a view into the reader's buffer, so it is copied
// (a memcpy of ~1 KB) rather than trusted to have them. Two sizes: kKeep
// bytes for the common line, and for a longer one kMaxLine at once (the
// reader's cap, also the parser's max capacity), untouched memory until a
// line uses it. The next short line gives that back: simdjson never shrinks
// a parser, so a fresh one replaces it. Growing in one step also keeps the
// allocator from piling up the intermediate sizes a line-by-line growth
// would leave (tools/report-trail-hostile's trail: 85 MB peak RSS that way,
// 64 MB in one step).
class LineParser {
 public:
  LineParser() { resize(kKeep); }

  simdjson::simdjson_result<element> parse(std::string_view line) {
    if (line.size() > capacity_)
      resize(kMaxLine);
    else if (line.size() <= kKeep && capacity_ > kKeep)
      resize(kKeep);
    std::memcpy(buffer_.get(), line.data(), line.size());
    std::memset(buffer_.get() + line.size(), ' ', simdjson::SIMDJSON_PADDING);
    return parser_.parse(simdjson::padded_string_view(buffer_.get(), line.size(),
                                                      capacity_ + simdjson::SIMDJSON_PADDING));
  }

 private:
  void resize(size_t capacity) {
    parser_ = simdjson::dom::parser(kMaxLine);
    buffer_.reset();
    buffer_ = std::make_unique_for_overwrite<char[]>(capacity + simdjson::SIMDJSON_PADDING);
    capacity_ = capacity;
    // A parser grows to the longest document it has been given (tape, string
    // buffer, structural indexes) before it parses it: a document of
    // `capacity` zero bytes sizes it (and is not JSON).
    (void)parser_.parse(simdjson::padded_string_view(zeros, capacity, sizeof zeros));
  }

  simdjson::dom::parser parser_;
  std::unique_ptr<char[]> buffer_;  // the line, then SIMDJSON_PADDING bytes
  size_t capacity_ = 0;
};

// The parsed line, read as the DOM decoder read its json: a path through a
// non-object, or a member of the wrong type, is absent. A duplicate key
// finds its first value (simdjson's at_key; nlohmann kept the last).
class Line {
 public:
  explicit Line(element root) : root_(root) {}
  simdjson::simdjson_result<element> at(Path path) const {
    simdjson::simdjson_result<element> e{element(root_)};
    for (std::string_view key : path) e = e.at_key(key);
    return e;
  }
  bool has(Path p) const { return at(p).error() == simdjson::SUCCESS; }
  bool isString(Path p) const { return at(p).is_string(); }
  std::string_view str(Path p) const {
    std::string_view s;
    return at(p).get(s) == simdjson::SUCCESS ? s : std::string_view();
  }
  // An integer member (an unsigned past INT64_MAX wraps, as nlohmann's
  // get<int64_t>() did); false for any other value.
  bool integer(Path p, int64_t* out) const {
    element e;
    if (at(p).get(e) != simdjson::SUCCESS) return false;
    if (e.type() == simdjson::dom::element_type::INT64) return e.get(*out) == simdjson::SUCCESS;
    uint64_t u;
    if (e.type() != simdjson::dom::element_type::UINT64 || e.get(u) != simdjson::SUCCESS)
      return false;
    *out = static_cast<int64_t>(u);
    return true;
  }
  bool isInteger(Path p) const {
    int64_t v;
    return integer(p, &v);
  }
  int64_t num(Path p, int64_t fallback = -1) const {
    int64_t v;
    return integer(p, &v) ? v : fallback;
  }
  // An argv array's string elements joined by spaces into *out; "" when not an array.
  void argv(Path p, std::string* out) const {
    simdjson::dom::array a;
    if (at(p).get(a) != simdjson::SUCCESS) return;
    for (element e : a) {
      std::string_view s;
      if (e.get(s) != simdjson::SUCCESS) continue;
      if (!out->empty()) *out += ' ';
      out->append(s);
    }
  }

 private:
  element root_;
};

void endpoint(const Line& l, Path ip, Path port, std::string* out) {
  if (!l.isString(ip)) return;
  const std::string_view host = l.str(ip);
  if (host.find(':') != std::string_view::npos) {
    *out += '[';
    *out += host;
    *out += ']';
  } else {
    *out = host;
  }
  if (int64_t p; l.integer(port, &p)) *out += ":" + std::to_string(p);
}

void fillExit(const Line& l, Record* r, Path code, Path signal) {
  r->has_exit = true;
  r->exit_code = l.num(code);
  if (l.isString(signal))
    r->exit_signal = l.str(signal);
  else if (const int64_t s = l.num(signal, 0); s != 0)
    r->exit_signal = std::to_string(s);
}

// A session record: its command (start) or exit (end), wherever the format
// keeps them.
void fillSession(const Line& l, Record* r, Path command, Path code, Path signal) {
  if (r->operation == "start") {
    r->kind = RecordKind::SessionStart;
    l.argv(command, &r->command);
  } else if (r->operation == "end") {
    r->kind = RecordKind::SessionEnd;
    fillExit(l, r, code, signal);
  }
}

// Where a record is: its format, session, event id, seq and time as written.
void fillIdentity(const Line& l, Record* r, const char* format, Path session, Path event, Path seq,
                  Path time) {
  r->format = format;
  r->session_id = l.str(session);
  r->event_id = l.str(event);
  r->seq = static_cast<uint64_t>(l.num(seq, 0));
  r->time = l.str(time);
}

void decodeNative(const Line& l, Record* r) {
  fillIdentity(l, r, "native", {"session_id"}, {"event_id"}, {"seq"}, {"time"});
  r->time_ms = parseRfc3339Ms(r->time);
  r->category = l.str({"category"});
  r->operation = l.str({"operation"});
  if (r->category == "session") {
    fillSession(l, r, {"session", "command"}, {"session", "exit", "code"},
                {"session", "exit", "signal"});
    return;
  }
  r->decision = l.str({"decision"});
  if (r->decision.empty()) return;
  r->kind = RecordKind::Decision;
  r->rule_id = l.str({"rule", "id"});
  r->rule_reason = l.str({"rule", "reason"});
  r->pid = l.num({"process", "pid"});
  r->ppid = l.num({"process", "ppid"});
  r->comm = l.str({"process", "comm"});
  l.argv({"process", "argv"}, &r->command);
  if (l.isString({"file", "path"}))
    r->target = l.str({"file", "path"});
  else if (l.isString({"exec", "path"}))
    r->target = l.str({"exec", "path"});
  else if (const std::string_view u = l.str({"network", "unix_path"}); !u.empty())
    r->target = u;
  else
    endpoint(l, {"network", "ip"}, {"network", "port"}, &r->target);
}

void decodeOcsf(const Line& l, Record* r) {
  fillIdentity(l, r, "ocsf", {"metadata", "correlation_uid"}, {"metadata", "uid"},
               {"metadata", "sequence"}, {"time_dt"});
  r->time_ms = l.num({"time"});
  if (r->time_ms < 0) r->time_ms = parseRfc3339Ms(r->time);
  r->category = l.str({"unmapped", "category"});
  r->operation = l.str({"unmapped", "operation"});
  if (r->category == "session") {
    fillSession(l, r, {"unmapped", "command"}, {"unmapped", "exit_code"},
                {"unmapped", "exit_signal"});
    return;
  }
  r->decision = l.str({"unmapped", "decision"});
  if (r->decision.empty()) return;
  r->kind = RecordKind::Decision;
  r->rule_id = l.str({"unmapped", "rule_id"});
  r->rule_reason = l.str({"unmapped", "policy", "desc"});
  if (r->rule_reason.empty()) r->rule_reason = l.str({"firewall_rule", "desc"});
  r->pid = l.num({"actor", "process", "pid"});
  r->ppid = l.num({"actor", "process", "parent_process", "pid"});
  r->comm = l.str({"actor", "process", "name"});
  r->command = l.str({"actor", "process", "cmd_line"});
  if (const std::string_view p = l.str({"file", "path"}); !p.empty())
    r->target = p;
  else if (const std::string_view e = l.str({"process", "file", "path"}); !e.empty())
    r->target = e;  // exec: the new image
  else if (const std::string_view n = l.str({"dst_endpoint", "name"}); !n.empty())
    r->target = n;
  else
    endpoint(l, {"dst_endpoint", "ip"}, {"dst_endpoint", "port"}, &r->target);
}

void decodeEcs(const Line& l, Record* r) {
  fillIdentity(l, r, "ecs", {"labels", "session_id"}, {"event", "id"}, {"event", "sequence"},
               {"@timestamp"});
  r->time_ms = parseRfc3339Ms(r->time);
  const std::string_view action = l.str({"event", "action"});
  if (action.starts_with("session-")) {
    r->category = "session";
    r->operation = action.substr(8);
    fillSession(l, r, {"supervise", "command"}, {"supervise", "exit_code"},
                {"supervise", "exit_signal"});
    return;
  }
  r->category = l.str({"supervise", "category"});
  r->operation = action;
  r->decision = l.str({"supervise", "decision"});
  if (r->decision.empty()) return;
  r->kind = RecordKind::Decision;
  r->rule_id = l.str({"rule", "id"});
  r->rule_reason = l.str({"rule", "description"});
  r->pid = l.num({"process", "pid"});
  r->ppid = l.num({"process", "parent", "pid"});
  r->comm = l.str({"process", "name"});
  l.argv({"process", "args"}, &r->command);
  if (const std::string_view p = l.str({"file", "path"}); !p.empty())
    r->target = p;
  else if (r->category == "exec" || (r->category == "process" && action == "exec"))
    r->target = l.str({"process", "executable"});  // the new image
  else if (const std::string_view a = l.str({"destination", "address"});
           !a.empty() && !l.has({"destination", "ip"}))
    r->target = a;  // unix socket
  else
    endpoint(l, {"destination", "ip"}, {"destination", "port"}, &r->target);
}

// Record{} without giving back the strings' memory (the next line reuses it).
void clear(Record* r) {
  r->kind = RecordKind::Other;
  for (std::string* s : {&r->format, &r->session_id, &r->event_id, &r->time, &r->category,
                         &r->operation, &r->decision, &r->rule_id, &r->rule_reason, &r->target,
                         &r->comm, &r->command, &r->exit_signal})
    clearForReuse(s);
  r->seq = 0;
  r->time_ms = -1;
  r->pid = r->ppid = -1;
  r->has_exit = false;
  r->exit_code = -1;
}

}  // namespace

int64_t parseRfc3339Ms(std::string_view t) {
  // YYYY-MM-DDTHH:MM:SS[.fraction]Z
  auto digits = [&](size_t pos, size_t n, int* out) {
    if (pos + n > t.size()) return false;
    int v = 0;
    for (size_t i = pos; i < pos + n; ++i) {
      if (t[i] < '0' || t[i] > '9') return false;
      v = v * 10 + (t[i] - '0');
    }
    *out = v;
    return true;
  };
  int year, mon, day, hour, min, sec;
  if (t.size() < 20 || !digits(0, 4, &year) || t[4] != '-' || !digits(5, 2, &mon) || t[7] != '-' ||
      !digits(8, 2, &day) || (t[10] != 'T' && t[10] != ' ') || !digits(11, 2, &hour) ||
      t[13] != ':' || !digits(14, 2, &min) || t[16] != ':' || !digits(17, 2, &sec) || mon < 1 ||
      mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 60)
    return -1;
  int ms = 0;
  size_t i = 19;
  if (i < t.size() && t[i] == '.') {
    int scale = 100;
    for (++i; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i) {
      ms += (t[i] - '0') * scale;
      scale /= 10;
    }
  }
  if (i >= t.size() || t[i] != 'Z') return -1;
  // timegm() without its time-zone machinery (days from the civil date,
  // H. Hinnant's algorithm); a day past the month's end runs on into the
  // next, as timegm() normalizes it.
  int64_t y = year - (mon <= 2);
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (mon + (mon > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const int64_t days = era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
  return ((days * 24 + hour) * 60 + min) * 60000 + sec * 1000 + ms;
}

bool decodeLine(std::string_view text, Record* out, std::string* why) {
  clear(out);
  if (text.size() > kMaxLine) {  // the reader never passes one (reader.h)
    *why = "longer than " + std::to_string(kMaxLine) + " bytes";
    return false;
  }
  // nlohmann skipped a byte order mark at the start of its input; simdjson
  // leaves that to the caller.
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  thread_local LineParser parser;
  element root;
  if (parser.parse(text).get(root) != simdjson::SUCCESS) {
    *why = "not JSON";
    return false;
  }
  if (!root.is_object()) {
    *why = "not a JSON object";
    return false;
  }
  const Line l(root);
  if (l.has({"schema_version"}) && l.has({"session_id"})) {
    decodeNative(l, out);
  } else if (l.has({"metadata", "correlation_uid"})) {
    decodeOcsf(l, out);
  } else if (l.has({"labels", "session_id"}) && l.has({"ecs"})) {
    decodeEcs(l, out);
  } else {
    *why = "not an audit record of the native, OCSF or ECS format";
    return false;
  }
  if (out->session_id.empty()) {
    *why = "no session id";
    return false;
  }
  return true;
}

}  // namespace sv::report
