/* net_helpers.h: inline helpers shared by the network programs: turning a
 * sock_addr context into an LPM key, judging it against the allowlist, and
 * reporting the decision to the ring buffer.
 *
 * Needs <linux/bpf.h> (or vmlinux.h), bpf_helpers.h, bpf_endian.h and maps/net_maps.h first.
 */
#pragma once

/* Cgroup levels the ancestor walk looks at (sv_net_whoami). */
#define SV_NET_MAX_CGROUP_DEPTH 16

/* Not in vmlinux.h (they are #defines in the uapi headers). */
#define SV_AF_INET 2
#define SV_AF_INET6 10
#define SV_AF_PACKET 17
#define SV_SOCK_DGRAM 2
#define SV_SOCK_RAW 3
#define SV_IPPROTO_ICMP 1
#define SV_IPPROTO_ICMPV6 58
#define SV_IPPROTO_UDP 17

struct sv_net_verdict {
	__u32 rule_index;
	__u8 decision;
	__u8 reason;
	__u8 flags;
	__u8 plan; /* the session's own plan index, as events report it */
};

/* The calling process's session: its slot, settings and plan. */
struct sv_net_who {
	__u32 slot;
	__u32 flags;  /* SV_NET_SESSION_* */
	__u32 plan;   /* global plan index (slot * SV_NET_MAX_PLANS + own plan) */
	__u64 session; /* the session cgroup's id, for the events */
};

/* Finds the caller's session: the entry of its cgroup, else (a cgroup
 * below a registered one, e.g. a nested session's) of its nearest
 * registered ancestor. false: no session, and the caller refuses. */
static __always_inline bool sv_net_whoami(struct sv_net_who *who)
{
	struct sv_net_cgroup_plan *entry, *found;
	struct sv_net_session *s;
	__u64 cgroup = bpf_get_current_cgroup_id();
	__u64 id;
	__u32 slot;
	int level;

	found = bpf_map_lookup_elem(&sv_net_cgroup_plans, &cgroup);
	if (!found && sv_net_ancestor_walk) {
		/* From the root down: the deepest registered ancestor wins. */
		for (level = 0; level < SV_NET_MAX_CGROUP_DEPTH; level++) {
			id = bpf_get_current_ancestor_cgroup_id(level);
			if (!id)
				break;
			entry = bpf_map_lookup_elem(&sv_net_cgroup_plans, &id);
			if (entry)
				found = entry;
		}
	}
	if (!found)
		return false;
	slot = found->slot;
	if (slot >= SV_NET_MAX_SESSIONS || found->plan >= SV_NET_MAX_PLANS)
		return false;
	s = bpf_map_lookup_elem(&sv_net_sessions, &slot);
	if (!s || !s->cgroup_id)
		return false;
	who->slot = slot;
	who->flags = s->flags;
	who->plan = slot * SV_NET_MAX_PLANS + found->plan;
	who->session = s->cgroup_id;
	return true;
}

static __always_inline __u32 sv_net_plan_mode(__u32 plan)
{
	__u32 *mode = bpf_map_lookup_elem(&sv_net_plan_modes, &plan);

	return mode ? *mode : SV_NET_MODE_NONE; /* out of range: fail closed */
}

static __always_inline void sv_net_key_from_ip4(struct sv_net_lpm_key *key, __u32 plan,
						__u32 ip4_be)
{
	__builtin_memset(key, 0, sizeof(*key));
	key->prefixlen = SV_NET_PLAN_BITS + 128;
	key->plan = plan;
	key->addr[10] = 0xff;
	key->addr[11] = 0xff;
	/* ip4_be is in network order in memory: copy the bytes as they lie. */
	__builtin_memcpy(&key->addr[12], &ip4_be, 4);
}

/* ip6 words exactly as read from bpf_sock_addr.user_ip6 (network order). */
static __always_inline void sv_net_key_from_ip6(struct sv_net_lpm_key *key, __u32 plan, __u32 w0,
						__u32 w1, __u32 w2, __u32 w3)
{
	key->prefixlen = SV_NET_PLAN_BITS + 128;
	key->plan = plan;
	__builtin_memcpy(&key->addr[0], &w0, 4);
	__builtin_memcpy(&key->addr[4], &w1, 4);
	__builtin_memcpy(&key->addr[8], &w2, 4);
	__builtin_memcpy(&key->addr[12], &w3, 4);
}

/* 0.0.0.0 (as ::ffff:0.0.0.0) and :: : Linux connects and sends these to the
 * local host (ip_route_output for v4, tcp_v6_connect/ip6_datagram_connect for
 * v6). Judge them as the loopback address they actually reach. */
static __always_inline bool sv_net_unspec_to_loopback(struct sv_net_lpm_key *key)
{
	__u32 w[4];

	__builtin_memcpy(w, key->addr, 16);
	if (w[0] || w[1])
		return false;
	if (w[2] == 0 && w[3] == 0) {
		key->addr[15] = 1; /* :: -> ::1 */
		return true;
	}
	if (w[2] == bpf_htonl(0x0000ffff) && w[3] == 0) {
		key->addr[12] = 127; /* ::ffff:0.0.0.0 -> ::ffff:127.0.0.1 */
		key->addr[15] = 1;
		return true;
	}
	return false;
}

static __always_inline void sv_net_judge(const struct sv_net_lpm_key *key, __u16 port,
					 struct sv_net_verdict *v)
{
	struct sv_net_allow_value *val;
	struct sv_net_lpm_key lookup;
	__u32 mode = sv_net_plan_mode(key->plan);
	__u32 i;

