// decodeLine(): the native, OCSF and ECS shapes of one audit record
// (docs/audit-events.md, "Other formats") into one Record. A line is
// attacker-influenced (paths, argv): every member is checked for its type,
// and a wrong type reads as absent, never as an error of the whole report.
// Each line is parsed by RapidJSON's SAX Reader (header-only: nothing linked,
// no start-up cost), iterative (no recursion, so no depth can overflow the
// stack), in situ on a reused copy of the line, its UTF-8 checked here; a
// handler keeps only the members read here, in slots reused across lines,
// so that a line allocates nothing.
#include "supervisor/report/record.h"

#include "common/civil_date.h"
#include "common/rapidjson_reader.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <vector>

#include "supervisor/report/reader.h"

namespace sv::report {
namespace {

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

// Every member any of the three formats is read at (decodeNative, decodeOcsf,
// decodeEcs below), as a tree of keys: node 0 is the line's object.
// An argv path's array keeps its direct string elements joined by spaces.
struct Member {
  Path path;
  bool argv = false;
};
const Member kMembers[] = {
    // native
    {{"schema_version"}},
    {{"session_id"}},
    {{"event_id"}},
    {{"seq"}},
    {{"time"}},
    {{"category"}},
    {{"operation"}},
    {{"decision"}},
    {{"session", "command"}, true},
    {{"session", "exit", "code"}},
    {{"session", "exit", "signal"}},
    {{"rule", "id"}},
    {{"rule", "reason"}},
    {{"process", "pid"}},
    {{"process", "ppid"}},
    {{"process", "comm"}},
    {{"process", "argv"}, true},
    {{"file", "path"}},
    {{"exec", "path"}},
    {{"network", "unix_path"}},
    {{"network", "ip"}},
    {{"network", "port"}},
    // OCSF
    {{"metadata", "correlation_uid"}},
    {{"metadata", "uid"}},
    {{"metadata", "sequence"}},
    {{"time_dt"}},
    {{"unmapped", "category"}},
    {{"unmapped", "operation"}},
    {{"unmapped", "command"}, true},
    {{"unmapped", "exit_code"}},
    {{"unmapped", "exit_signal"}},
    {{"unmapped", "decision"}},
    {{"unmapped", "rule_id"}},
    {{"unmapped", "policy", "desc"}},
    {{"firewall_rule", "desc"}},
    {{"actor", "process", "pid"}},
    {{"actor", "process", "parent_process", "pid"}},
    {{"actor", "process", "name"}},
    {{"actor", "process", "cmd_line"}},
    {{"process", "file", "path"}},
    {{"dst_endpoint", "name"}},
    {{"dst_endpoint", "ip"}},
    {{"dst_endpoint", "port"}},
    // ECS
    {{"labels", "session_id"}},
    {{"ecs"}},
    {{"event", "id"}},
    {{"event", "sequence"}},
    {{"@timestamp"}},
    {{"event", "action"}},
    {{"supervise", "command"}, true},
    {{"supervise", "exit_code"}},
    {{"supervise", "exit_signal"}},
    {{"supervise", "category"}},
    {{"supervise", "decision"}},
    {{"rule", "description"}},
    {{"process", "parent", "pid"}},
    {{"process", "name"}},
    {{"process", "args"}, true},
    {{"process", "executable"}},
    {{"destination", "address"}},
    {{"destination", "ip"}},
    {{"destination", "port"}},
};

enum class Type : uint8_t { Absent, Other, Integer, String, Object, Array };

struct Node {
  std::string_view key;
  bool argv = false;
  std::vector<int> children;
};

// The tree of kMembers, built once.
const std::vector<Node>& tree() {
  static const std::vector<Node> nodes = [] {
    std::vector<Node> n(1);
    for (const Member& m : kMembers) {
      int at = 0;
      for (std::string_view key : m.path) {
        int next = -1;
        for (int c : n[at].children)
          if (n[c].key == key) next = c;
        if (next < 0) {
          next = static_cast<int>(n.size());
          n[at].children.push_back(next);  // before the push_back below moves n
          n.push_back(Node{key});
        }
        at = next;
      }
      n[at].argv = m.argv;
    }
    return n;
  }();
  return nodes;
}

// tree(), without the guard of its static at each key.
const std::vector<Node>& kTree = tree();

int child(const Node& node, std::string_view key) {
  const std::vector<Node>& nodes = kTree;
  for (int c : node.children)
    if (nodes[c].key == key) return c;
  return -1;
}

bool numeric(char c);  // a character of a JSON number

// What one line holds at each node of tree(): its type, an integer's value,
// a string's value (an argv array's strings joined).
struct Slot {
  Type type = Type::Absent;
  int64_t integer = 0;
  std::string text;
};

// The SAX handler. Containers are followed only along tree(): below a member
// not in it (or inside an argv array's elements) it counts levels and keeps
// nothing, so its memory doesn't grow with depth. A key repeated in an
// object clears what its earlier value left in the slots below it: the last
// value wins, whole, as in nlohmann's DOM.
class Handler : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, Handler> {
 public:
  std::vector<Slot> slots;
  Type root = Type::Absent;
  rapidjson::InsituStringStream* in = nullptr;  // the line being read
  std::string_view line;                        // the same bytes, unmodified
  bool escapes = true;                          // the line has a backslash

