/* net_maps.h: maps and load-time settings of the network programs.
 *
 * Included by progs/net.bpf.c only: the definitions live here so the loader's
 * view (skeleton names) and the programs' view are read in one place. A second
 * .bpf.c that needs them must declare them extern instead of including this.
 *
 * One load serves every session of the host (ABI version 4): the maps are
 * pinned, and a session is a slot (tracer/bpf/bpf_shared.h). Its settings are
 * in sv_net_sessions, its cgroups in sv_net_cgroup_plans, its plans at
 * global indexes slot * SV_NET_MAX_PLANS + plan, its events in its own ring
 * buffer (sv_net_rings) and its counters in sv_net_stats.
 */
#pragma once

#include "shared/net_abi.h"

/* Load-time settings: properties of the host, the same for every session
 * (frozen .rodata, so the verifier prunes the branches they never take). */

/* @brief Set by the loader when bpf_get_current_pid_tgid is callable from the
 * cgroup sock_addr / cgroup sock program types on this kernel. */
const volatile __u32 sv_net_pid_in_sock_addr = 0;
const volatile __u32 sv_net_pid_in_sock = 0;
/* @brief Set when bpf_get_current_ancestor_cgroup_id is callable: a process
 * in a cgroup below a registered one (a nested session's) is found by its
 * nearest registered ancestor. Off: only registered cgroups are found. */
const volatile __u32 sv_net_ancestor_walk = 0;

/* @brief Each slot's session (struct sv_net_session); cgroup_id 0: free. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SV_NET_MAX_SESSIONS);
	__type(key, __u32);
	__type(value, struct sv_net_session);
} sv_net_sessions SEC(".maps");

/* @brief cgroup id (bpf_get_current_cgroup_id) → its session and plan: each
 * session cgroup (plan 0, the base) and its profile-<name> child cgroups,
 * which the supervisor moves a process into when an exec switches its
 * profile. A process in no registered cgroup (nor below one) is refused. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SV_NET_MAX_GLOBAL_PLANS);
	__type(key, __u64);
	__type(value, struct sv_net_cgroup_plan);
} sv_net_cgroup_plans SEC(".maps");

/* @brief Network mode of each global plan (enum sv_net_mode), written
 * before attach; 0 (none) for a plan no session wrote. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SV_NET_MAX_GLOBAL_PLANS);
	__type(key, __u32);
	__type(value, __u32);
} sv_net_plan_modes SEC(".maps");

/* @brief Per global plan: 1 when the plan has domain entries, so its
 * processes' UDP to a resolver goes to the session's proxy. Other plans reach
 * the resolver as if there were no proxy (the proxy would give them a DNS path
 * their policy lacks). Written before attach. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SV_NET_MAX_GLOBAL_PLANS);
	__type(key, __u32);
	__type(value, __u32);
} sv_net_dns_plans SEC(".maps");

/* @brief A session's resolver address:port (and slot) → the proxy socket
 * that stands in for it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct sv_net_dns_key);
	__type(value, struct sv_net_dns_target);
} sv_net_dns_servers SEC(".maps");

/* @brief Proxy socket address:port → the resolver it stands in for (the
 * source address recvmsg and getpeername report to the tree). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct sv_net_dns_key);
	__type(value, struct sv_net_dns_key);
} sv_net_dns_proxies SEC(".maps");

/* @brief Per slot, directories (with trailing '/') under which a pathname
 * unix socket may be connected to: the policy's writable roots. Value: rule
 * index. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, struct sv_net_unix_key);
	__type(value, __u32);
} sv_net_unix_roots SEC(".maps");

/* @brief Allowed destinations: longest-prefix match over the global plan
 * index and the IPv4-mapped IPv6 address; the value lists the allowed port
 * ranges, each with the index of the policy rule that allowed it. The loader
 * folds less specific entries' ranges into more specific ones, so the longest
 * match alone decides. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536); /* every session's entries; no prealloc: costs only what is used */
	__type(key, struct sv_net_lpm_key);
	__type(value, struct sv_net_allow_value);
} sv_net_allow SEC(".maps");

/* @brief Each slot's decisions (or denials, see SV_NET_SESSION_DENY_EVENTS_ONLY),
 * as struct sv_net_event: a ring buffer per slot, created by the first
 * session that claims it and kept for the next. */
struct sv_net_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, SV_NET_RING_BYTES);
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, SV_NET_MAX_SESSIONS);
	__type(key, __u32);
	__array(values, struct sv_net_ring);
} sv_net_rings SEC(".maps");

/* @brief Counters: entry slot * SV_NET_STAT_MAX + enum sv_net_stat (per CPU,
 * summed by the loader; a claim zeroes its slot's): a full ring buffer must
 * show up as a counted loss, never as silence. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SV_NET_MAX_SESSIONS * SV_NET_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} sv_net_stats SEC(".maps");
