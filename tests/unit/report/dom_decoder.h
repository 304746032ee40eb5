// decodeLineDom(): the nlohmann-DOM decoder that decodeLine() replaced, the
// reference it is tested against (dom_decoder.cpp), and decodeLineExpected():
// that reference with the differences between nlohmann and simdjson applied
// (supervisor/report/README.md, "simdjson and nlohmann"), so that the tests
// and report_fuzz compare the two decoders on every line, those included.
#pragma once

#include <string>
#include <string_view>

#include "supervisor/report/record.h"

namespace sv::report::testing {

// Which value of a key repeated in one object is read: nlohmann's DOM keeps
// the last; simdjson's at_key() finds the first.
enum class DuplicateKeys { kLast, kFirst };

bool decodeLineDom(std::string_view line, Record* out, std::string* why,
                   DuplicateKeys keys = DuplicateKeys::kLast);

// The lines nlohmann and simdjson don't read alike (dom_decoder.cpp says how
// each is found).
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

// What decodeLine() must give: "not JSON" for a NUL byte, and for a line
// nlohmann accepts with an integer past 64 bits or nesting past simdjson's
// depth; otherwise decodeLineDom() reading the first of duplicate keys.
bool decodeLineExpected(std::string_view line, Record* out, std::string* why);

}  // namespace sv::report::testing