  Handler() : slots(tree().size()) {}

  void reset() {
    for (Slot& s : slots) {
      s.type = Type::Absent;
      clearForReuse(&s.text);
    }
    root = Type::Absent;
    frames_.clear();
    dead_ = 0;
    pending_ = -1;
  }

  bool Null() { return scalar(Type::Other); }
  bool Bool(bool) { return scalar(Type::Other); }
  bool Int(int i) { return integer(i); }
  bool Uint(unsigned u) { return integer(u); }
  bool Int64(int64_t i) { return integer(i); }
  // An unsigned past INT64_MAX wraps, as nlohmann's get<int64_t>() did.
  bool Uint64(uint64_t u) { return integer(static_cast<int64_t>(u)); }
  // A double (an integer past 64 bits too) reads as absent, as for nlohmann,
  // which rejects one that overflows (strtod's infinity). RapidJSON's fast
  // (not full-precision) conversion can round differently there, so near
  // the largest double the number's text is read again by strtod. (Full
  // precision, kParseFullPrecisionFlag, calls __builtin_clzll(0) in 1.1.0's
  // DiyFp::Normalize: undefined behaviour, UBSan stops on it.)
  bool Double(double d) {
    if (!(std::fabs(d) < 1e300) && !finiteAsStrtod()) return false;
    return scalar(Type::Other);
  }
  bool String(const char* s, rapidjson::SizeType n, bool) {
    if (escapes && !validUtf16(s, n)) return false;
    if (dead_) return true;
    if (frames_.empty()) return root = Type::String, true;
    const Frame& f = frames_.back();
    if (f.argv) {
      std::string& joined = slots[f.node].text;
      if (!joined.empty()) joined += ' ';
      joined.append(s, n);
      return true;
    }
    if (pending_ < 0) return true;
    Slot& slot = slots[pending_];
    slot.type = Type::String;
    slot.text.assign(s, n);
    return true;
  }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    if (escapes && !validUtf16(s, n)) return false;
    if (dead_) return true;
    pending_ = child(nodes_[frames_.back().node], std::string_view(s, n));
    if (pending_ >= 0) clearBelow(pending_);
    return true;
  }
  bool StartObject() { return open(Type::Object); }
  bool EndObject(rapidjson::SizeType) { return close(); }
  bool StartArray() { return open(Type::Array); }
  bool EndArray(rapidjson::SizeType) { return close(); }

 private:
  struct Frame {
    int node;
    bool argv;  // an argv array (else an object of tree())
  };

  // RapidJSON 1.1.0 decodes a lone low surrogate (\udc00-\udfff) into the
  // three bytes of its code point, which UTF-8 doesn't allow (nlohmann rejects
  // the line); a raw one in the input is rejected by validUtf8(), so
  // 0xED 0xA0-0xBF in a decoded string can only come from such an escape.
  // The number just read converted by strtod: the run of number characters
  // around the stream's position (its start for InsituStringStream in 1.1.0,
  // its end for other streams; the characters before and after a number are
  // never number characters).
  bool finiteAsStrtod() const {
    size_t start = std::min(in->Tell(), line.size()), end = start;
    while (start > 0 && numeric(line[start - 1])) --start;
    while (end < line.size() && numeric(line[end])) ++end;
    const std::string number(line.substr(start, end - start));
    return std::isfinite(std::strtod(number.c_str(), nullptr));
  }

  static bool validUtf16(const char* s, size_t n) {
    const char* end = s + n;
    for (const char* p = s; (p = static_cast<const char*>(std::memchr(p, '\xED', end - p)));) {
      if (++p < end && static_cast<unsigned char>(*p) >= 0xA0) return false;
    }
    return true;
  }

