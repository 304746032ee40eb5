// JsonDoc: a parsed JSON document that remembers where every key and value
// came from (line:column), so validation errors can point at the text.
//
// nlohmann/json 3.11 records no positions, so parseJsonDoc() drives
// nlohmann::json::sax_parse with its own SAX handler that builds the DOM and,
// in lockstep, walks a small cursor over the same (already validated) text to
// find where each token starts. Exceptions never leave this file.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace sv::policy {

struct TextPos {
  int line = 0;    // 1-based; 0 = unknown
  int column = 0;  // 1-based, in bytes
};

struct NodePos {
  TextPos key;    // position of the member name (objects only)
  TextPos value;  // position of the value's first character
};

struct JsonDoc {
  std::string name;  // file name shown in diagnostics
  nlohmann::json root;
  std::map<std::string, NodePos> positions;  // by JSON pointer ("" = root)

  TextPos keyPos(const std::string& pointer) const;
  TextPos valuePos(const std::string& pointer) const;
};

struct JsonParseError {
  TextPos pos;
  std::string message;
};

// Objects and arrays nested deeper than this are an error (a policy needs 4).
inline constexpr size_t kMaxJsonDepth = 64;

// Parses `text`. On a syntax error (or a duplicate key, or nesting deeper
// than kMaxJsonDepth) returns false and sets *error; never throws.
bool parseJsonDoc(std::string_view text, JsonDoc* out, JsonParseError* error);

// Appends `token` to `pointer` with RFC 6901 escaping (`~` → `~0`, `/` → `~1`).
std::string pointerAppend(const std::string& pointer, std::string_view token);

}  // namespace sv::policy
