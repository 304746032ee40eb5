// SPDX-License-Identifier: GPL-2.0
/* net.bpf.c: in-kernel network policy on a cgroup.
 *
 * connect4/6 and sendmsg4/6 judge every destination (TCP connect, UDP
 * connect, UDP sendto/sendmsg with an address) against the sv_net_allow
 * LPM trie; sock_create refuses raw and packet sockets (they bypass those
 * hooks) and, in mode none, every inet socket. Returning 0 makes the syscall
 * fail with EPERM. Every decision is reported to the session's ring buffer.
 *
 * One load serves every session (maps/net_maps.h): each program first finds
 * the caller's session and plan by its cgroup (sv_net_whoami), and refuses
 * a caller it finds in no session.
 *
 * With domain entries (SV_NET_SESSION_DNS_PROXY), UDP to a known resolver from a
 * plan that has them is redirected to the supervisor's DNS proxy, which adds
 * the answered addresses to sv_net_allow, in each plan that names the host,
 * before it passes the answer on; recvmsg4/6 and
 * getpeername4/6 put the resolver's address back where the tree looks.
 * See docs/network.md for what is and is not covered.
 */
/* UAPI headers, not vmlinux.h: a sock_addr context is stable ABI that the
 * verifier rewrites itself, so these programs need no CO-RE relocation, and
 * without one libbpf never loads and parses the kernel's BTF — about half of
 * supervise's start-up time. */
#include <linux/bpf.h>
#include <stdbool.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "maps/net_maps.h"
#include "lib/net_helpers.h"

char LICENSE[] SEC("license") = "GPL";

/* Writes addr (IPv4-mapped form for v4) and port into the context: the
 * destination of a connect/sendmsg, the source a recvmsg/getpeername shows. */
static __always_inline void sv_net_set_addr(struct bpf_sock_addr *ctx, const __u8 *addr,
					    __u16 port, bool v4)
{
	__u32 w[4];

	__builtin_memcpy(w, addr, 16);
	if (v4) {
		ctx->user_ip4 = w[3];
	} else {
		ctx->user_ip6[0] = w[0];
		ctx->user_ip6[1] = w[1];
		ctx->user_ip6[2] = w[2];
		ctx->user_ip6[3] = w[3];
	}
	ctx->user_port = bpf_htons(port);
}

/* UDP to a resolver of sv_net_dns_servers goes to the proxy instead, for
 * the plans with domain entries (sv_net_dns_plans). The destination is
 * rewritten in the context, which the kernel then uses for the connect or
 * the datagram. UDP straight to a proxy socket (on loopback, which localhost
 * mode allows) is refused for every plan: the redirection is the only way
 * in, so a plan without domain entries gets no DNS path through the proxy. */
static __always_inline bool sv_net_dns_redirect(struct bpf_sock_addr *ctx,
						const struct sv_net_who *who,
						const struct sv_net_lpm_key *key, __u16 port,
						bool v4, struct sv_net_verdict *v)
{
	struct sv_net_dns_target *t;
	struct sv_net_dns_key k = {};
	struct sv_net_lpm_key dest;
	__u32 plan = key->plan;
	__u32 *proxied;

	if (!(who->flags & SV_NET_SESSION_DNS_PROXY) || ctx->protocol != SV_IPPROTO_UDP)
		return false;
	__builtin_memcpy(k.addr, key->addr, 16);
	k.port = port;
	k.slot = (__u16)who->slot;
	proxied = bpf_map_lookup_elem(&sv_net_dns_plans, &plan);
	if (proxied && *proxied) {
		t = bpf_map_lookup_elem(&sv_net_dns_servers, &k);
		if (t) {
			sv_net_set_addr(ctx, t->addr, t->port, v4);
			v->decision = SV_NET_ALLOW;
			v->reason = SV_NET_REASON_DNS_PROXY;
			v->rule_index = t->rule_index;
			v->flags = 0;
			v->plan = key->plan % SV_NET_MAX_PLANS;
			return true;
		}
	}
	/* 0.0.0.0 / :: reach the loopback proxy too (see sv_net_unspec_to_loopback). */
	__builtin_memcpy(&dest, key, sizeof(dest));
	sv_net_unspec_to_loopback(&dest);
	__builtin_memcpy(k.addr, dest.addr, 16);
	k.slot = 0; /* proxy sockets are the host's */
	if (!bpf_map_lookup_elem(&sv_net_dns_proxies, &k))
		return false;
	v->decision = SV_NET_DENY;
	v->reason = SV_NET_REASON_DNS_PROXY;
	v->rule_index = SV_NET_RULE_NONE;
	v->flags = 0;
	v->plan = key->plan % SV_NET_MAX_PLANS;
	return true;
}

