// The one file reader of the tree: procfs, sysfs, securityfs and regular
// files (policy files) alike.
//
// Three shapes for three kinds of caller:
//   readWholeFile()   a Result with the whole file, or EFBIG beyond a limit
//                     (policy files, cgroup and BPF pins, kernel layout);
//   readFileInto()    into a string the caller keeps, cut at a limit, so a
//                     reader called per event reuses its capacity (/proc/PID);
//   readFilePrefix()  into a caller's stack buffer, no allocation at all
//                     (the decision path: /proc/TID/status, /proc/PID/stat).
// The last two also read `name` under an open directory (the `At` forms), as
// the readers of one process's /proc directory do.
// Every open is O_NONBLOCK | O_NOCTTY: a FIFO or a terminal named where a
// file is expected must not hang or adopt us.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"

namespace sv {

namespace detail {
inline int openForReading(const char* path, int dirfd = AT_FDCWD) {
  return ::openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
}
}  // namespace detail

// Reads until EOF. Error carries errno and "open|read <path>"; EFBIG when the
// file holds more than max_bytes.
inline Result<std::string> readWholeFile(const std::string& path, size_t max_bytes = SIZE_MAX) {
  UniqueFd fd(detail::openForReading(path.c_str()));
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
    if (used > max_bytes) return Error{EFBIG, "read " + path};
  }
  out.resize(used);
  return out;
}

// All of an open file from its start, with pread (the fd's offset stays):
// a /proc seq file such as mountinfo is formatted afresh at each read.
inline Result<std::string> readAllFrom(int fd) {
  std::string text;
  char buf[16384];
  for (ssize_t n; (n = ::pread(fd, buf, sizeof buf, off_t(text.size()))) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errnoError("read");
    text.append(buf, size_t(n));
  }
  return text;
}

// The file's first max_bytes bytes (all of it when shorter) into `out`,
// whose capacity is reused. False when it can't be opened or read (a process
// that exited while we read: ESRCH). A procfs file shorter than what was
// asked for hands out all it has in one read: with `short_read_ends`, a read
// that returns less than asked ends it without a read of EOF.
inline bool readFileIntoAt(int dirfd, const char* name, std::string& out, size_t max_bytes,
                           bool short_read_ends = false) {
  out.clear();
  UniqueFd fd(detail::openForReading(name, dirfd));
  if (!fd) return false;
  char buf[4096];
  while (out.size() < max_bytes) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) break;
    out.append(buf, size_t(n));
    if (short_read_ends && size_t(n) < sizeof buf) break;
  }
  if (out.size() > max_bytes) out.resize(max_bytes);
  return true;
}

inline bool readFileInto(const std::string& path, std::string& out, size_t max_bytes) {
  return readFileIntoAt(AT_FDCWD, path.c_str(), out, max_bytes);
}

// One read of at most size - 1 bytes into buf, NUL-terminated: the length, or
// -1 when the file can't be opened or read or is empty. procfs hands out a
// small file whole in one read.
inline ssize_t readFilePrefixAt(int dirfd, const char* name, char* buf, size_t size) {
  UniqueFd fd(detail::openForReading(name, dirfd));
  if (!fd || size == 0) return -1;
  ssize_t n;
  do {
    n = ::read(fd.get(), buf, size - 1);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return -1;
  buf[n] = '\0';
  return n;
}

inline ssize_t readFilePrefix(const char* path, char* buf, size_t size) {
  return readFilePrefixAt(AT_FDCWD, path, buf, size);
}

}  // namespace sv
