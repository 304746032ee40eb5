/* net_abi.h: the ABI between the network BPF programs and the C++ loader.
 *
 * Plain C with fixed-width fields and explicit padding so clang -target bpf
 * and g++ lay the structs out identically; every struct has a size assertion
 * on both sides. No vmlinux types: BPF code includes vmlinux.h first, C++
 * code gets the __u* types from <linux/types.h>. Bump SV_NET_ABI_VERSION on
 * any layout or meaning change; events carry it so a stale loader notices.
 */
#pragma once

#ifndef __bpf__
#include <linux/types.h>
#endif

#ifdef __cplusplus
#define SV_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define SV_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

#define SV_NET_ABI_VERSION 4

/* Port ranges one allowlist entry (one CIDR) can carry. The loader folds the
 * ranges of every less specific CIDR into each entry, because an LPM trie only
 * returns the longest match. */
#define SV_NET_MAX_PORT_RANGES 16

/* rule_index of a decision no allowlist entry made (mode, socket type). */
#define SV_NET_RULE_NONE 0xffffffffu

/* Plans (network policies) one load holds: plan 0 is the base policy's,
 * 1.. are profiles' (ABI version 3). A process's plan is the one its cgroup is
 * mapped to in sv_net_cgroup_plans; a cgroup not in it gets plan 0. */
#define SV_NET_MAX_PLANS 64
#define SV_NET_PLAN_BASE 0

/* Sessions one host-wide load serves at once (ABI version 4): the programs
 * are loaded once per boot and shared, each session claims a slot
 * (tracer/bpf/bpf_shared.h). A plan's index in the maps is global:
 * slot * SV_NET_MAX_PLANS + the session's own plan index. */
#define SV_NET_MAX_SESSIONS 64
#define SV_NET_MAX_GLOBAL_PLANS (SV_NET_MAX_SESSIONS * SV_NET_MAX_PLANS)
/* Bytes of each session's event ring buffer. */
#define SV_NET_RING_BYTES (256 * 1024)

/* A session's settings (sv_net_sessions, per slot). */
#define SV_NET_SESSION_DENY_EVENTS_ONLY 0x01 /* report only denials... */
#define SV_NET_SESSION_REPORT_CONNECTS 0x02  /* ...and yet every connect (audit.level deny) */
#define SV_NET_SESSION_AUDIT_ONLY 0x04       /* decide and report, let everything through */
#define SV_NET_SESSION_ALLOW_RAW 0x08        /* SOCK_RAW, AF_PACKET, ICMP ping sockets */
#define SV_NET_SESSION_DNS_PROXY 0x10        /* redirect resolver UDP to the session's proxy */
struct sv_net_session {
	__u64 cgroup_id;   /* the session cgroup's id; 0: slot free */
	__u32 flags;       /* SV_NET_SESSION_* */
	__u32 owner_pid;   /* the claiming supervisor (bpf_shared.h) */
	__u64 owner_start; /* its start time (/proc/PID/stat field 22) */
};
SV_STATIC_ASSERT(sizeof(struct sv_net_session) == 24, "sv_net_session layout");

/* Value of sv_net_cgroup_plans: the session and plan of a cgroup. */
struct sv_net_cgroup_plan {
	__u32 slot;
	__u32 plan; /* the session's own plan index (0 = base) */
};
SV_STATIC_ASSERT(sizeof(struct sv_net_cgroup_plan) == 8, "sv_net_cgroup_plan layout");

/* Values of the sv_net_plan_modes entries; match policy::NetworkMode. */
enum sv_net_mode {
	SV_NET_MODE_NONE = 0,      /* no inet sockets at all */
	SV_NET_MODE_LOCALHOST = 1, /* allowlist that holds only loopback */
	SV_NET_MODE_ALLOWLIST = 2, /* the sv_net_allow trie decides */
	SV_NET_MODE_ALL = 3,       /* everything, still reported */
};

enum sv_net_op {
	SV_NET_OP_CONNECT = 1,
	SV_NET_OP_SENDMSG = 2,
	SV_NET_OP_SOCK_CREATE = 3,
	SV_NET_OP_UNIX_CONNECT = 4, /* connect() to a pathname unix socket (kernel >= 6.7) */
	SV_NET_OP_UNIX_SENDMSG = 5, /* sendto()/sendmsg() with a pathname unix address */
};

enum sv_net_decision {
	SV_NET_DENY = 0,
	SV_NET_ALLOW = 1,
};

/* Why the decision was taken; lets the audit say more than "denied". */
enum sv_net_reason {
	SV_NET_REASON_RULE = 0,        /* an allowlist entry matched (rule_index set) */
	SV_NET_REASON_NO_MATCH = 1,    /* no entry covers the address and port */
	SV_NET_REASON_MODE_ALL = 2,    /* mode all */
	SV_NET_REASON_MODE_NONE = 3,   /* mode none refuses every inet socket */
	SV_NET_REASON_RAW_SOCKET = 4,  /* SOCK_RAW, AF_PACKET or ICMP ping socket */
	SV_NET_REASON_DNS_PROXY = 5,   /* UDP to a resolver, redirected to the supervisor's proxy */
	SV_NET_REASON_UNIX_PATH = 6,   /* unix socket path: under a writable root (rule) or not */
	SV_NET_REASON_UNIX_UNREADABLE = 7, /* the kernel's address could not be read: fail closed */
};

/* Flags in sv_net_event.flags. */
#define SV_NET_EVENT_F_UNSPEC 0x1 /* destination was 0.0.0.0 / ::, judged as loopback */
#define SV_NET_EVENT_F_AUDIT 0x2  /* audit-only session: a deny was reported, not enforced */