/* recvmsg/getpeername: a proxy's address becomes its resolver's again. */
static __always_inline void sv_net_dns_restore(struct bpf_sock_addr *ctx, bool v4)
{
	struct sv_net_dns_key k = {}, *up;
	__u32 w[4];

	if (v4) {
		struct sv_net_lpm_key key;

		sv_net_key_from_ip4(&key, SV_NET_PLAN_BASE, ctx->user_ip4);
		__builtin_memcpy(k.addr, key.addr, 16);
	} else {
		w[0] = ctx->user_ip6[0];
		w[1] = ctx->user_ip6[1];
		w[2] = ctx->user_ip6[2];
		w[3] = ctx->user_ip6[3];
		__builtin_memcpy(k.addr, w, 16);
	}
	k.port = bpf_ntohs((__u16)ctx->user_port);
	up = bpf_map_lookup_elem(&sv_net_dns_proxies, &k);
	if (up)
		sv_net_set_addr(ctx, up->addr, up->port, v4);
}

static __always_inline int sv_net_check4(struct bpf_sock_addr *ctx, __u8 op)
{
	struct sv_net_verdict v;
	struct sv_net_lpm_key key;
	struct sv_net_who who;
	__u16 port = bpf_ntohs((__u16)ctx->user_port);

	if (!sv_net_whoami(&who))
		return 0;
	sv_net_key_from_ip4(&key, who.plan, ctx->user_ip4);
	if (!sv_net_dns_redirect(ctx, &who, &key, port, true, &v))
		sv_net_judge(&key, port, &v);
	sv_net_emit(&who, op, &v, SV_AF_INET, ctx->type, ctx->protocol, port, &key,
		    sv_net_pid_in_sock_addr);
	return sv_net_verdict_ret(&who, &v);
}

static __always_inline int sv_net_check6(struct bpf_sock_addr *ctx, __u8 op)
{
	struct sv_net_verdict v;
	struct sv_net_lpm_key key;
	struct sv_net_who who;
	__u16 port = bpf_ntohs((__u16)ctx->user_port);

	if (!sv_net_whoami(&who))
		return 0;
	/* The ctx only permits 4-byte loads of user_ip6[]. */
	sv_net_key_from_ip6(&key, who.plan, ctx->user_ip6[0], ctx->user_ip6[1],
			    ctx->user_ip6[2], ctx->user_ip6[3]);
	if (!sv_net_dns_redirect(ctx, &who, &key, port, false, &v))
		sv_net_judge(&key, port, &v);
	sv_net_emit(&who, op, &v, SV_AF_INET6, ctx->type, ctx->protocol, port, &key,
		    sv_net_pid_in_sock_addr);
	return sv_net_verdict_ret(&who, &v);
}

SEC("cgroup/connect4")
int connect4(struct bpf_sock_addr *ctx)
{
	return sv_net_check4(ctx, SV_NET_OP_CONNECT);
}

SEC("cgroup/connect6")
int connect6(struct bpf_sock_addr *ctx)
{
	return sv_net_check6(ctx, SV_NET_OP_CONNECT);
}

SEC("cgroup/sendmsg4")
int sendmsg4(struct bpf_sock_addr *ctx)
{
	return sv_net_check4(ctx, SV_NET_OP_SENDMSG);
}

SEC("cgroup/sendmsg6")
int sendmsg6(struct bpf_sock_addr *ctx)
{
	return sv_net_check6(ctx, SV_NET_OP_SENDMSG);
}

/* Attached only for sessions with domain entries; they always let the call through. */
SEC("cgroup/recvmsg4")
int recvmsg4(struct bpf_sock_addr *ctx)
{
	sv_net_dns_restore(ctx, true);
	return 1;
}

