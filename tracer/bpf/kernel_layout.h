// findKernelLayout(): the offsets of the few kernel struct members the
// process-tracking programs read (bpf/progs/proc.bpf.c), from the running
// kernel's BTF.
//
// A small scanner rather than libbpf CO-RE: libbpf parses the whole kernel
// BTF (~130k types) for relocations or a tp_btf attach point, ~30 ms at every
// start-up on this host; this pass indexes type positions and looks up 13
// members (~1.5 ms), and ProcTracker caches the result for the boot.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

namespace sv::tracer {

// Byte offsets of the kernel struct members the programs read.
struct KernelLayout {
  uint32_t task_pid = 0, task_tgid = 0, task_real_parent = 0, task_start_boottime = 0,
           task_mm = 0;
  uint32_t mm_arg_start = 0, mm_arg_end = 0;
  uint32_t bprm_file = 0, bprm_filename = 0;
  uint32_t file_inode = 0, inode_ino = 0, inode_sb = 0, sb_dev = 0;
};

// Scans a BTF blob (default: the running kernel's) for those members,
// descending into anonymous struct/union members. ENOENT names what is missing.
Result<KernelLayout> findKernelLayout(const std::string& btf_path = "/sys/kernel/btf/vmlinux");

}  // namespace sv::tracer