	v->rule_index = SV_NET_RULE_NONE;
	v->flags = 0;
	v->plan = key->plan % SV_NET_MAX_PLANS;
	if (mode == SV_NET_MODE_ALL) {
		v->decision = SV_NET_ALLOW;
		v->reason = SV_NET_REASON_MODE_ALL;
		return;
	}
	if (mode == SV_NET_MODE_NONE) {
		v->decision = SV_NET_DENY;
		v->reason = SV_NET_REASON_MODE_NONE;
		return;
	}
	v->decision = SV_NET_DENY;
	v->reason = SV_NET_REASON_NO_MATCH;

	__builtin_memcpy(&lookup, key, sizeof(lookup));
	if (sv_net_unspec_to_loopback(&lookup))
		v->flags |= SV_NET_EVENT_F_UNSPEC;
	val = bpf_map_lookup_elem(&sv_net_allow, &lookup);
	if (!val)
		return;
	/* Bounded by a constant: verified once per boot (the load is shared). */
	for (i = 0; i < SV_NET_MAX_PORT_RANGES; i++) {
		if (i >= val->count)
			break;
		if (port >= val->ranges[i].lo && port <= val->ranges[i].hi) {
			v->decision = SV_NET_ALLOW;
			v->reason = SV_NET_REASON_RULE;
			v->rule_index = val->ranges[i].rule_index;
			return;
		}
	}
}

/* The program's return value: 1 lets the syscall proceed, 0 fails it with EPERM. */
static __always_inline int sv_net_verdict_ret(const struct sv_net_who *who,
					      const struct sv_net_verdict *v)
{
	return (v->decision == SV_NET_ALLOW || (who->flags & SV_NET_SESSION_AUDIT_ONLY)) ? 1 : 0;
}

static __always_inline void sv_net_count(__u32 slot, __u32 stat)
{
	__u32 key = slot * SV_NET_STAT_MAX + stat;
	__u64 *c = bpf_map_lookup_elem(&sv_net_stats, &key);

	if (c)
		*c += 1; /* per-CPU slot: no atomics needed */
}

/* Fills the common part of an event. pid_ok says whether
 * bpf_get_current_pid_tgid may be called from the calling program type (a
 * rodata constant, so the call is pruned by the verifier where the kernel
 * lacks it). */
static __always_inline void sv_net_fill_event(struct sv_net_event *e,
					      const struct sv_net_who *who, __u8 op,
					      const struct sv_net_verdict *v, __u8 family,
					      __u8 sock_type, __u8 protocol, __u16 port,
					      const struct sv_net_lpm_key *key, bool pid_ok)
{
	e->ktime_ns = bpf_ktime_get_ns();
	e->session = who->session;
	e->abi_version = SV_NET_ABI_VERSION;
	e->decision = v->decision;
	e->op = op;
	e->rule_index = v->rule_index;
	e->pid = 0;
	e->tgid = 0;
	if (pid_ok) {
		__u64 id = bpf_get_current_pid_tgid();

		e->pid = (__u32)id;
		e->tgid = id >> 32;
	}
	e->family = family;
	e->protocol = protocol;
	e->port = port;
	e->sock_type = sock_type;
	e->reason = v->reason;
	e->flags = v->flags;
	if ((who->flags & SV_NET_SESSION_AUDIT_ONLY) && v->decision == SV_NET_DENY)
		e->flags |= SV_NET_EVENT_F_AUDIT;
	e->plan = v->plan;
	if (key)
		__builtin_memcpy(e->addr, key->addr, sizeof(e->addr));
	else
		__builtin_memset(e->addr, 0, sizeof(e->addr));
}

/* Whether a decision is reported (SV_NET_SESSION_DENY_EVENTS_ONLY, _REPORT_CONNECTS). */
static __always_inline bool sv_net_reported(const struct sv_net_who *who, __u8 op, __u8 decision)
{
	if (!(who->flags & SV_NET_SESSION_DENY_EVENTS_ONLY) || decision != SV_NET_ALLOW)
		return true;
	return (who->flags & SV_NET_SESSION_REPORT_CONNECTS) &&
	       (op == SV_NET_OP_CONNECT || op == SV_NET_OP_UNIX_CONNECT);
}

/* Room for one event in the caller's session's ring buffer, or NULL (counted). */
static __always_inline void *sv_net_reserve(const struct sv_net_who *who, __u64 size)
{
	__u32 slot = who->slot;
	void *ring = bpf_map_lookup_elem(&sv_net_rings, &slot);
	void *e = ring ? bpf_ringbuf_reserve(ring, size, 0) : NULL;

	if (!e)
		sv_net_count(who->slot, SV_NET_STAT_EVENTS_DROPPED);
	return e;
}

/* Reports one decision (see sv_net_fill_event). */
static __always_inline void sv_net_emit(const struct sv_net_who *who, __u8 op,
					const struct sv_net_verdict *v, __u8 family, __u8 sock_type,
					__u8 protocol, __u16 port, const struct sv_net_lpm_key *key,
					bool pid_ok)
{
	struct sv_net_event *e;

	if (!sv_net_reported(who, op, v->decision))
		return;
	e = sv_net_reserve(who, sizeof(*e));
	if (!e)
		return;
	sv_net_fill_event(e, who, op, v, family, sock_type, protocol, port, key, pid_ok);
	bpf_ringbuf_submit(e, 0);
}
