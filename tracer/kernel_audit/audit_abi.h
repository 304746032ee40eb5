// Kernel audit and Landlock-audit UAPI constants newer than the build host's headers.
//
// Debian 12's linux-libc-dev (6.1) has no AUDIT_LANDLOCK_* record types and no
// landlock_restrict_self() log flags (both ABI 7, 6.15). The values are fixed kernel
// ABI, defined under our own names so they never clash with a newer system header;
// users probe the running kernel (Landlock ABI version, AUDIT_GET) before relying on them.
#pragma once

#include <cstdint>

namespace sv::tracer::kernel_audit::abi {

// Record types (include/uapi/linux/audit.h).
inline constexpr uint16_t kAuditSyscall = 1300;
inline constexpr uint16_t kAuditEoe = 1320;  // end of a multi-record event
inline constexpr uint16_t kAuditSeccomp = 1326;
inline constexpr uint16_t kAuditProctitle = 1327;
inline constexpr uint16_t kAuditEventListener = 1335;  // a multicast listener (un)bound
inline constexpr uint16_t kAuditLandlockAccess = 1423;
inline constexpr uint16_t kAuditLandlockDomain = 1424;
inline constexpr uint16_t kAuditAnomAbend = 1701;  // a process died of a signal

// Multicast group of the read-only log socket (AUDIT_NLGRP_READLOG); needs CAP_AUDIT_READ.
inline constexpr unsigned kAuditNlgrpReadlog = 1;

// landlock_restrict_self() flags, Landlock ABI 7.
inline constexpr uint32_t kLandlockRestrictSelfLogSameExecOff = 1U << 0;
inline constexpr uint32_t kLandlockRestrictSelfLogNewExecOn = 1U << 1;
inline constexpr uint32_t kLandlockRestrictSelfLogSubdomainsOff = 1U << 2;
inline constexpr long kLandlockAbiWithAudit = 7;

// seccomp return actions as they appear in an AUDIT_SECCOMP record's code= field.
inline constexpr uint32_t kSeccompRetKillProcess = 0x80000000U;
inline constexpr uint32_t kSeccompRetKillThread = 0x00000000U;
inline constexpr uint32_t kSeccompRetTrap = 0x00030000U;
inline constexpr uint32_t kSeccompRetErrno = 0x00050000U;
inline constexpr uint32_t kSeccompRetUserNotif = 0x7fc00000U;
inline constexpr uint32_t kSeccompRetTrace = 0x7ff00000U;
inline constexpr uint32_t kSeccompRetLog = 0x7ffc0000U;
inline constexpr uint32_t kSeccompRetAllow = 0x7fff0000U;
inline constexpr uint32_t kSeccompRetActionFull = 0xffff0000U;
inline constexpr uint32_t kSeccompRetData = 0x0000ffffU;

}  // namespace sv::tracer::kernel_audit::abi
