/* lsm_abi.h: the ABI between the BPF-LSM programs (bpf/progs/lsm.bpf.c) and
 * user space (policy/compile_lsm.*, tracer/bpf/lsm_filter.*).
 *
 * The compiled policy is a set of DFAs over path bytes, one per (profile,
 * operation), sharing one byte-class table: the kernel walks the path that
 * bpf_d_path() gives it one byte at a time and reads the outcome (verdict and
 * rule index) from the state it stops in. This keeps glob semantics ("**",
 * "*", classes, first match wins, profile rules before base rules) entirely
 * in user space, where Engine::decide defines them, and the kernel side a
 * bounded table walk. Plain C, fixed-width fields, explicit padding; both
 * sides static_assert the sizes.
 */
#ifndef SV_BPF_SHARED_LSM_ABI_H
#define SV_BPF_SHARED_LSM_ABI_H

#ifdef __BPF__
/* vmlinux.h provides __u8 ... __u64 */
#else
#include <linux/types.h>
#endif

#define SV_LSM_ABI_VERSION 2

/* Operations, the index of a DFA within a profile. */
#define SV_LSM_OP_READ 0
#define SV_LSM_OP_WRITE 1
#define SV_LSM_OP_EXEC 2
#define SV_LSM_OP_SWITCH 3 /* exec.switch: outcome value is the next profile */
#define SV_LSM_NUM_OPS 4
#define SV_LSM_OP_CONNECT 4 /* events only: judged by the network tables, not a DFA */

/* Outcome verdicts. */
#define SV_LSM_DENY 0
#define SV_LSM_ALLOW 1
#define SV_LSM_SWITCH 2 /* SV_LSM_OP_SWITCH: move to profile `value` */
#define SV_LSM_STAY 3   /* SV_LSM_OP_SWITCH: no switch rule matched */

/* sv_lsm_states value: outcome index, plus a flag when every continuation of
 * the path keeps that outcome (the walk may stop early). In the kernel's
 * copy the flag is also carried by every transition into such a state and
 * by the start states, so the walk reads one table entry per byte. */
#define SV_LSM_STATE_OUTCOME_MASK 0x3fffffffu
#define SV_LSM_STATE_FINAL 0x80000000u

#define SV_LSM_PATH_MAX 4096
#define SV_LSM_NAME_MAX 256
#define SV_LSM_MAX_PROFILES 64
#define SV_LSM_MAX_CLASSES 256
#define SV_LSM_MAX_VERSIONS 4096 /* policy versions 1..4095 per filter */

/* Hooks, as reported in events. */
#define SV_LSM_HOOK_FILE_OPEN 1
#define SV_LSM_HOOK_PATH_MKNOD 2
#define SV_LSM_HOOK_PATH_UNLINK 3
#define SV_LSM_HOOK_PATH_MKDIR 4
#define SV_LSM_HOOK_PATH_RMDIR 5
#define SV_LSM_HOOK_PATH_RENAME 6
#define SV_LSM_HOOK_PATH_LINK 7
#define SV_LSM_HOOK_PATH_SYMLINK 8
#define SV_LSM_HOOK_PATH_TRUNCATE 9
#define SV_LSM_HOOK_BPRM_CHECK 10
#define SV_LSM_HOOK_SOCKET_CONNECT 12
#define SV_LSM_HOOK_SOCKET_SENDMSG 13
#define SV_LSM_HOOK_PATH_CHMOD 14
#define SV_LSM_HOOK_PATH_CHOWN 15
#define SV_LSM_HOOK_UNIX_STREAM_CONNECT 16 /* op WRITE: the peer's bound path */
#define SV_LSM_HOOK_UNIX_MAY_SEND 17       /* op WRITE: the peer's bound path */
#define SV_LSM_HOOK_MMAP_FILE 18 /* op EXEC: the program a dynamic loader run as one maps */

/* Event flags. */
#define SV_LSM_EVENT_F_AUDIT 0x1     /* deny reported, not enforced (audit mode) */
#define SV_LSM_EVENT_F_TRUNCATED 0x2 /* path longer than the buffer, judged as is */
#define SV_LSM_EVENT_F_SWITCHED 0x4  /* exec moved the task to `profile` */
#define SV_LSM_EVENT_F_MOVING 0x8    /* a create below a directory being moved */

/* Load-time flags (sv_lsm_cfg_flags). */
#define SV_LSM_CFG_DENY_EVENTS 0x2 /* report denials only */

