// The one parser of /proc/PID/stat ("pid (comm) state ppid ... starttime
// ..."), for a process's parent and start time (the identity that survives
// pid reuse: BPF slot owners, the process cache) and its comm. comm is the
// process's own to set (prctl PR_SET_NAME): it may hold spaces and
// parentheses, so the fields after it are counted from the line's LAST ')'.
// The parsers are pure string work; readProcStat() reads the line.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <optional>
#include <string_view>

#include "common/read_file.h"

namespace sv {

// Field numbers as proc(5) counts them (1-based).
inline constexpr int kStatParentPid = 4;
inline constexpr int kStatStartTime = 22;

// comm, between the first '(' and the last ')'; nullopt for a malformed line.
inline std::optional<std::string_view> procStatComm(std::string_view line) {
  const size_t open = line.find('('), close = line.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    return std::nullopt;
  return line.substr(open + 1, close - open - 1);
}

// Field `field` (>= 3: the ones after comm) as a number; nullopt when the
// line is malformed or ends before it.
template <typename T>
std::optional<T> procStatNumber(std::string_view line, int field) {
  const size_t close = line.rfind(')');
  if (close == std::string_view::npos || field < 3) return std::nullopt;
  line.remove_prefix(close + 1);
  for (int at = 3;; ++at) {
    const size_t start = line.find_first_not_of(' ');
    if (start == std::string_view::npos) return std::nullopt;
    line.remove_prefix(start);
    const size_t end = std::min(line.find_first_of(" \n"), line.size());
    if (end == 0) return std::nullopt;
    if (at == field) {
      T out{};
      auto [ptr, ec] = std::from_chars(line.data(), line.data() + end, out);
      if (ec != std::errc() || ptr != line.data() + end) return std::nullopt;
      return out;
    }
    line.remove_prefix(end);
  }
}

// /proc/PID/stat into the caller's buffer, with no allocation (the start-time
// checks run on decision paths); the line, or nullopt when the process is
// gone. comm is at most 16 bytes, so 1 KiB holds far more than field 22.
inline std::optional<std::string_view> readProcStat(pid_t pid, char* buf, size_t size) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  const ssize_t n = readFilePrefix(path, buf, size);
  if (n <= 0) return std::nullopt;
  return std::string_view(buf, static_cast<size_t>(n));
}

}  // namespace sv
