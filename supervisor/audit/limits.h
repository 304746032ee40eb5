// How much of a string the supervised command controls an audit event keeps.
//
// Paths and argv come from the traced processes: a hostile or merely huge
// command line (a linker's) must not make one event megabytes long, which a
// syslog receiver would cut or drop. Every format cuts at these limits, on a
// UTF-8 boundary, and marks the event `truncated` (docs/audit-events.md).
// The readers of /proc cmdline and of an execve's argv in target memory read
// more than this, so a cut made while reading is seen and flagged here too;
// the BPF process tracker, whose buffer is smaller, flags its own cut
// (AuditEvent::truncated).
#pragma once

#include <cstddef>

namespace sv::supervisor {

inline constexpr size_t kAuditMaxPathBytes = 4096;  // PATH_MAX: file, exec, exe, cwd, unix_path
inline constexpr size_t kAuditMaxArgBytes = 1024;   // one argv element
inline constexpr size_t kAuditMaxArgs = 256;        // argv elements kept
inline constexpr size_t kAuditMaxArgvBytes = 32 * 1024;  // all kept elements together

}  // namespace sv::supervisor
