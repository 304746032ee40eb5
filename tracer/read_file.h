// readWholeFile(): a whole file (sysfs, /proc or regular) as a string.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"

namespace sv::tracer {

// Reads until EOF. Error carries errno and "open|read <path>".
inline Result<std::string> readWholeFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return errnoError("open " + path);
  std::string out;
  struct stat st;
  // /proc files report size 0: start small (zero-filling a large guess
  // showed up as 10% of a session's start-up CPU), double as needed.
  out.resize(::fstat(fd.get(), &st) == 0 && st.st_size > 0 ? size_t(st.st_size) + 1 : 16 << 10);
  size_t used = 0;
  for (;;) {
    if (used == out.size()) out.resize(out.size() * 2);
    const ssize_t n = ::read(fd.get(), out.data() + used, out.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errnoError("read " + path);
    }
    if (n == 0) break;
    used += size_t(n);
  }
  out.resize(used);
  return out;
}

}  // namespace sv::tracer
