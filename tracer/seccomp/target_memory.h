// Reading a supervised process's memory (syscall arguments behind pointers).
//
// process_vm_readv, never /proc/<pid>/mem: no fd to keep per process, and it
// fails cleanly (EFAULT/ESRCH) instead of blocking. Neither function allocates,
// so both may run on the notification hot path. Both are async-signal-safe.
// What is read is a snapshot another target thread may change a moment later:
// decide on it, then emulate the syscall yourself; never CONTINUE on it.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "common/result.h"

namespace sv::tracer {

// Reads up to `len` bytes at `addr` in `pid`. Returns the number read, which is
// short only when the range runs into unmapped memory (0 bytes → EFAULT error).
Result<size_t> readTargetMemory(pid_t pid, uint64_t addr, void* buf, size_t len);

// Reads a NUL-terminated string at `addr` into `buf` (capacity `cap`, >= 1).
// Reads page by page so a string ending just before an unmapped page is still
// read. Returns its length (without NUL; buf is NUL-terminated). ENAMETOOLONG
// when no NUL within the first cap bytes, EFAULT when the string runs into unmapped
// memory.
Result<size_t> readTargetString(pid_t pid, uint64_t addr, char* buf, size_t cap);

}  // namespace sv::tracer