SEC("cgroup/recvmsg6")
int recvmsg6(struct bpf_sock_addr *ctx)
{
	sv_net_dns_restore(ctx, false);
	return 1;
}

SEC("cgroup/getpeername4")
int getpeername4(struct bpf_sock_addr *ctx)
{
	sv_net_dns_restore(ctx, true);
	return 1;
}

SEC("cgroup/getpeername6")
int getpeername6(struct bpf_sock_addr *ctx)
{
	sv_net_dns_restore(ctx, false);
	return 1;
}

/* Pathname unix sockets (cgroup/connect_unix and sendmsg_unix, kernel 6.7+;
 * libbpf 1.1 does not know those section names, so the loader sets the
 * attach type). A socket may be reached only under a writable root of the
 * policy: connecting needs write permission on the socket file, so that is the
 * filesystem rule that applies. Abstract sockets are Landlock's (scoping).
 *
 * The sock_addr context of a unix hook exposes no address field, so the
 * kernel's copy of it is read through struct bpf_sock_addr_kern (uaddr at
 * offset 8, uaddrlen at 32; stable since 6.7, when uaddrlen was added with
 * these hooks). A read that fails or does not look like an AF_UNIX address
 * denies (fail closed), reported as SV_NET_REASON_UNIX_UNREADABLE.
 * Reading the kernel copy also means the tree cannot change the path after
 * the decision. The path is judged as a string: relative paths and ".."
 * components are refused, symlinks are not seen (docs/network.md). */
#define SV_AF_UNIX 1
#define SV_SOCK_ADDR_KERN_UADDR 8
#define SV_SOCK_ADDR_KERN_UADDRLEN 32

struct sv_net_unix_scan {
	struct sv_net_unix_key key;
	__u32 dotdot;
};

/* One step of the ".." scan, run through bpf_loop: the verifier checks the
 * callback once instead of once per byte (an unrolled or bounded loop cost
 * ~20k verified instructions and ~100 ms of load time per program). */
static long sv_net_dotdot_at(__u32 i, struct sv_net_unix_scan *s)
{
	__u8 *p;

	if (i > SV_NET_UNIX_PATH_MAX - 3)
		return 1;
	p = &s->key.path[i];
	if (p[0] == '/' && p[1] == '.' && p[2] == '.' &&
	    (i == SV_NET_UNIX_PATH_MAX - 3 || p[3] == '/' || p[3] == 0)) {
		s->dotdot = 1;
		return 1;
	}
	return 0;
}

static __always_inline int sv_net_check_unix(struct bpf_sock_addr *ctx, __u8 op)
{
	struct sv_net_verdict v = {.rule_index = SV_NET_RULE_NONE, .decision = SV_NET_DENY,
				   .reason = SV_NET_REASON_UNIX_UNREADABLE};
	struct sv_net_unix_scan scan = {};
	struct sv_net_unix_key *key = &scan.key;
	struct sv_net_unix_event *e;
	struct sv_net_who who;
	void *uaddr = NULL;
	__u32 len = 0;
	__u16 family = 0;
	__u32 *rule;

	if (!sv_net_whoami(&who))
		return 0;
	v.plan = who.plan % SV_NET_MAX_PLANS; /* the roots are every plan's: for the audit only */
	if (bpf_probe_read_kernel(&uaddr, sizeof(uaddr), (void *)ctx + SV_SOCK_ADDR_KERN_UADDR) ||
	    bpf_probe_read_kernel(&len, sizeof(len), (void *)ctx + SV_SOCK_ADDR_KERN_UADDRLEN) ||
	    !uaddr || bpf_probe_read_kernel(&family, sizeof(family), uaddr) ||
	    family != SV_AF_UNIX || len < 2 || len > 2 + SV_NET_UNIX_PATH_MAX + 1)
		goto report;
	len -= 2;
	if (len == 0)
		return 1; /* unnamed: nothing to judge */
	if (len > SV_NET_UNIX_PATH_MAX)
		len = SV_NET_UNIX_PATH_MAX;
	if (bpf_probe_read_kernel(key->path, len, uaddr + 2))
		goto report;
	if (key->path[0] == 0)
		return 1; /* abstract: Landlock's scoping decides */

	/* A ".." component would let the string name a place outside the
	 * prefix it starts with: refuse it. Bytes after the path's NUL (the
	 * tree's, up to addrlen) can only cause a refusal here, and never a
	 * trie match (a root prefix holds no NUL). */
	v.reason = SV_NET_REASON_UNIX_PATH;
	bpf_loop(SV_NET_UNIX_PATH_MAX - 2, sv_net_dotdot_at, &scan, 0);
	if (scan.dotdot)
		goto report;
	if (key->path[0] != '/')
		goto report; /* relative: its directory is the tree's cwd, unknown here */
	key->prefixlen = 32 + 8 * SV_NET_UNIX_PATH_MAX;
	key->slot = who.slot;
	rule = bpf_map_lookup_elem(&sv_net_unix_roots, key);
	if (rule) {
		v.decision = SV_NET_ALLOW;
		v.rule_index = *rule;
	}
report:
	if (sv_net_reported(&who, op, v.decision)) {
		e = sv_net_reserve(&who, sizeof(*e));
		if (e) {
			sv_net_fill_event(&e->base, &who, op, &v, SV_AF_UNIX, ctx->type, 0, 0, NULL,
					  sv_net_pid_in_sock_addr);
			__builtin_memcpy(e->path, key->path, sizeof(e->path));
			e->_pad = 0;
			bpf_ringbuf_submit(e, 0);
		}
	}
	return sv_net_verdict_ret(&who, &v);
}

