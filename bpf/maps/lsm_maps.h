/* lsm_maps.h: maps and load-time settings of the BPF-LSM programs.
 *
 * Included by progs/lsm.bpf.c only, so the loader's view (skeleton names) and
 * the programs' view are read in one place. The policy tables are inner maps
 * the loader creates per policy version (tracer/bpf/lsm_policy_tables.cpp).
 */
#pragma once

#include "shared/lsm_abi.h"
#include "shared/net_abi.h"

/* @brief SV_LSM_CFG_* flags, fixed between open and load. */
const volatile __u32 sv_lsm_cfg_flags = 0;

/* @brief The directories the notify handler is moving (between its walk of
 * the tree and the rename): creates below them are refused meanwhile. The
 * count is how many there are, so a create climbs nothing while it is 0. */
__u32 sv_lsm_moves = 0;
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct sv_lsm_inode_key);
	__type(value, __u32);
} sv_lsm_moving SEC(".maps");

/* @brief The session cgroups (cgroup id → unused): only tasks whose cgroup is
 * listed are judged; everything else on the host passes untouched. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, __u32);
} sv_lsm_sessions SEC(".maps");

/* The compiled policy, versioned. Each version's tables are fresh inner maps
 * stored at the version number in the outer maps below (arrays: the
 * verifier inlines their lookups; numbers are never reused, so a filter
 * takes SV_LSM_MAX_VERSIONS - 1 policies in its life); sv_lsm_current
 * names the version decisions use. A new policy is written into new inner
 * maps, inserted under a new version, and then made current by one update,
 * so no decision ever sees half a policy: every table is looked up under
 * the same version key, and a decision that found them all keeps them (the
 * kernel frees an inner map only after the programs using it are done). The
 * previous version stays until the next swap, for decisions that read
 * sv_lsm_current just before it changed. Inner array sizes follow each
 * policy (BPF_F_INNER_MAP); the declared sizes here are templates. */

/* @brief [0]: the current policy version (0 before the first: no tables,
 * every decision fails closed). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} sv_lsm_current SEC(".maps");


/* @brief version → [0]: struct sv_lsm_policy (scalars, starts, byte classes). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, SV_LSM_MAX_VERSIONS);
	__type(key, __u32);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_ARRAY);
		__uint(max_entries, 1);
		__type(key, __u32);
		__uint(value_size, sizeof(struct sv_lsm_policy));
	});
} sv_lsm_pol_header SEC(".maps");

/* An outer map of per-version inner arrays, each sized to its policy
 * (sizes, not __type(): BTF holds only a forward declaration of a struct
 * the programs reach through pointers alone). */
#define SV_LSM_VERSIONED_ARRAY(elem_size)                          \
	struct {                                                   \
		__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);           \
		__uint(max_entries, SV_LSM_MAX_VERSIONS);          \
		__type(key, __u32);                                \
		__array(values, struct {                           \
			__uint(type, BPF_MAP_TYPE_ARRAY);          \
			__uint(map_flags, BPF_F_INNER_MAP);        \
			__uint(max_entries, 1);                    \
			__type(key, __u32);                        \
			__uint(value_size, elem_size);             \
		});                                                \
	}

/* @brief version → DFA transitions: [state * nclasses + class] → next state
 * | SV_LSM_STATE_FINAL when the next state's outcome is fixed. */
SV_LSM_VERSIONED_ARRAY(sizeof(__u32)) sv_lsm_pol_trans SEC(".maps");

/* @brief version → per DFA state: outcome index (| SV_LSM_STATE_FINAL). */
SV_LSM_VERSIONED_ARRAY(sizeof(__u32)) sv_lsm_pol_states SEC(".maps");

/* @brief version → outcome index → verdict and rule (or profile) index. */
SV_LSM_VERSIONED_ARRAY(sizeof(struct sv_lsm_outcome)) sv_lsm_pol_outcomes SEC(".maps");

/* @brief version → allowed destinations per profile: longest-prefix match
 * over (profile, address); the value lists the allowed port ranges with
 * rules. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, SV_LSM_MAX_VERSIONS);
	__type(key, __u32);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_LPM_TRIE);
		__uint(map_flags, BPF_F_NO_PREALLOC);
		__uint(max_entries, 4096);
		__uint(key_size, sizeof(struct sv_lsm_net_key));
		__uint(value_size, sizeof(struct sv_net_allow_value));
	});
} sv_lsm_pol_net_allow SEC(".maps");

/* @brief The profile a task runs under; copied to children by task_alloc and
 * switched on exec by the exec.switch rules. No entry means the base policy. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sv_lsm_task);
} sv_lsm_task_store SEC(".maps");

/* @brief Decisions: struct sv_lsm_event followed by the path bytes. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1024 * 1024);
} sv_lsm_events SEC(".maps");

/* @brief Per-CPU scratch: the event header and the path being judged (too
 * big for the 512-byte BPF stack); after them, never reported, the state of
 * a path built by walking up (sv_lsm_load_walked): its dentries, leaf first,
 * and the walk's counters. The counters live here, not on the stack: the
 * verifier knows a stack counter's value at each bpf_loop round and checks
 * the callback once per value (over a million instructions), while a value
 * read from a map is just a bounded number to it. */
#define SV_LSM_DEPTH_MAX 64
struct sv_lsm_scratch {
	struct sv_lsm_event ev;
	char path[SV_LSM_PATH_MAX + SV_LSM_NAME_MAX];
	__u64 dentries[SV_LSM_DEPTH_MAX];
	__u32 depth;
	__u32 len;
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sv_lsm_scratch);
} sv_lsm_scratch_map SEC(".maps");

/* @brief Counters: [0] events lost to a full ring buffer, [1] paths too long
 * to judge (denied), [2] table lookups that failed (denied). */
#define SV_LSM_STAT_DROPPED 0
#define SV_LSM_STAT_TOO_LONG 1
#define SV_LSM_STAT_TABLE_MISS 2
#define SV_LSM_STAT_MAX 3
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SV_LSM_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} sv_lsm_stats SEC(".maps");

/* @brief The one request of decide_for_test (loads with test_only): written
 * by the caller, answered in place. A map, not the test run's context: that
 * program is a raw_tp, since a sleepable (syscall) program may not use the
 * LPM-trie inner maps of the tables on newer kernels. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sv_lsm_test_request);
} sv_lsm_test_req SEC(".maps");
