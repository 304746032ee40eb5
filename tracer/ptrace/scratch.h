// The scratch region: where the tracer writes the path an allowed open runs on.
//
// Under ptrace the kernel reads a syscall's path only after the tracer lets
// the syscall go, so a path left in the target's own memory could be
// rewritten by another thread between the decision and that read. The
// tracer instead writes the decided path into this region and points the
// syscall at it: a private anonymous mapping at a fixed address, mapped
// read-only into every new image at exec (before its first instruction) and
// written only through /proc/PID/mem (which may write read-only pages; the
// tree's own opens of any /proc/PID/mem for writing are refused). The
// filter's guard (trace_filter.h) sends every mmap, mprotect, munmap,
// mremap, madvise, pkey_mprotect, remap_file_pages and shmat below
// kScratchGuardEnd to the tracer, which refuses those that touch the region,
// so no task can make it writable, move it or map over it. fork copies it
// with the rest of the address space; a task sharing the address space
// (threads, vfork) shares its slots.
#pragma once

#include <cstdint>

namespace sv::tracer::scratch {

inline constexpr uint64_t kBase = 0x100000;         // 1 MiB: above vm.mmap_min_addr, below
                                                     // where a non-PIE image loads (4 MiB)
inline constexpr uint64_t kSlotBytes = 8192;         // a path (PATH_MAX) and an open_how
inline constexpr unsigned kSlots = 64;               // concurrent opens per address space
inline constexpr uint64_t kBytes = kSlotBytes * kSlots;
inline constexpr uint64_t kGuardEnd = 0x200000;      // calls with an address below go to the tracer
inline constexpr uint64_t kHowOffset = 4096;         // the open_how within a slot

inline constexpr uint64_t slotAddress(unsigned slot) { return kBase + slot * kSlotBytes; }

// True when [addr, addr + len) overlaps the region.
inline constexpr bool overlaps(uint64_t addr, uint64_t len) {
  return len > 0 && addr < kBase + kBytes && addr + len > kBase && addr + len > addr;
}

// SECCOMP_RET_DATA of the guard's RET_TRACE; the notified syscalls carry 0.
inline constexpr uint16_t kGuardTraceData = 1;

}  // namespace sv::tracer::scratch
