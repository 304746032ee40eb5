// Kernel UAPI constants newer than the build host's headers.
//
// Debian 12 ships linux-libc-dev 6.1, but the supervisor runs on newer kernels
// (Landlock ABI 4-7, SECCOMP_IOCTL_NOTIF_SET_FLAGS, cgroup.kill, fchmodat2).
// The values here are fixed kernel ABI; they are defined under our own names
// so they never clash with a newer system header. Every user probes the
// running kernel before relying on one of them.
#pragma once

#include <linux/seccomp.h>
#include <sys/ioctl.h>

#include <cstdint>

namespace sv::tracer::abi {

// ---- Landlock (include/uapi/linux/landlock.h) ----
inline constexpr unsigned kLandlockCreateRulesetVersion = 1U << 0;
inline constexpr int kLandlockRulePathBeneath = 1;

inline constexpr uint64_t kFsExecute = 1ULL << 0;
inline constexpr uint64_t kFsWriteFile = 1ULL << 1;
inline constexpr uint64_t kFsReadFile = 1ULL << 2;
inline constexpr uint64_t kFsReadDir = 1ULL << 3;
inline constexpr uint64_t kFsRemoveDir = 1ULL << 4;
inline constexpr uint64_t kFsRemoveFile = 1ULL << 5;
inline constexpr uint64_t kFsMakeChar = 1ULL << 6;
inline constexpr uint64_t kFsMakeDir = 1ULL << 7;
inline constexpr uint64_t kFsMakeReg = 1ULL << 8;
inline constexpr uint64_t kFsMakeSock = 1ULL << 9;
inline constexpr uint64_t kFsMakeFifo = 1ULL << 10;
inline constexpr uint64_t kFsMakeBlock = 1ULL << 11;
inline constexpr uint64_t kFsMakeSym = 1ULL << 12;
inline constexpr uint64_t kFsRefer = 1ULL << 13;     // ABI 2
inline constexpr uint64_t kFsTruncate = 1ULL << 14;  // ABI 3
inline constexpr uint64_t kFsIoctlDev = 1ULL << 15;  // ABI 5

// landlock_restrict_self() flags (ABI 7): denials after an execve are logged
// only with this one (the supervised command always starts with an execve).
inline constexpr unsigned kLandlockRestrictSelfLogNewExecOn = 1U << 1;
inline constexpr int kLandlockAbiWithAudit = 7;

inline constexpr uint64_t kScopeAbstractUnixSocket = 1ULL << 0;  // ABI 6
inline constexpr uint64_t kScopeSignal = 1ULL << 1;              // ABI 6

// struct landlock_ruleset_attr as of ABI 6. The kernel accepts a larger struct
// than it knows as long as the unknown tail is zero (copy_struct_from_user),
// so passing the full struct to an older kernel is fine when the new fields are 0.
struct LandlockRulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;  // ABI 4
  uint64_t scoped;              // ABI 6
};

struct __attribute__((packed)) LandlockPathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
};
static_assert(sizeof(LandlockPathBeneathAttr) == 12);

// ---- seccomp user-notify ----
// SECCOMP_IOCTL_NOTIF_SET_FLAGS (6.6) and its only flag.
inline constexpr unsigned long kSeccompIoctlNotifSetFlags = SECCOMP_IOW(4, __u64);
inline constexpr uint64_t kSeccompUserNotifFdSyncWakeUp = 1ULL << 0;

// ---- syscall numbers (x86_64) missing from the 6.1 headers ----
inline constexpr int kNrFchmodat2 = 452;

}  // namespace sv::tracer::abi