/* Key of the sv_net_allow LPM trie: the global plan index, then the address in
 * IPv4-mapped IPv6 form (::ffff:a.b.c.d for IPv4). prefixlen counts the
 * plan's 32 bits too (SV_NET_PLAN_BITS + the CIDR's prefix), so an entry
 * matches only lookups of its own plan. */
#define SV_NET_PLAN_BITS 32
struct sv_net_lpm_key {
	__u32 prefixlen;
	__u32 plan; /* host byte order on both sides: the trie compares bytes */
	__u8 addr[16];
};
SV_STATIC_ASSERT(sizeof(struct sv_net_lpm_key) == 24, "sv_net_lpm_key layout");

struct sv_net_port_range {
	__u16 lo; /* host byte order, inclusive */
	__u16 hi;
	__u32 rule_index; /* index into the loader's rule id table */
};
SV_STATIC_ASSERT(sizeof(struct sv_net_port_range) == 8, "sv_net_port_range layout");

struct sv_net_allow_value {
	__u32 count; /* used entries of ranges[] */
	__u32 _pad;
	struct sv_net_port_range ranges[SV_NET_MAX_PORT_RANGES];
};
SV_STATIC_ASSERT(sizeof(struct sv_net_allow_value) == 8 + 8 * SV_NET_MAX_PORT_RANGES,
		 "sv_net_allow_value layout");

/* An address and port, both ways of the DNS redirection (ABI version 2):
 * sv_net_dns_servers maps a session's resolver (key, with its slot) to the
 * session's proxy socket (struct sv_net_dns_target), sv_net_dns_proxies maps
 * a proxy socket (slot 0: proxy sockets are the host's) back to its
 * resolver, so the tree's recvmsg/getpeername see the resolver's address. */
struct sv_net_dns_key {
	__u8 addr[16]; /* IPv4-mapped IPv6 form */
	__u16 port;    /* host byte order */
	__u16 slot;    /* the session's, in sv_net_dns_servers; 0 in sv_net_dns_proxies */
};
SV_STATIC_ASSERT(sizeof(struct sv_net_dns_key) == 20, "sv_net_dns_key layout");

struct sv_net_dns_target {
	__u8 addr[16]; /* proxy address: ::ffff:127.0.0.1 for IPv4 resolvers, ::1 for IPv6 */
	__u16 port;    /* host byte order */
	__u16 _pad;
	__u32 rule_index; /* reported with the redirected connect/sendmsg */
};
SV_STATIC_ASSERT(sizeof(struct sv_net_dns_target) == 24, "sv_net_dns_target layout");

/* One decision, allow or deny, as written to the sv_net_events ring buffer. */
struct sv_net_event {
	__u64 ktime_ns;     /* bpf_ktime_get_ns() at the decision */
	__u64 session;      /* the session's cgroup id: a reused slot's ring may hold a
			     * previous session's last events (ABI version 4) */
	__u16 abi_version;  /* SV_NET_ABI_VERSION */
	__u8 decision;      /* enum sv_net_decision */
	__u8 op;            /* enum sv_net_op */
	__u32 rule_index;   /* SV_NET_RULE_NONE unless reason is RULE */
	__u32 pid;          /* thread id (init pid namespace) */
	__u32 tgid;         /* process id (init pid namespace) */
	__u8 family;        /* AF_INET / AF_INET6 / socket family for sock_create */
	__u8 protocol;      /* IPPROTO_* */
	__u16 port;         /* destination port, host byte order; 0 for sock_create */
	__u8 sock_type;     /* SOCK_STREAM / SOCK_DGRAM / SOCK_RAW ... */
	__u8 reason;        /* enum sv_net_reason */
	__u8 flags;         /* SV_NET_EVENT_F_* */
	__u8 plan;          /* the plan that decided (0 = base; ABI version 3) */
	__u8 addr[16];      /* destination, IPv4-mapped IPv6 form; zero for sock_create */
};
SV_STATIC_ASSERT(sizeof(struct sv_net_event) == 56, "sv_net_event layout");

/* Pathname unix sockets: sun_path without its terminating NUL fits 108 bytes. */
#define SV_NET_UNIX_PATH_MAX 108

/* Key of the sv_net_unix_roots LPM trie: the session's slot, then a writable
 * root with a trailing '/' (prefixlen = 32 + the root's length in bits);
 * lookups use the whole socket path, with every byte after its end zero and
 * prefixlen 32 + 8 * SV_NET_UNIX_PATH_MAX. */
struct sv_net_unix_key {
	__u32 prefixlen;
	__u32 slot; /* host byte order on both sides, like sv_net_lpm_key.plan */
	__u8 path[SV_NET_UNIX_PATH_MAX];
};
SV_STATIC_ASSERT(sizeof(struct sv_net_unix_key) == 116, "sv_net_unix_key layout");

/* A unix decision: the common event (op SV_NET_OP_UNIX_*, family AF_UNIX,
 * addr and port zero) followed by the path as the tree passed it. */
struct sv_net_unix_event {
	struct sv_net_event base;
	__u8 path[SV_NET_UNIX_PATH_MAX]; /* NUL-padded */
	__u32 _pad;
};
SV_STATIC_ASSERT(sizeof(struct sv_net_unix_event) == 168, "sv_net_unix_event layout");

/* Index of a session's counters in the sv_net_stats per-CPU array, whose
 * entry is slot * SV_NET_STAT_MAX + the counter. */
enum sv_net_stat {
	SV_NET_STAT_EVENTS_DROPPED = 0, /* ring buffer full: a decision was not reported */
	SV_NET_STAT_MAX = 1,
};
