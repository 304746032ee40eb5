/* lsm_maps.h: maps and load-time settings of the BPF-LSM programs.
 *
 * Included by progs/lsm.bpf.c only, so the loader's view (skeleton names) and
 * the programs' view are read in one place. The table maps are sized by the
 * loader (bpf_map__set_max_entries between open and load) from the compiled
 * plan; the declared sizes are placeholders.
 */
#pragma once

#include "shared/lsm_abi.h"
#include "shared/net_abi.h"

/* @brief SV_LSM_CFG_* flags, fixed between open and load. */
const volatile __u32 sv_lsm_cfg_flags = 0;
/* @brief Number of byte classes: the row width of sv_lsm_trans. */
const volatile __u32 sv_lsm_nclasses = 1;
/* @brief Number of profiles in sv_lsm_starts (profile ids past it act as base). */
const volatile __u32 sv_lsm_nprofiles = 1;
/* @brief Byte → class, shared by every DFA. */
const volatile __u8 sv_lsm_byte_class[256] = {};

/* @brief Rule indices of the connect decisions no allowlist entry makes. */
const volatile __u32 sv_lsm_rule_net_none = 0;
const volatile __u32 sv_lsm_rule_net_all = 0;
const volatile __u32 sv_lsm_rule_net_default = 0;

/* @brief The session cgroups (cgroup id → unused): only tasks whose cgroup is
 * listed are judged; everything else on the host passes untouched. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, __u32);
} sv_lsm_sessions SEC(".maps");

/* @brief DFA transitions: [state * sv_lsm_nclasses + class] → next state. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} sv_lsm_trans SEC(".maps");

/* @brief Per DFA state: outcome index | SV_LSM_STATE_FINAL. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} sv_lsm_states SEC(".maps");

/* @brief Outcome index → verdict and rule (or profile) index. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sv_lsm_outcome);
} sv_lsm_outcomes SEC(".maps");

/* @brief [profile * SV_LSM_NUM_OPS + op] → start state. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SV_LSM_MAX_PROFILES * SV_LSM_NUM_OPS);
	__type(key, __u32);
	__type(value, __u32);
} sv_lsm_starts SEC(".maps");

/* @brief The profile a task runs under; copied to children by task_alloc and
 * switched on exec by the exec.switch rules. No entry means the base policy. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sv_lsm_task);
} sv_lsm_task_store SEC(".maps");

/* @brief Network mode per profile (enum sv_net_mode values). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SV_LSM_MAX_PROFILES);
	__type(key, __u32);
	__type(value, __u32);
} sv_lsm_net_mode SEC(".maps");

/* @brief Allowed destinations per profile: longest-prefix match over
 * (profile, address); the value lists the allowed port ranges with rules. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, struct sv_lsm_net_key);
	__type(value, struct sv_net_allow_value);
} sv_lsm_net_allow SEC(".maps");

/* @brief Decisions: struct sv_lsm_event followed by the path bytes. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1024 * 1024);
} sv_lsm_events SEC(".maps");

/* @brief Per-CPU scratch: the event header and the path being judged (too
 * big for the 512-byte BPF stack). */
struct sv_lsm_scratch {
	struct sv_lsm_event ev;
	char path[SV_LSM_PATH_MAX + SV_LSM_NAME_MAX];
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