/* Policy flags (struct sv_lsm_policy.flags). */
#define SV_LSM_POL_AUDIT 0x1 /* report would-deny, enforce nothing */

struct sv_lsm_outcome {
	__u8 verdict;
	__u8 pad[3];
	__u32 value; /* rule index (read/write/exec) or profile index (switch) */
};

/* One policy version's settings: the single element of its version's
 * sv_lsm_pol_header inner map. Every table of a version is stored under the
 * same version key in its outer map (see maps/lsm_maps.h), so a decision
 * that found them all uses one policy throughout. */
struct sv_lsm_policy {
	__u32 version;
	__u32 flags; /* SV_LSM_POL_* */
	__u32 nclasses; /* the row width of the transition table */
	__u32 nprofiles; /* profile ids past it act as the base (0) */
	__u32 rule_net_none; /* rule indices of the connect decisions no */
	__u32 rule_net_all; /* allowlist entry makes */
	__u32 rule_net_default;
	__u32 pad;
	__u32 starts[SV_LSM_MAX_PROFILES * SV_LSM_NUM_OPS]; /* state | SV_LSM_STATE_FINAL */
	__u32 net_mode[SV_LSM_MAX_PROFILES]; /* enum sv_net_mode */
	__u8 byte_class[256]; /* byte -> class, shared by every DFA */
};

/* The decide_for_test program's context (BPF_PROG_TEST_RUN): the request
 * in, the outcome the current policy gives it out. For differential tests
 * of the kernel's walk against Engine::decide; judges no task. */
struct sv_lsm_test_request {
	__u32 profile;
	__u32 op;
	__u32 len;
	__u32 version; /* out: the policy version that decided */
	__u32 found;   /* out: 1 when the tables gave an outcome */
	__u32 verdict; /* out */
	__u32 value;   /* out: rule index or profile */
	__u32 repeat;  /* in: decide this many times (at least once), for timing */
	__u64 elapsed_ns; /* out: the time all repeats took */
	char path[SV_LSM_PATH_MAX + SV_LSM_NAME_MAX];
};

/* Key of sv_lsm_moving: a directory as the kernel identifies it, s_dev in
 * the kernel's encoding (MAJOR << 20 | MINOR) and i_ino. */
struct sv_lsm_inode_key {
	__u64 ino;
	__u32 dev;
	__u32 pad;
};

/* Per-task state (BPF task storage), inherited on fork by task_alloc. */
struct sv_lsm_task {
	__u32 profile;
	__u32 pending_profile; /* set by bprm_check, committed at bprm_committed_creds */
	__u32 flags;           /* SV_LSM_TASK_F_* */
	__u32 pad;
};
#define SV_LSM_TASK_F_PENDING 0x1
/* bprm_check: this exec's binary is a dynamic loader; committed as LOADING,
 * which mmap_file clears at the loader's first executable mapping. */
#define SV_LSM_TASK_F_LOADER_PENDING 0x2
#define SV_LSM_TASK_F_LOADING 0x4

/* One decision; followed in the ring buffer record by path_len bytes of path
 * (no NUL). */
struct sv_lsm_event {
	__u64 ktime_ns;
	__u64 cgroup_id;
	__u32 pid;
	__u32 tgid;
	__u32 rule_index;
	__u32 profile;
	__u8 op;
	__u8 verdict;
	__u8 hook;
	__u8 flags;
	__u16 path_len;
	__u16 syscall_nr; /* the task's syscall (orig_ax); SV_LSM_NO_SYSCALL: none */
};
#define SV_LSM_NO_SYSCALL 0xffff

/* Key of sv_lsm_net_allow: the profile (big endian, so it is the leading
 * part of the prefix) and the destination in IPv4-mapped IPv6 form;
 * prefixlen counts 32 profile bits plus the CIDR's prefix. The values are
 * struct sv_net_allow_value (shared/net_abi.h), folded the same way. */
struct sv_lsm_net_key {
	__u32 prefixlen;
	__u32 profile_be;
	__u8 addr[16];
};

/* What a socket_connect event carries instead of a path. */
struct sv_lsm_net_dest {
	__u8 addr[16]; /* IPv4-mapped IPv6 */
	__u16 port;    /* host byte order */
	__u8 family;   /* AF_INET / AF_INET6 */
	__u8 pad;
};

#endif /* SV_BPF_SHARED_LSM_ABI_H */
