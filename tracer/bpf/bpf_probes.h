// Real attempts at the BPF program and map types supervise uses: each loads
// a program of two to seven instructions (or creates a map) and attaches it
// for an instant, never a kernel version check. `supervise doctor` reports
// them (supervisor/host/host_report.cpp); the network filter asks whether
// the unix-socket hooks load before it loads them.
//
// The string answers are "" on success, else which step failed and the errno.
#pragma once

#include <bpf/libbpf.h>

#include <string>

#include "common/result.h"

namespace sv::tracer {

// Loads `type` with a BTF attach target (tp_btf / lsm) and attaches it.
std::string loadAndAttachBtfProg(bpf_prog_type type, bpf_attach_type attach, const char* target,
                                 int btf_kind, const char* section);

// Whether an LSM program attached to the hook with BTF id `lsm_hook_btf_id`
// (bpf_lsm_<hook>) may call bpf_d_path: the kernel allows it only in its
// list of hooks (6.1 refuses it in the path_* hooks that 6.12 allows). A
// seven-instruction program whose bpf_d_path call has a null path: the
// verifier checks the helper's permission before its arguments, so only
// "helper call is not allowed in probe" means no. *detail gets the refusal.
bool lsmHookAllowsDPath(int lsm_hook_btf_id, std::string* detail = nullptr);

// raw_tp: loads and attaches to sched_process_exec (no BTF needed).
std::string loadAndAttachRawTp();

// A ring buffer of one page, like the network filter's event channel.
std::string probeRingbuf();

// Real attempt: loads a trivial cgroup/connect4 program and attaches it to a
// scratch cgroup under the current one. false (with *detail) when the kernel
// refuses; an Error when the probe itself cannot run (no cgroup2, no mkdir).
Result<bool> probeCgroupSockAddr(std::string* detail = nullptr);

// Whether cgroup/connect_unix programs (with bpf_probe_read_kernel, which
// they need to see the address) load here: a two-instruction program, no
// cgroup needed. false with *detail when not (kernel < 6.7).
bool probeCgroupUnixHooks(std::string* detail = nullptr);

}  // namespace sv::tracer
