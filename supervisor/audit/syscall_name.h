// The names events give system calls: libseccomp's table, by audit arch.
#pragma once

#include <linux/audit.h>

#include <cstdint>
#include <string>

namespace sv::supervisor {

#if defined(__x86_64__)
inline constexpr uint32_t kNativeAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
inline constexpr uint32_t kNativeAuditArch = AUDIT_ARCH_AARCH64;
#else
inline constexpr uint32_t kNativeAuditArch = 0;  // unknown: the event's arch is ""
#endif

// "openat" for (AUDIT_ARCH_X86_64, 257); "" for a negative or unknown number.
std::string syscallName(uint32_t arch, int64_t nr);

}  // namespace sv::supervisor
