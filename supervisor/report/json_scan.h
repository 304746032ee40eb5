// A validating JSON scanner that keeps only the members at a few known
// paths of one object and skips everything else without allocating: what
// `supervise report` needs of a ~1 KB audit line, at the speed of one pass
// over its bytes. nlohmann's parser (DOM or SAX) copies every character
// into token buffers and costs ~10 µs a line before any work is done (the
// measurement in docs/operators.md, "supervise report").
//
// It accepts exactly what nlohmann::json::parse() accepts (RFC 8259 strict:
// UTF-8 checked, surrogate pairs checked, a leading BOM allowed, a number
// that overflows a double rejected, nothing after the value but space or
// from a NUL byte on, which nlohmann takes for the end), and reads
// members the way a lookup in nlohmann's DOM would: a duplicate key replaces
// the earlier value whole, a path through a non-object is absent. Nesting
// depth is not limited (nlohmann's is not either); it costs one bit a level.
// tests/unit/report/ check it against the DOM decoder it replaced.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace sv::report {

// The members to keep, as paths of keys from the top object. Field i is the
// i-th path given. A path marked `join` is an argv: when its value is an
// array, its string elements are joined by spaces.
class FieldPaths {
 public:
  struct Path {
    std::initializer_list<std::string_view> keys;
    bool join = false;
  };
  FieldPaths(std::initializer_list<Path> paths);
  size_t size() const { return fields_; }

 private:
  friend class JsonScanner;
  struct Node {
    std::string_view key;
    int parent = -1;
    int field = -1;
    bool join = false;
    std::vector<int> children;  // node indexes
    std::vector<int> subtree;   // fields at or below this node
  };
  int child(int node, std::string_view key) const;
  static size_t slot(std::string_view key);
  std::vector<Node> nodes_;  // [0] is the top object
  // child() is called for every key of every kept object: a hash of
  // (node, key) into kSlots entries of candidate child nodes, linear probing.
  static constexpr size_t kSlots = 1024;
  std::vector<int> table_;
  size_t fields_ = 0;
};

// What a field held after a scan. Views point into the scanned line or into
// the value's own buffer; both stay valid until the next scan.
struct FieldValue {
  enum Type : uint8_t { kAbsent, kString, kInteger, kOther };
  Type type = kAbsent;  // kOther: null, bool, float, object or array
  bool array = false;
  std::string_view text;  // kString: the string; a `join` array: the joined elements
  int64_t integer = 0;    // kInteger (an unsigned past INT64_MAX wraps, as get<int64_t>())
  std::string buffer;     // backs `text` when it had escapes or was joined
};

enum class ScanResult { kObject, kNotObject, kInvalid };

// s->clear(), keeping its memory for the next line only when that is small:
// one hostile line of huge strings must not leave megabytes held per field.
void clearForReuse(std::string* s);

// Scans lines; keeps its buffers between them so that a scan allocates only
// when a line needs more than any line before it.
class JsonScanner {
 public:
  explicit JsonScanner(const FieldPaths& paths);
  ScanResult scan(std::string_view line);
  const FieldValue& operator[](size_t field) const { return values_[field]; }

 private:
  struct Target {
    int node = -1;  // the paths node the value is at, -1 when not kept
    int join = -1;  // or: an element of this join field's array
  };
  bool value(Target target);
  bool string(std::string_view* out, std::string* buffer, bool want);
  bool number(bool* is_integer, int64_t* integer);
  void reset(int node);
  void skipSpace();

  const FieldPaths& paths_;
  std::vector<FieldValue> values_;
  std::string_view in_;
  size_t pos_ = 0;
  std::vector<uint64_t> kinds_;  // one bit per open container: 1 object, 0 array
  std::vector<int> contexts_;    // value()'s, kept for its capacity
  std::string key_buffer_, number_buffer_, element_buffer_;
};

}  // namespace sv::report
