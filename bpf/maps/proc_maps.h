/* proc_maps.h: maps and load-time settings of the process-tracking programs.
 *
 * Included by progs/proc.bpf.c only, so the loader's view (skeleton names)
 * and the programs' view are read in one place.
 */
#pragma once

#include "shared/proc_abi.h"

/* @brief Kernel struct offsets, found by the loader in the running kernel's
 * BTF and frozen into .rodata (no CO-RE, see proc_abi.h). */
const volatile struct sv_proc_layout sv_proc_layout = {};
/* @brief Kill an exec whose binary the supervisor did not approve for that
 * thread (set when every exec of the tree goes through user-notify). */
const volatile __u32 sv_proc_recheck = 0;
/* @brief Audit only (policy mode audit): report a failed re-check, never kill. */
const volatile __u32 sv_proc_audit_only = 0;

/* @brief The session cgroup (index 0): bpf_current_task_under_cgroup() scopes
 * every program to the tree, descendants of the cgroup included. */
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} sv_proc_cgroup SEC(".maps");

/* @brief thread id → the files its pending exec was approved for; written by
 * the supervisor before it answers CONTINUE, consumed by the exec re-check,
 * dropped when the thread exits (a reused tid never inherits it). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	/* Not preallocated: creating 8192 entries up front cost 0.7 ms per start. */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct sv_proc_approval);
} sv_proc_approved SEC(".maps");

/* @brief fork / exec / exit events of the tree, as struct sv_proc_event. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1024 * 1024);
} sv_proc_events SEC(".maps");

/* @brief Counters indexed by enum sv_proc_stat (per CPU, summed by the loader). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SV_PROC_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} sv_proc_stats SEC(".maps");
