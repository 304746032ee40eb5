// JsonWriter: appends compact JSON to a caller-owned std::string.
//
// Only for the audit hot path (AuditLog::emit() encodes every decision): it
// writes straight into a buffer the log reuses, so a steady-state event costs
// no allocation, where building an nlohmann tree cost ~90k instructions and
// dozens of allocations. Parsing and the rare session events keep nlohmann.
//
// The output is byte-identical to nlohmann's dump(-1, ' ', ensure_ascii=false):
// '"' '\\' \b \f \n \r \t escaped by name, other control bytes as \u00xx
// (lowercase hex), everything else verbatim. Strings are written as valid
// UTF-8: each byte that does not start a valid sequence becomes U+FFFD, the
// same result as toValidUtf8(). Commas are placed automatically (nesting up to
// 64 levels, far beyond any audit event).
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace sv::supervisor {

// Length of the valid UTF-8 sequence starting at s[i] (1-4), or 0 if the byte
// there does not start one. Overlongs, surrogates and > U+10FFFF are invalid.
inline size_t utf8SequenceLength(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  size_t len;
  uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    const auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  return len;
}

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  void beginObject() { open('{'); }
  void endObject() { close('}'); }
  void beginArray() { open('['); }
  void endArray() { close(']'); }

  // An object member name; `suffix` is appended (for "<name>_b64"). Names are
  // the schema's own identifiers, so they are written without escaping.
  void key(std::string_view name, std::string_view suffix = {}) {
    comma();
    out_ += '"';
    out_.append(name);
    out_.append(suffix);
    out_ += "\":";
    after_key_ = true;
  }

  // Returns false when `s` was not valid UTF-8 (and so was written lossily).
  bool string(std::string_view s) {
    comma();
    out_ += '"';
    const bool valid = escaped(s);
    out_ += '"';
    return valid;
  }
  // A string written in pieces (cmd_line = argv joined by spaces).
  void beginString() {
    comma();
    out_ += '"';
  }
  bool stringPiece(std::string_view s) { return escaped(s); }
  void endString() { out_ += '"'; }

  void number(int64_t v) { integer(v); }
  void unsignedNumber(uint64_t v) { integer(v); }
  void null() {
    comma();
    out_ += "null";
  }
  void boolean(bool v) {
    comma();
    out_ += v ? "true" : "false";
  }
  // Already-encoded JSON (a nested document dumped elsewhere).
  void raw(std::string_view json) {
    comma();
    out_.append(json);
  }

  // key + value shorthands.
  void member(std::string_view k, std::string_view v) {
    key(k);
    string(v);
  }
  void memberNumber(std::string_view k, int64_t v) {
    key(k);
    number(v);
  }

  std::string& out() { return out_; }

 private:
  template <typename T>
  void integer(T v) {
    comma();
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, r.ptr);
  }

  void open(char c) {
    comma();
    out_ += c;
    ++depth_;
    first_ |= bit();
  }
  void close(char c) {
    out_ += c;
    first_ &= ~bit();
    --depth_;
  }
  uint64_t bit() const { return depth_ < 64 ? uint64_t{1} << depth_ : 0; }

  // A value directly after its key, or the first element of a container,
  // needs no comma.
  void comma() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (depth_ == 0) return;
    if (first_ & bit()) {
      first_ &= ~bit();
    } else {
      out_ += ',';
    }
  }

  // Bytes the scan loop must stop at: controls, '"', '\\' and every non-ASCII
  // byte (which starts a UTF-8 sequence to validate).
  static constexpr bool kSpecial[256] = {
      1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
      0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
      1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
      1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
      1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

  bool escaped(std::string_view s) {
    static constexpr char kHex[] = "0123456789abcdef";
    const char* data = s.data();
    const size_t n = s.size();
    bool valid = true;
    size_t run = 0;  // start of the pending verbatim run
    size_t i = 0;
    while (i < n) {
      const auto c = static_cast<unsigned char>(data[i]);
      if (!kSpecial[c]) {
        ++i;
        continue;
      }
      if (c >= 0x80) {
        const size_t len = utf8SequenceLength(s, i);
        if (len) {
          i += len;
          continue;
        }
        valid = false;
      }
      out_.append(data + run, i - run);
      switch (c) {
        case '"': out_ += "\\\""; break;
        case '\\': out_ += "\\\\"; break;
        case '\b': out_ += "\\b"; break;
        case '\f': out_ += "\\f"; break;
        case '\n': out_ += "\\n"; break;
        case '\r': out_ += "\\r"; break;
        case '\t': out_ += "\\t"; break;
        default:
          if (c < 0x20) {
            const char u[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
            out_.append(u, sizeof u);
          } else {
            out_ += "\xEF\xBF\xBD";  // a byte that starts no valid UTF-8 sequence
          }
      }
      run = ++i;
    }
    out_.append(data + run, n - run);
    return valid;
  }

  std::string& out_;
  int depth_ = 0;
  uint64_t first_ = 0;  // bit d: the container at depth d has no member yet
  bool after_key_ = false;
};

}  // namespace sv::supervisor
