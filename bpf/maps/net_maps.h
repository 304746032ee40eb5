/* net_maps.h: maps and load-time settings of the network programs.
 *
 * Included by progs/net.bpf.c only: the definitions live here so the loader's
 * view (skeleton names) and the programs' view are read in one place. A second
 * .bpf.c that needs them must declare them extern instead of including this.
 */
#pragma once

#include "shared/net_abi.h"

/* Load-time settings, fixed between open and load (frozen .rodata, so the
 * verifier prunes the branches they never take). */

/* @brief Look the caller's cgroup up in sv_net_cgroup_plans (profiles with
 * network rules exist); off: every decision uses plan 0. */
const volatile __u32 sv_net_per_profile = 0;
/* @brief Report only denials (audit volume control)... */
const volatile __u32 sv_net_deny_events_only = 0;
/* @brief ...and yet every connect, allowed ones too (audit.level `deny` still
 * records connects; off where another backend reports them). */
const volatile __u32 sv_net_report_connects = 0;
/* @brief Audit only: decide and report as usual, but let every syscall through
 * (policy `mode: audit`; denials carry SV_NET_EVENT_F_AUDIT). */
const volatile __u32 sv_net_audit_only = 0;
/* @brief Allow SOCK_RAW, AF_PACKET and ICMP ping sockets. */
const volatile __u32 sv_net_allow_raw = 0;
/* @brief Set by the loader when bpf_get_current_pid_tgid is callable from the
 * cgroup sock_addr / cgroup sock program types on this kernel. */
const volatile __u32 sv_net_pid_in_sock_addr = 0;
const volatile __u32 sv_net_pid_in_sock = 0;
/* @brief How many port ranges any allowlist entry holds (1..SV_NET_MAX_PORT_RANGES).
 * The verifier walks the port loop once per possible iteration and state; a
 * constant bound it can see keeps loading at ~1 ms instead of ~10 ms for the
 * common one-range-per-entry policy. The loader refuses entries beyond it. */
const volatile __u32 sv_net_port_ranges_max = SV_NET_MAX_PORT_RANGES;

/* @brief Redirect UDP to the resolvers in sv_net_dns_servers to the
 * supervisor's DNS proxy (domain entries in the allowlist; see
 * supervisor/dns_allow.h). Off: the recvmsg/getpeername programs are not
 * even loaded. */
const volatile __u32 sv_net_dns_proxy = 0;

/* @brief Resolver address:port → the proxy socket that stands in for it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct sv_net_dns_key);
	__type(value, struct sv_net_dns_target);
} sv_net_dns_servers SEC(".maps");

/* @brief Proxy socket address:port → the resolver it stands in for (the
 * source address recvmsg and getpeername report to the tree). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct sv_net_dns_key);
	__type(value, struct sv_net_dns_key);
} sv_net_dns_proxies SEC(".maps");

/* @brief Per plan index: 1 when the plan has domain entries, so its
 * processes' UDP to a resolver goes to the proxy. Other plans reach the
 * resolver as if there were no proxy (the proxy would give them a DNS path
 * their policy lacks). Written before attach. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SV_NET_MAX_PLANS);
	__type(key, __u32);
	__type(value, __u32);
} sv_net_dns_plans SEC(".maps");

/* @brief Judge connect/sendmsg to pathname unix sockets (set by the loader
 * when the kernel has the cgroup unix hooks). */
const volatile __u32 sv_net_unix_paths = 0;

/* @brief Directories (with trailing '/') under which a pathname unix socket
 * may be connected to: the policy's writable roots. Value: rule index. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 256);
	__type(key, struct sv_net_unix_key);
	__type(value, __u32);
} sv_net_unix_roots SEC(".maps");

/* @brief Network mode of each plan (enum sv_net_mode), written before attach. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SV_NET_MAX_PLANS);
	__type(key, __u32);
	__type(value, __u32);
} sv_net_plan_modes SEC(".maps");

/* @brief cgroup id (bpf_get_current_cgroup_id) → plan index: the session's
 * profile-<name> child cgroups, which the supervisor moves a process into
 * when an exec switches its profile. Missing: plan 0 (base). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SV_NET_MAX_PLANS);
	__type(key, __u64);
	__type(value, __u32);
} sv_net_cgroup_plans SEC(".maps");

/* @brief Allowed destinations: longest-prefix match over the plan index and
 * the IPv4-mapped IPv6 address; the value lists the allowed port ranges, each with the index of the
 * policy rule that allowed it. The loader folds less specific entries' ranges
 * into more specific ones, so the longest match alone decides. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384); /* every plan's entries; no prealloc: costs only what is used */
	__type(key, struct sv_net_lpm_key);
	__type(value, struct sv_net_allow_value);
} sv_net_allow SEC(".maps");

/* @brief Every decision (or every denial, see sv_net_deny_events_only), as
 * struct sv_net_event, drained by the loader's ring_buffer. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} sv_net_events SEC(".maps");

/* @brief Counters indexed by enum sv_net_stat (per CPU, summed by the loader):
 * a full ring buffer must show up as a counted loss, never as silence. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SV_NET_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} sv_net_stats SEC(".maps");
