/* proc_maps.h: maps and load-time settings of the process-tracking programs.
 *
 * Included by progs/proc.bpf.c only, so the loader's view (skeleton names)
 * and the programs' view are read in one place.
 *
 * One load serves every session of the host (ABI version 2): the maps are
 * pinned with the links, and a session is a slot, the same index in
 * sv_proc_cgroups, sv_proc_sessions, sv_proc_rings and sv_proc_stats.
 */
#pragma once

#include "shared/proc_abi.h"

/* @brief Kernel struct offsets, found by the loader in the running kernel's
 * BTF and frozen into .rodata (no CO-RE, see proc_abi.h); the same for every
 * session of the boot. */
const volatile struct sv_proc_layout sv_proc_layout = {};

/* @brief Each slot's session cgroup: bpf_current_task_under_cgroup() scopes
 * a slot to its tree, descendants of the cgroup included. */
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, SV_PROC_MAX_SESSIONS);
	__type(key, __u32);
	__type(value, __u32);
} sv_proc_cgroups SEC(".maps");

/* @brief Each slot's session (struct sv_proc_session); cgroup_id 0: free. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SV_PROC_MAX_SESSIONS);
	__type(key, __u32);
	__type(value, struct sv_proc_session);
} sv_proc_sessions SEC(".maps");

/* @brief Entry 0: how many slots the programs scan (the highest claimed
 * slot + 1). 0 while no session runs, so the programs, attached for the
 * boot, cost every fork, exec and exit of the host one array lookup. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} sv_proc_active SEC(".maps");

/* @brief (thread id, slot) → the files that thread's pending exec was
 * approved for in that session; written by the supervisor before it answers
 * CONTINUE, consumed by the exec re-check, dropped when the thread exits (a
 * reused tid never inherits it). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	/* Not preallocated: creating 8192 entries up front cost 0.7 ms per load. */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 8192);
	__type(key, struct sv_proc_approval_key);
	__type(value, struct sv_proc_approval);
} sv_proc_approved SEC(".maps");

/* @brief Each slot's fork / exec / exit events, as struct sv_proc_event: a
 * ring buffer per slot, created by the first session that claims it and
 * kept for the next (allocating 1 MiB per start-up cost time). */
struct sv_proc_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, SV_PROC_RING_BYTES);
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, SV_PROC_MAX_SESSIONS);
	__type(key, __u32);
	__array(values, struct sv_proc_ring);
} sv_proc_rings SEC(".maps");

/* @brief Counters: entry slot * SV_PROC_STAT_MAX + enum sv_proc_stat (per
 * CPU, summed by the loader; a claim zeroes its slot's). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SV_PROC_MAX_SESSIONS * SV_PROC_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} sv_proc_stats SEC(".maps");

/* @brief Per CPU: the new image's argv bytes the exec re-check hashes when an
 * approval carries args_len (SV_PROC_ARGS_LEN do not fit the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, char[SV_PROC_ARGS_LEN]);
} sv_proc_args_scratch SEC(".maps");