  bool integer(int64_t v) {
    if (dead_ || frames_.empty() || frames_.back().argv || pending_ < 0)
      return scalar(Type::Integer);
    slots[pending_].type = Type::Integer;
    slots[pending_].integer = v;
    return true;
  }
  bool scalar(Type t) {
    if (dead_) return true;
    if (frames_.empty()) return root = t, true;
    if (!frames_.back().argv && pending_ >= 0) slots[pending_].type = t;
    return true;
  }
  bool open(Type t) {
    if (dead_) return ++dead_, true;
    if (frames_.empty()) {
      root = t;
      if (t == Type::Object)
        frames_.push_back({0, false});
      else
        ++dead_;
      return true;
    }
    if (frames_.back().argv || pending_ < 0) return ++dead_, true;
    const int node = pending_;
    slots[node].type = t;
    pending_ = -1;
    if (t == Type::Object && !nodes_[node].children.empty())
      frames_.push_back({node, false});
    else if (t == Type::Array && nodes_[node].argv)
      frames_.push_back({node, true});
    else
      ++dead_;
    return true;
  }
  bool close() {
    if (dead_)
      --dead_;
    else
      frames_.pop_back();
    pending_ = -1;
    return true;
  }
  void clearBelow(int node) {
    Slot& s = slots[node];
    s.type = Type::Absent;
    s.text.clear();
    for (int c : nodes_[node].children) clearBelow(c);
  }

