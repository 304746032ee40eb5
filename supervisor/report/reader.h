// Reads an audit file line by line in fixed memory: lines longer than
// kMaxLine are skipped (reported as such), never held whole.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

namespace sv::report {

inline constexpr size_t kMaxLine = 4 << 20;

// Calls on_line(line, number) for each line ("" lines included) and
// on_too_long(number) for each line past kMaxLine. false when `path` can't
// be opened or read ("-" is stdin); *error then says why.
bool forEachLine(const std::string& path,
                 const std::function<void(std::string_view, uint64_t)>& on_line,
                 const std::function<void(uint64_t)>& on_too_long, std::string* error);

// Reads every file into `report` (decodeLine, add / addMalformed).
class Report;
bool readTrail(const std::string& path, Report* report, std::string* error);

}  // namespace sv::report
