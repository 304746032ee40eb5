// decodeLineDom(): the nlohmann-DOM decoder that decodeLine() replaced, the
// reference it is tested against (dom_decoder.cpp), and decodeLineExpected():
// what decodeLine() must give: that reference itself, since RapidJSON and
// the handler of record.cpp read every line as nlohmann did
// (supervisor/report/README.md, "RapidJSON and nlohmann").
#pragma once

#include <string>
#include <string_view>

#include "supervisor/report/record.h"

namespace sv::report::testing {

// Which value of a key repeated in one object is read: nlohmann's DOM keeps
// the last (and so does decodeLine()); kFirst is how simdjson read it.
enum class DuplicateKeys { kLast, kFirst };

bool decodeLineDom(std::string_view line, Record* out, std::string* why,
                   DuplicateKeys keys = DuplicateKeys::kLast);

// The lines nlohmann and simdjson (the parser before RapidJSON) didn't read
// alike (dom_decoder.cpp says how each is found); dom_diff_test.cpp checks
// decodeLine() reads each as nlohmann does.
struct Differences {
  // A NUL byte: nlohmann ends the input there, simdjson rejects it.
  bool nul = false;
  // An object repeats a key.
  bool duplicate_keys = false;
  // An integer outside int64/uint64: a double for nlohmann, an error for simdjson.
  bool big_integer = false;
  // A non-empty object or array at level 1024: past simdjson's max depth.
  bool too_deep = false;
};
Differences differencesOf(std::string_view line);

// What decodeLine() must give: decodeLineDom(), no difference applied.
bool decodeLineExpected(std::string_view line, Record* out, std::string* why);

}  // namespace sv::report::testing
