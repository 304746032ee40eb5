// JsonScanner (json_scan.h): one pass over a line, an explicit stack (a bit
// per open container, so hostile nesting can't overflow the C++ stack), and
// the acceptance rules of nlohmann's lexer and parser (lexer.hpp: scan_string,
// get_codepoint, scan_number, skip_bom; parser.hpp: the number overflow check).
#include "supervisor/report/json_scan.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "common/result.h"

namespace sv::report {
namespace {

// What a byte starts inside a string. UTF-8 sequences as nlohmann checks
// them (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF).
enum ByteClass : uint8_t {
  kPlain,  // 0x20..0x7F but '"' and '\\'
  kQuote,
  kBackslash,
  kBad,     // a control character, a continuation or an impossible lead byte
  kLead2,   // C2..DF: one continuation
  kLeadE0,  // E0: A0..BF, then one continuation
  kLead3,   // E1..EC, EE..EF: two continuations
  kLeadED,  // ED: 80..9F (no surrogates), then one continuation
  kLeadF0,  // F0: 90..BF, then two continuations
  kLead4,   // F1..F3: three continuations
  kLeadF4,  // F4: 80..8F (up to U+10FFFF), then two continuations
};

constexpr std::array<uint8_t, 256> makeClasses() {
  std::array<uint8_t, 256> c{};
  for (int b = 0; b < 256; ++b) {
    if (b < 0x20)
      c[b] = kBad;
    else if (b == '"')
      c[b] = kQuote;
    else if (b == '\\')
      c[b] = kBackslash;
    else if (b < 0x80)
      c[b] = kPlain;
    else if (b < 0xC2)
      c[b] = kBad;
    else if (b < 0xE0)
      c[b] = kLead2;
    else if (b == 0xE0)
      c[b] = kLeadE0;
    else if (b == 0xED)
      c[b] = kLeadED;
    else if (b < 0xF0)
      c[b] = kLead3;
    else if (b == 0xF0)
      c[b] = kLeadF0;
    else if (b < 0xF4)
      c[b] = kLead4;
    else if (b == 0xF4)
      c[b] = kLeadF4;
    else
      c[b] = kBad;
  }
  return c;
}
constexpr std::array<uint8_t, 256> kClasses = makeClasses();

int hex4(std::string_view s, size_t p) {
  if (p + 4 > s.size()) return -1;
  int v = 0;
  for (size_t i = p; i < p + 4; ++i) {
    const char c = s[i];
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= c - '0';
    else if (c >= 'a' && c <= 'f')
      v |= c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      v |= c - 'A' + 10;
    else
      return -1;
  }
  return v;
}

// The escape at s[p] (a backslash): its length, 0 when invalid; *cp the
// code point it stands for. A high surrogate must be followed by a low one.
size_t escapeAt(std::string_view s, size_t p, uint32_t* cp) {
  if (p + 1 >= s.size()) return 0;
  switch (s[p + 1]) {
    case '"':
      *cp = '"';
      return 2;
    case '\\':
      *cp = '\\';
      return 2;
    case '/':
      *cp = '/';
      return 2;
    case 'b':
      *cp = '\b';
      return 2;
    case 'f':
      *cp = '\f';
      return 2;
    case 'n':
      *cp = '\n';
      return 2;
    case 'r':
      *cp = '\r';
      return 2;
    case 't':
      *cp = '\t';
      return 2;
    case 'u':
      break;
    default:
      return 0;
  }
  const int high = hex4(s, p + 2);
  if (high < 0 || (high >= 0xDC00 && high <= 0xDFFF)) return 0;
  if (high < 0xD800 || high > 0xDBFF) {
    *cp = static_cast<uint32_t>(high);
    return 6;
  }
  if (p + 8 > s.size() || s[p + 6] != '\\' || s[p + 7] != 'u') return 0;
  const int low = hex4(s, p + 8);
  if (low < 0xDC00 || low > 0xDFFF) return 0;
  *cp = 0x10000 + ((static_cast<uint32_t>(high) - 0xD800) << 10) +
        (static_cast<uint32_t>(low) - 0xDC00);
  return 12;
}

void appendUtf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool isDigit(char c) { return c >= '0' && c <= '9'; }

// Keys are a few bytes long: a loop here beats a call to memcmp.
bool sameKey(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

}  // namespace

void clearForReuse(std::string* s) {
  constexpr size_t kKeep = 64 << 10;
  if (s->capacity() > kKeep)
    std::string().swap(*s);
  else
    s->clear();
}

FieldPaths::FieldPaths(std::initializer_list<Path> paths) : nodes_(1) {
  for (const Path& p : paths) {
    const int field = static_cast<int>(fields_++);
    int node = 0;
    for (std::string_view key : p.keys) {
      int next = child(node, key);
      if (next < 0) {
        next = static_cast<int>(nodes_.size());
        nodes_.push_back(Node{key, node});
        nodes_[node].children.push_back(next);
      }
      node = next;
      nodes_[node].subtree.push_back(field);
    }
    nodes_[node].field = field;
    nodes_[node].join = p.join;
  }
  SV_CHECK(nodes_.size() * 2 <= kSlots);  // probing needs free slots to stop at
  table_.assign(kSlots, -1);
  for (size_t parent = 0; parent < nodes_.size(); ++parent) {
    for (int c : nodes_[parent].children) {
      size_t i = (slot(nodes_[c].key) + parent * 31) % kSlots;
      while (table_[i] >= 0) i = (i + 1) % kSlots;
      table_[i] = c;
    }
  }
}

size_t FieldPaths::slot(std::string_view key) {
  if (key.empty()) return 0;
  return key.size() * 131 + static_cast<unsigned char>(key[0]) * 7 +
         static_cast<unsigned char>(key.back());
}

int FieldPaths::child(int node, std::string_view key) const {
  if (table_.empty()) {  // while the constructor builds the paths
    for (int c : nodes_[node].children)
      if (nodes_[c].key == key) return c;
    return -1;
  }
  for (size_t i = (slot(key) + static_cast<size_t>(node) * 31) % kSlots; table_[i] >= 0;
       i = (i + 1) % kSlots) {
    const int c = table_[i];
    if (nodes_[c].parent == node && sameKey(nodes_[c].key, key)) return c;
  }
  return -1;
}

JsonScanner::JsonScanner(const FieldPaths& paths) : paths_(paths), values_(paths.size()) {}

void JsonScanner::reset(int node) {
  for (int f : paths_.nodes_[node].subtree) {
    FieldValue& v = values_[f];
    v.type = FieldValue::kAbsent;
    v.array = false;
    v.text = {};
    v.integer = 0;
    clearForReuse(&v.buffer);
  }
}

void JsonScanner::skipSpace() {
  // Locals, not pos_: a store through `this` could alias the line's chars
  // and would be redone on every byte.
  const char* d = in_.data();
  size_t p = pos_;
  const size_t n = in_.size();
  while (p < n && (d[p] == ' ' || d[p] == '\t' || d[p] == '\n' || d[p] == '\r')) ++p;
  pos_ = p;
}

// At the opening quote. Checks the string; when `want`, *out is its value
// (a view into the line, or decoded into *buffer when it has escapes).
bool JsonScanner::string(std::string_view* out, std::string* buffer, bool want) {
  const auto* s = reinterpret_cast<const unsigned char*>(in_.data());
  const size_t n = in_.size();
  auto cont = [&](size_t at, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return at < n && s[at] >= lo && s[at] <= hi;
  };
  size_t p = pos_ + 1;  // a local: see skipSpace()
  const size_t start = p;
  bool escaped = false;
  for (;;) {
    // Eight plain bytes at a time (no quote, backslash, control or non-ASCII
    // byte among them), then byte by byte up to the next special one.
    constexpr uint64_t kOnes = 0x0101010101010101, kHigh = 0x8080808080808080;
    auto zeroByte = [](uint64_t v) { return (v - kOnes) & ~v & kHigh; };
    while (p + 8 <= n) {
      uint64_t v;
      std::memcpy(&v, s + p, 8);
      if ((v & kHigh) | ((v - kOnes * 0x20) & ~v & kHigh) | zeroByte(v ^ (kOnes * '"')) |
          zeroByte(v ^ (kOnes * '\\')))
        break;
      p += 8;
    }
    while (p < n && kClasses[s[p]] == kPlain) ++p;
    if (p >= n) return false;
    uint32_t cp;
    switch (kClasses[s[p]]) {
      case kQuote: {
        const std::string_view raw = in_.substr(start, p - start);
        pos_ = p + 1;
        if (!want) return true;
        if (!escaped) {
          *out = raw;
          return true;
        }
        buffer->clear();
        for (size_t i = 0; i < raw.size();) {
          const size_t bs = raw.find('\\', i);
          buffer->append(raw.substr(i, bs - i));
          if (bs == std::string_view::npos) break;
          i = bs + escapeAt(raw, bs, &cp);  // checked on the first pass
          appendUtf8(buffer, cp);
        }
        *out = *buffer;
        return true;
      }
      case kBackslash: {
        const size_t len = escapeAt(in_, p, &cp);
        if (len == 0) return false;
        escaped = true;
        p += len;
        break;
      }
      case kLead2:
        if (!cont(p + 1)) return false;
        p += 2;
        break;
      case kLeadE0:
        if (!cont(p + 1, 0xA0) || !cont(p + 2)) return false;
        p += 3;
        break;
      case kLead3:
        if (!cont(p + 1) || !cont(p + 2)) return false;
        p += 3;
        break;
      case kLeadED:
        if (!cont(p + 1, 0x80, 0x9F) || !cont(p + 2)) return false;
        p += 3;
        break;
      case kLeadF0:
        if (!cont(p + 1, 0x90) || !cont(p + 2) || !cont(p + 3)) return false;
        p += 4;
        break;
      case kLead4:
        if (!cont(p + 1) || !cont(p + 2) || !cont(p + 3)) return false;
        p += 4;
        break;
      case kLeadF4:
        if (!cont(p + 1, 0x80, 0x8F) || !cont(p + 2) || !cont(p + 3)) return false;
        p += 4;
        break;
      default:
        return false;
    }
  }
}

// At '-' or a digit. An integer that fits int64 (negative) or uint64 is an
// integer, as in nlohmann; any other number is a double and, as there, one
// that overflows to infinity makes the document invalid.
bool JsonScanner::number(bool* is_integer, int64_t* integer) {
  const size_t start = pos_, n = in_.size();
  if (in_[pos_] == '-') ++pos_;
  if (pos_ >= n) return false;
  if (in_[pos_] == '0') {
    ++pos_;
  } else if (isDigit(in_[pos_])) {
    while (pos_ < n && isDigit(in_[pos_])) ++pos_;
  } else {
    return false;
  }
  bool fraction = false;
  if (pos_ < n && in_[pos_] == '.') {
    ++pos_;
    if (pos_ >= n || !isDigit(in_[pos_])) return false;
    while (pos_ < n && isDigit(in_[pos_])) ++pos_;
    fraction = true;
  }
  if (pos_ < n && (in_[pos_] == 'e' || in_[pos_] == 'E')) {
    ++pos_;
    if (pos_ < n && (in_[pos_] == '+' || in_[pos_] == '-')) ++pos_;
    if (pos_ >= n || !isDigit(in_[pos_])) return false;
    while (pos_ < n && isDigit(in_[pos_])) ++pos_;
    fraction = true;
  }
  const char* first = in_.data() + start;
  const char* last = in_.data() + pos_;
  if (!fraction) {
    if (*first == '-') {
      int64_t v;
      if (std::from_chars(first, last, v).ec == std::errc()) {
        *is_integer = true;
        *integer = v;
        return true;
      }
    } else {
      uint64_t v;
      if (std::from_chars(first, last, v).ec == std::errc()) {
        *is_integer = true;
        *integer = static_cast<int64_t>(v);
        return true;
      }
    }
  }
  *is_integer = false;
  number_buffer_.assign(first, last);  // strtod wants a terminated string
  return std::isfinite(std::strtod(number_buffer_.c_str(), nullptr));
}

ScanResult JsonScanner::scan(std::string_view line) {
  in_ = line;
  pos_ = 0;
  for (FieldValue& v : values_) {
    v.type = FieldValue::kAbsent;
    v.array = false;
    v.text = {};
    v.integer = 0;
    clearForReuse(&v.buffer);
  }
  for (std::string* s : {&key_buffer_, &element_buffer_, &number_buffer_}) clearForReuse(s);
  if (kinds_.size() > 1024) std::vector<uint64_t>().swap(kinds_);  // past 65,536 levels
  if (!in_.empty() && in_[0] == '\xEF') {  // a byte order mark, only at the very start
    if (!in_.starts_with("\xEF\xBB\xBF")) return ScanResult::kInvalid;
    pos_ = 3;
  }
  skipSpace();
  const bool object = pos_ < in_.size() && in_[pos_] == '{';
  if (!value(Target{0, -1})) return ScanResult::kInvalid;
  skipSpace();
  // nlohmann's lexer takes a NUL byte for the end of the input (lexer.hpp,
  // scan(): case '\0'), so whatever follows one after the value is ignored.
  if (pos_ != in_.size() && in_[pos_] != '\0') return ScanResult::kInvalid;
  return object ? ScanResult::kObject : ScanResult::kNotObject;
}

// The whole top value, iteratively. A container's context is the paths node
// whose children its keys are matched against (objects) or the join field
// its string elements go to (arrays); contexts are kept only for the open
// containers from the top down to the first one without any (the rest, and
// so all hostile depth, have none), so `contexts` stays as short as a path.
bool JsonScanner::value(Target target) {
  const auto& nodes = paths_.nodes_;
  std::vector<int>& contexts = contexts_;
  contexts.clear();
  size_t depth = 0;
  auto isObject = [&](size_t level) { return (kinds_[level / 64] >> (level % 64)) & 1; };
  auto push = [&](bool object, int context) {
    if (kinds_.size() <= depth / 64) kinds_.push_back(0);
    if (object)
      kinds_[depth / 64] |= uint64_t{1} << (depth % 64);
    else
      kinds_[depth / 64] &= ~(uint64_t{1} << (depth % 64));
    if (context >= 0 && contexts.size() == depth) contexts.push_back(context);
    ++depth;
  };
  auto pop = [&] {
    if (contexts.size() == depth) contexts.pop_back();
    --depth;
  };
  auto context = [&] { return depth <= contexts.size() && depth > 0 ? contexts[depth - 1] : -1; };
  enum { kValue, kKey, kAfter } state = kValue;
  for (;;) {
    switch (state) {
      case kValue: {
        skipSpace();
        if (pos_ >= in_.size()) return false;
        const int field = target.node >= 0 ? nodes[target.node].field : -1;
        FieldValue* f = field >= 0 ? &values_[field] : nullptr;
        const char c = in_[pos_];
        if (c == '{' || c == '[') {
          ++pos_;
          const bool object = c == '{';
          int ctx = -1;
          if (f) f->type = FieldValue::kOther;
          if (object && target.node >= 0 && !nodes[target.node].children.empty()) {
            ctx = target.node;
          } else if (!object && f && nodes[target.node].join) {
            f->array = true;
            clearForReuse(&f->buffer);
            ctx = field;
          }
          push(object, ctx);
          skipSpace();
          if (pos_ < in_.size() && in_[pos_] == (object ? '}' : ']')) {
            ++pos_;
            pop();
            state = kAfter;
          } else if (object) {
            state = kKey;
          } else {
            target = Target{-1, ctx};
          }
          break;
        }
        if (c == '"') {
          std::string_view text;
          if (f) {
            if (!string(&text, &f->buffer, true)) return false;
            f->type = FieldValue::kString;
            f->text = text;
          } else if (target.join >= 0) {
            if (!string(&text, &element_buffer_, true)) return false;
            FieldValue& joined = values_[target.join];
            if (!joined.buffer.empty()) joined.buffer += ' ';
            joined.buffer.append(text);
            joined.text = joined.buffer;
          } else if (!string(&text, nullptr, false)) {
            return false;
          }
        } else if (c == '-' || isDigit(c)) {
          bool is_integer;
          int64_t integer;
          if (!number(&is_integer, &integer)) return false;
          if (f) {
            f->type = is_integer ? FieldValue::kInteger : FieldValue::kOther;
            f->integer = is_integer ? integer : 0;
          }
        } else {
          const std::string_view rest = in_.substr(pos_);
          if (rest.starts_with("true") || rest.starts_with("null"))
            pos_ += 4;
          else if (rest.starts_with("false"))
            pos_ += 5;
          else
            return false;
          if (f) f->type = FieldValue::kOther;
        }
        state = kAfter;
        break;
      }
      case kKey: {  // after '{' or ',' and space
        if (pos_ >= in_.size() || in_[pos_] != '"') return false;
        const int ctx = context();
        std::string_view key;
        if (!string(&key, &key_buffer_, ctx >= 0)) return false;
        skipSpace();
        if (pos_ >= in_.size() || in_[pos_] != ':') return false;
        ++pos_;
        target = Target{ctx >= 0 ? paths_.child(ctx, key) : -1, -1};
        if (target.node >= 0) reset(target.node);  // a duplicate key replaces the value whole
        state = kValue;
        break;
      }
      case kAfter: {
        if (depth == 0) return true;
        skipSpace();
        if (pos_ >= in_.size()) return false;
        const char c = in_[pos_++];
        const bool object = isObject(depth - 1);
        if (c == ',') {
          if (object) {
            skipSpace();
            state = kKey;
          } else {
            target = Target{-1, context()};
            state = kValue;
          }
        } else if (c == (object ? '}' : ']')) {
          pop();
        } else {
          return false;
        }
        break;
      }
    }
  }
}

}  // namespace sv::report
