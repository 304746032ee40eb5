// The one parser of /proc/PID/status ("Key:\tvalue\n" lines), for the
// umask and thread group of a notifying thread, the uids and gids an audit
// event reports, and the supervisor's own capabilities in `doctor`. Pure
// string work: the caller reads the file (common/read_file.h).
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace sv {

// The value of the line "<key>:<tabs or spaces><value>", without the leading
// blanks and the newline; nullopt when no line starts with "<key>:".
inline std::optional<std::string_view> procStatusField(std::string_view status,
                                                       std::string_view key) {
  for (size_t at = 0; at < status.size();) {
    size_t end = status.find('\n', at);
    if (end == std::string_view::npos) end = status.size();
    std::string_view line = status.substr(at, end - at);
    if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == ':') {
      line.remove_prefix(key.size() + 1);
      const size_t first = line.find_first_not_of(" \t");
      return first == std::string_view::npos ? std::string_view() : line.substr(first);
    }
    at = end + 1;
  }
  return std::nullopt;
}

// The n-th (0-based) blank-separated number of the field, in `base`: "Uid:"
// holds real, effective, saved and filesystem ids; "Umask:" one octal number.
template <typename T>
std::optional<T> procStatusNumber(std::string_view status, std::string_view key, size_t n = 0,
                                  int base = 10) {
  auto value = procStatusField(status, key);
  if (!value) return std::nullopt;
  std::string_view rest = *value;
  for (size_t i = 0;; ++i) {
    const size_t start = rest.find_first_not_of(" \t");
    if (start == std::string_view::npos) return std::nullopt;
    rest.remove_prefix(start);
    T out{};
    auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), out, base);
    if (ec != std::errc()) return std::nullopt;
    if (i == n) return out;
    rest.remove_prefix(size_t(ptr - rest.data()));
  }
}

}  // namespace sv