  const std::vector<Node>& nodes_ = kTree;
  std::vector<Frame> frames_;  // at most the depth of tree() (4) + 1
  size_t dead_ = 0;            // levels open below what is kept
  int pending_ = -1;           // the node of the value after the last key
};

// The parsed line, read as the DOM decoder read its json: a path through a
// non-object, or a member of the wrong type, is absent.
class Line {
 public:
  explicit Line(const Handler& h) : h_(h) {}
  const Slot* at(Path path) const {
    const std::vector<Node>& nodes = tree();
    int n = 0;
    for (std::string_view key : path) {
      if (n != 0 && h_.slots[n].type != Type::Object) return nullptr;
      n = child(nodes[n], key);
      if (n < 0) return nullptr;
    }
    const Slot* s = &h_.slots[n];
    return s->type == Type::Absent ? nullptr : s;
  }
  bool has(Path p) const { return at(p) != nullptr; }
  bool isString(Path p) const {
    const Slot* s = at(p);
    return s && s->type == Type::String;
  }
  std::string_view str(Path p) const {
    const Slot* s = at(p);
    return s && s->type == Type::String ? std::string_view(s->text) : std::string_view();
  }
  bool integer(Path p, int64_t* out) const {
    const Slot* s = at(p);
    if (!s || s->type != Type::Integer) return false;
    *out = s->integer;
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
  // An argv array's string elements joined by spaces into *out; "" when not an
  // array.
  void argv(Path p, std::string* out) const {
    const Slot* s = at(p);
    if (s && s->type == Type::Array) out->append(s->text);
  }

 private:
  const Handler& h_;
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

// Strict UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF), ASCII 8 bytes at a time, and none of the control bytes
// 0x1A-0x1F: RapidJSON 1.1.0's SSE2 string scan takes only bytes up to 0x19
// for control characters (max_epu8 against 0x19) and would copy them into a
// string, where JSON (and nlohmann) allows none; outside a string they are
// a syntax error anyway, so rejecting them anywhere changes no verdict.
bool validUtf8(std::string_view text) {
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    if (i + 8 <= n) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      // No byte past 0x7F, none below 0x20 (hasless(w, 0x20), exact).
      if (!(w & kHigh) && !((w - kOnes * 0x20) & ~w & kHigh)) {
        i += 8;
        continue;
      }
    }
    const unsigned c = p[i];
    if (c < 0x80) {
      if (c >= 0x1A && c < 0x20) return false;
      ++i;
      continue;
    }
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (i + len > n || p[i + 1] < lo || p[i + 1] > hi) return false;
    for (size_t k = 2; k < len; ++k)
      if ((p[i + k] & 0xC0) != 0x80) return false;
    i += len;
  }
  return true;
}

bool numeric(char c) { return c != '\0' && std::strchr("0123456789.eE+-", c); }

// A JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
bool jsonNumber(std::string_view t) {
  size_t i = 0;
  auto digits = [&] {
    const size_t from = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
    return i > from;
  };
  if (i < t.size() && t[i] == '-') ++i;
  if (i < t.size() && t[i] == '0')
    ++i;
  else if (!digits())
    return false;
  if (i < t.size() && t[i] == '.' && (++i, !digits())) return false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == t.size();
}

// RapidJSON 1.1.0 rejects a positive exponent past 308 (less the fraction's
// digits) whatever the significand (0e999, 0.001e309: "number too big"),
// where nlohmann's strtod finds a finite double, read as absent. After that
// error the line is read again with each such number outside strings
// replaced by "0.0" and spaces (the same length, also read as absent).
// Linear; only lines with that error pay it. false: none found.
bool patchBigExponents(std::string* copy, size_t n) {
  bool in_string = false, patched = false;
  for (size_t i = 0; i < n;) {
    const char c = (*copy)[i];
    if (in_string) {
      if (c == '\\') {
        i += 2;
      } else {
        in_string = c != '"';
        ++i;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      ++i;
      continue;
    }
    if (!numeric(c)) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < n && numeric((*copy)[j])) ++j;
    const std::string token = copy->substr(i, j - i);
    if (token.find_first_of("eE") != std::string::npos && jsonNumber(token) &&
        std::isfinite(std::strtod(token.c_str(), nullptr))) {
      copy->replace(i, j - i, "0.0" + std::string(j - i - 3, ' '));
      patched = true;
    }
    i = j;
  }
  return patched;
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
  // timegm()'s arithmetic (common/civil_date.h).
  const int64_t days = daysFromCivil(year, unsigned(mon), unsigned(day));
  return ((days * 24 + hour) * 60 + min) * 60000 + sec * 1000 + ms;
}

bool decodeLine(std::string_view text, Record* out, std::string* why) {
  clear(out);
  if (text.size() > kMaxLine) {  // the reader never passes one (reader.h)
    *why = "longer than " + std::to_string(kMaxLine) + " bytes";
    return false;
  }
  // nlohmann skipped a byte order mark at the start of its input; RapidJSON
  // leaves that to the caller.
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  // The Reader's stack (a string being decoded, the open containers) and the
  // handler's slots are kept across lines; a line past kKeep is read by a
  // fresh pair that gives its memory back at once.
  thread_local rapidjson::Reader shared_reader;
  thread_local Handler shared_handler;
  std::unique_ptr<rapidjson::Reader> own_reader;
  std::unique_ptr<Handler> own_handler;
  rapidjson::Reader* reader = &shared_reader;
  Handler* handler = &shared_handler;
  if (text.size() > kKeep) {
    own_reader = std::make_unique<rapidjson::Reader>();
    own_handler = std::make_unique<Handler>();
    reader = own_reader.get();
    handler = own_handler.get();
  }
  handler->reset();
  // The line is read in place (kParseInsituFlag: strings decoded where they
  // are, SIMD runs) from a copy of it ending in a NUL and 16 more, so that
  // the 16-byte loads stay in the buffer. A NUL byte in the line reads as the
  // end of the input, as nlohmann took it: what follows a complete value is
  // ignored. Without kParseStopWhenDoneFlag anything but whitespace after the
  // value is an error, as for nlohmann.
  thread_local std::string shared_copy;
  std::string own_copy;
  std::string& copy = own_reader ? own_copy : shared_copy;
  copy.assign(text);
  copy.append(17, '\0');
  // UTF-8 checked here, up to the first NUL, instead of by the reader
  // (kParseValidateEncodingFlag, a third of the time, a byte at a time):
  // a byte past 0x7F outside a string is a syntax error anyway, so a line
  // with invalid UTF-8 before its end is not JSON either way.
  const size_t nul = text.find('\0');
  const std::string_view read = text.substr(0, nul);
  if (!validUtf8(read)) {
    *why = "not JSON";
    return false;
  }
  rapidjson::InsituStringStream in(copy.data());
  constexpr unsigned kFlags = rapidjson::kParseInsituFlag | rapidjson::kParseIterativeFlag;
  handler->in = &in;
  handler->line = text;
  handler->escapes = read.find('\\') != std::string_view::npos;
  rapidjson::ParseResult parsed = reader->Parse<kFlags>(in, *handler);
  if (parsed.Code() == rapidjson::kParseErrorNumberTooBig) {
    copy.assign(text);
    copy.append(17, '\0');
    if (patchBigExponents(&copy, read.size())) {
      handler->reset();
      rapidjson::InsituStringStream again(copy.data());
      handler->in = &again;
      parsed = reader->Parse<kFlags>(again, *handler);
    }
  }
  if (parsed.IsError()) {
    *why = "not JSON";
    return false;
  }
  if (handler->root != Type::Object) {
    *why = "not a JSON object";
    return false;
  }
  const Line l(*handler);
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