/* Attach types BPF_CGROUP_UNIX_CONNECT / _SENDMSG, set by the loader. */
SEC("cgroup/connect4")
int connect_unix(struct bpf_sock_addr *ctx)
{
	return sv_net_check_unix(ctx, SV_NET_OP_UNIX_CONNECT);
}

SEC("cgroup/sendmsg4")
int sendmsg_unix(struct bpf_sock_addr *ctx)
{
	return sv_net_check_unix(ctx, SV_NET_OP_UNIX_SENDMSG);
}

/* Socket kinds the address hooks never see: raw IP (no connect/sendmsg hook
 * on raw_sendmsg), AF_PACKET, and ICMP "ping" datagram sockets. Ordinary
 * stream/datagram inet sockets and every non-inet family (AF_UNIX, netlink)
 * pass without an event: their decision happens at connect/sendmsg. */
SEC("cgroup/sock_create")
int sock_create(struct bpf_sock *ctx)
{
	struct sv_net_verdict v = {.rule_index = SV_NET_RULE_NONE};
	struct sv_net_who who;
	__u32 family = ctx->family;
	__u32 type = ctx->type;
	__u32 protocol = ctx->protocol;
	bool inet = family == SV_AF_INET || family == SV_AF_INET6;
	bool allow_raw;
	__u32 mode;

	if (!sv_net_whoami(&who))
		return 0;
	mode = sv_net_plan_mode(who.plan);
	allow_raw = who.flags & SV_NET_SESSION_ALLOW_RAW;
	v.plan = who.plan % SV_NET_MAX_PLANS;
	if (inet && mode == SV_NET_MODE_NONE) {
		v.decision = SV_NET_DENY;
		v.reason = SV_NET_REASON_MODE_NONE;
	} else if (family == SV_AF_PACKET || (inet && type == SV_SOCK_RAW)) {
		v.decision = allow_raw ? SV_NET_ALLOW : SV_NET_DENY;
		v.reason = SV_NET_REASON_RAW_SOCKET;
	} else if (inet && type == SV_SOCK_DGRAM &&
		   (protocol == SV_IPPROTO_ICMP || protocol == SV_IPPROTO_ICMPV6)) {
		/* Ping sockets send to any address without the sendmsg hook. */
		v.decision = (allow_raw || mode == SV_NET_MODE_ALL) ? SV_NET_ALLOW : SV_NET_DENY;
		v.reason = SV_NET_REASON_RAW_SOCKET;
	} else {
		return 1;
	}
	sv_net_emit(&who, SV_NET_OP_SOCK_CREATE, &v, family, type, protocol, 0, NULL,
		    sv_net_pid_in_sock);
	return sv_net_verdict_ret(&who, &v);
}
