// process_vm_readv wrappers, page-boundary aware.
#include "tracer/seccomp/target_memory.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sv::tracer {
namespace {

constexpr size_t kPageSize = 4096;  // x86_64; only a chunking granularity

ssize_t readOnce(pid_t pid, uint64_t addr, void* buf, size_t len) {
  iovec local{buf, len};
  iovec remote{reinterpret_cast<void*>(addr), len};
  ssize_t n;
  do {
    n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
  } while (n < 0 && errno == EINTR);
  return n;
}

}  // namespace

Result<size_t> readTargetMemory(pid_t pid, uint64_t addr, void* buf, size_t len) {
  if (len == 0) return size_t{0};
  size_t done = 0;
  auto* out = static_cast<char*>(buf);
  while (done < len) {
    ssize_t n = readOnce(pid, addr + done, out + done, len - done);
    if (n < 0) {
      if (done > 0 && errno == EFAULT) break;  // ran into unmapped memory: short read
      return Error{errno, "process_vm_readv"};
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  if (done == 0) return Error{EFAULT, "process_vm_readv"};
  return done;
}

Result<size_t> readTargetString(pid_t pid, uint64_t addr, char* buf, size_t cap) {
  if (cap == 0) return Error{EINVAL, "readTargetString: zero capacity"};
  size_t done = 0;
  while (done < cap) {
    // Never cross a page boundary in one read: a string that ends right before
    // an unmapped page would otherwise fail as a whole.
    uint64_t cur = addr + done;
    size_t chunk = kPageSize - (cur % kPageSize);
    if (chunk > cap - done) chunk = cap - done;
    ssize_t n = readOnce(pid, cur, buf + done, chunk);
    if (n <= 0) {
      buf[done < cap ? done : cap - 1] = '\0';
      return Error{n < 0 ? errno : EFAULT, "process_vm_readv string"};
    }
    if (void* nul = std::memchr(buf + done, '\0', static_cast<size_t>(n))) {
      return static_cast<size_t>(static_cast<char*>(nul) - buf);
    }
    done += static_cast<size_t>(n);
  }
  buf[cap - 1] = '\0';
  return Error{ENAMETOOLONG, "readTargetString: no NUL within capacity"};
}

}  // namespace sv::tracer
