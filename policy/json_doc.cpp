// JSON parsing with positions (see json_doc.h).
#include "policy/json_doc.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace sv::policy {
namespace {

using nlohmann::json;

// Converts byte offsets to line:column.
class LineIndex {
 public:
  explicit LineIndex(std::string_view text) {
    starts_.push_back(0);
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\n') starts_.push_back(i + 1);
    }
  }
  TextPos at(size_t offset) const {
    size_t lo = 0, hi = starts_.size();
    while (hi - lo > 1) {
      size_t mid = (lo + hi) / 2;
      if (starts_[mid] <= offset) lo = mid; else hi = mid;
    }
    return {static_cast<int>(lo + 1), static_cast<int>(offset - starts_[lo] + 1)};
  }

 private:
  std::vector<size_t> starts_;
};

// Builds the DOM; positions come from a cursor that skips to the next token in
// the text. nlohmann has validated the text up to each callback, so the cursor
// only has to recognise token boundaries, never report errors.
class PositionSax {
 public:
  PositionSax(std::string_view text, JsonDoc* doc) : text_(text), lines_(text), doc_(doc) {}

  bool null() { return value(json(nullptr)); }
  bool boolean(bool v) { return value(json(v)); }
  bool number_integer(json::number_integer_t v) { return value(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return value(json(v)); }
  bool number_float(json::number_float_t v, const std::string&) { return value(json(v)); }
  bool string(std::string& v) { return value(json(std::move(v))); }
  bool binary(json::binary_t&) { return value(json(nullptr)); }

  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(std::string& k) {
    size_t start = nextToken();
    Frame& f = stack_.back();
    if (f.node->contains(k)) {
      dup_error_ = true;
      dup_pos_ = lines_.at(start);
      dup_key_ = k;
      return false;
    }
    f.key = k;
    pending_key_pos_ = lines_.at(start);
    return true;
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) {
    err_offset_ = position == 0 ? 0 : position - 1;
    std::string msg = ex.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..."
    if (size_t p = msg.find(": "); p != std::string::npos && msg.find("parse error") < p) {
      msg = msg.substr(p + 2);
    } else if (size_t q = msg.find("] "); q != std::string::npos) {
      msg = msg.substr(q + 2);
    }
    err_message_ = msg;
    return false;
  }

  bool duplicate() const { return dup_error_; }
  bool tooDeep() const { return too_deep_; }
  TextPos dupPos() const { return dup_pos_; }
  const std::string& dupKey() const { return dup_key_; }
  size_t errOffset() const { return err_offset_; }
  const std::string& errMessage() const { return err_message_; }
  TextPos posAt(size_t off) const { return lines_.at(off); }

 private:
  struct Frame {
    json* node;
    std::string pointer;
    std::string key;  // last key seen (objects)
  };

  // Skips whitespace and structural characters that never start a token, and
  // consumes the token that starts there. Returns its start offset.
  size_t nextToken() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == ':' || c == ']' ||
          c == '}') {
        ++pos_;
        continue;
      }
      break;
    }
    size_t start = pos_;
    if (pos_ >= text_.size()) return start;
    char c = text_[pos_];
    if (c == '"') {
      ++pos_;
      while (pos_ < text_.size() && text_[pos_] != '"') pos_ += text_[pos_] == '\\' ? 2 : 1;
      ++pos_;
    } else if (c == '{' || c == '[') {
      ++pos_;
    } else {
      while (pos_ < text_.size()) {
        char d = text_[pos_];
        if (d == ',' || d == ']' || d == '}' || d == ' ' || d == '\n' || d == '\t' || d == '\r')
          break;
        ++pos_;
      }
    }
    return start;
  }

  std::string childPointer(TextPos* key_pos) {
    if (stack_.empty()) return "";
    Frame& f = stack_.back();
    if (f.node->is_array()) return pointerAppend(f.pointer, std::to_string(f.node->size()));
    *key_pos = pending_key_pos_;
    return pointerAppend(f.pointer, f.key);
  }

  json* insert(json v) {
    if (stack_.empty()) {
      doc_->root = std::move(v);
      return &doc_->root;
    }
    Frame& f = stack_.back();
    if (f.node->is_array()) {
      f.node->push_back(std::move(v));
      return &f.node->back();
    }
    json& slot = (*f.node)[f.key];
    slot = std::move(v);
    return &slot;
  }

  bool value(json v) {
    size_t start = nextToken();
    NodePos np;
    std::string ptr = childPointer(&np.key);
    np.value = lines_.at(start);
    doc_->positions[ptr] = np;
    insert(std::move(v));
    return true;
  }

  bool open(json v) {
    size_t start = nextToken();
    if (stack_.size() >= kMaxJsonDepth) {
      // Each level's pointer names all its ancestors: unbounded nesting
      // would cost memory quadratic in the depth (and no policy needs it).
      too_deep_ = true;
      dup_pos_ = lines_.at(start);
      return false;
    }
    NodePos np;
    std::string ptr = childPointer(&np.key);
    np.value = lines_.at(start);
    doc_->positions[ptr] = np;
    json* node = insert(std::move(v));
    stack_.push_back({node, ptr, {}});
    return true;
  }

  bool close() {
    stack_.pop_back();
    return true;
  }

  std::string_view text_;
  LineIndex lines_;
  JsonDoc* doc_;
  size_t pos_ = 0;
  std::vector<Frame> stack_;
  TextPos pending_key_pos_;
  bool dup_error_ = false;
  bool too_deep_ = false;
  TextPos dup_pos_;  // where the duplicate key or the too-deep value starts
  std::string dup_key_;
  size_t err_offset_ = 0;
  std::string err_message_;
};

}  // namespace

std::string pointerAppend(const std::string& pointer, std::string_view token) {
  std::string out = pointer;
  out.push_back('/');
  for (char c : token) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out.push_back(c);
  }
  return out;
}

TextPos JsonDoc::keyPos(const std::string& pointer) const {
  auto it = positions.find(pointer);
  if (it == positions.end()) return {};
  return it->second.key.line ? it->second.key : it->second.value;
}

TextPos JsonDoc::valuePos(const std::string& pointer) const {
  auto it = positions.find(pointer);
  return it == positions.end() ? TextPos{} : it->second.value;
}

bool parseJsonDoc(std::string_view text, JsonDoc* out, JsonParseError* error) {
  out->root = nullptr;
  out->positions.clear();
  PositionSax sax(text, out);
  bool ok = false;
  try {
    ok = json::sax_parse(text.begin(), text.end(), &sax);
  } catch (const std::exception& e) {
    // sax_parse reports through parse_error; anything else is a bug in the
    // input adapter we still must not let escape.
    if (error) *error = {{1, 1}, e.what()};
    return false;
  }
  if (ok) return true;
  if (error) {
    if (sax.duplicate()) {
      *error = {sax.dupPos(), "duplicate key \"" + sax.dupKey() + "\""};
    } else if (sax.tooDeep()) {
      *error = {sax.dupPos(), "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels"};
    } else {
      // nlohmann reports how far it read; point at the start of the token it
      // choked on instead (skip back over whitespace, then over a bare word).
      size_t off = text.empty() ? 0 : std::min(sax.errOffset(), text.size() - 1);
      auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
      auto word = [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+';
      };
      while (off > 0 && space(text[off])) --off;
      if (off < text.size() && word(text[off])) {
        while (off > 0 && word(text[off - 1])) --off;
      }
      *error = {sax.posAt(off), sax.errMessage().empty() ? "invalid JSON" : sax.errMessage()};
    }
  }
  return false;
}

}  // namespace sv::policy
