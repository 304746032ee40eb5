/* proc_abi.h: the ABI between the process-tracking BPF programs and the C++
 * loader (tracer/bpf/proc_tracker.cpp).
 *
 * Plain C, fixed-width fields, explicit padding and a size assertion per
 * struct, included by progs/proc.bpf.c and by C++ alike (see net_abi.h for the
 * conventions). The programs read kernel structs through offsets the loader
 * finds in the running kernel's BTF (struct sv_proc_layout), so the object
 * carries no CO-RE relocation and libbpf never parses the kernel BTF at load.
 * Bump SV_PROC_ABI_VERSION on any layout or meaning change.
 */
#pragma once

#ifndef __bpf__
#include <linux/types.h>
#endif

#ifdef __cplusplus
#define SV_PROC_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define SV_PROC_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

#define SV_PROC_ABI_VERSION 3

/* Files one exec approval may name: the binary and the "#!" interpreter
 * chain the handler judged (binfmt_script nests at most 4 deep). */
#define SV_PROC_MAX_APPROVED 6
/* Bytes of the exec'd path (bprm->filename) and of argv carried per event. */
#define SV_PROC_FILENAME_LEN 256
#define SV_PROC_ARGS_LEN 512
#define SV_PROC_COMM_LEN 16

/* Byte offsets of the kernel struct members the programs read, found by the
 * loader in /sys/kernel/btf/vmlinux. A zero-filled layout is never loaded. */
struct sv_proc_layout {
	__u32 task_pid;            /* task_struct.pid */
	__u32 task_tgid;           /* task_struct.tgid */
	__u32 task_real_parent;    /* task_struct.real_parent */
	__u32 task_start_boottime; /* task_struct.start_boottime (ns, CLOCK_BOOTTIME) */
	__u32 task_mm;             /* task_struct.mm */
	__u32 mm_arg_start;        /* mm_struct.arg_start */
	__u32 mm_arg_end;          /* mm_struct.arg_end */
	__u32 bprm_file;           /* linux_binprm.file */
	__u32 bprm_filename;       /* linux_binprm.filename */
	__u32 file_inode;          /* file.f_inode */
	__u32 inode_ino;           /* inode.i_ino */
	__u32 inode_sb;            /* inode.i_sb */
	__u32 sb_dev;              /* super_block.s_dev */
	__u32 _pad;
};
SV_PROC_STATIC_ASSERT(sizeof(struct sv_proc_layout) == 56, "sv_proc_layout layout");

/* A file as the kernel names it: super_block.s_dev (kernel encoding,
 * MAJOR << 20 | MINOR) and inode.i_ino. */
struct sv_proc_file_id {
	__u64 ino;
	__u32 dev;
	__u32 _pad;
};
SV_PROC_STATIC_ASSERT(sizeof(struct sv_proc_file_id) == 16, "sv_proc_file_id layout");

/* Value of sv_proc_approved, keyed by the thread id (init pid namespace) that
 * made the execve the supervisor let through: the files that exec may end up
 * running. One exec consumes it.
 *
 * args_len > 0: the decision also read argv (the dynamic loader run as a
 * program: the program it loads is an argument), so the new image's whole
 * argv area (arguments NUL-terminated, as the kernel lays them out) must be
 * args_len bytes that hash to args_hash (SV_PROC_FNV_STEP), or the exec is
 * killed as one whose arguments were swapped after the check. */
struct sv_proc_approval {
	__u32 count;
	__u32 args_len; /* at most SV_PROC_ARGS_LEN */
	__u64 args_hash;
	struct sv_proc_file_id ids[SV_PROC_MAX_APPROVED];
};
SV_PROC_STATIC_ASSERT(sizeof(struct sv_proc_approval) == 16 + 16 * SV_PROC_MAX_APPROVED,
		      "sv_proc_approval layout");

/* FNV-1a, 64 bit, of the checked argv bytes: one step per byte, the same in
 * the program and in the supervisor (tracer/bpf/proc_tracker.cpp). */
#define SV_PROC_FNV_OFFSET 0xcbf29ce484222325ULL
#define SV_PROC_FNV_PRIME 0x100000001b3ULL
#define SV_PROC_FNV_STEP(hash, byte) (((hash) ^ (__u8)(byte)) * SV_PROC_FNV_PRIME)

/* Sessions one host-wide load serves at once (ABI version 2): the programs
 * are loaded and attached once per boot and shared, each session claims a
 * slot (tracer/bpf/proc_tracker.cpp). */
#define SV_PROC_MAX_SESSIONS 64
/* Bytes of each session's event ring buffer. */
#define SV_PROC_RING_BYTES (1024 * 1024)

/* Value of sv_proc_sessions, per slot. The programs read cgroup_id and flags;
 * owner_pid/owner_start tell a later claimer whether the supervisor that
 * claimed the slot still runs (a SIGKILLed one cannot release it). */
#define SV_PROC_SESSION_RECHECK 0x1 /* kill execs the supervisor did not approve */
#define SV_PROC_SESSION_AUDIT 0x2   /* audit only: report a failed re-check, never kill */
struct sv_proc_session {
	__u64 cgroup_id;   /* the session cgroup's id (its inode); 0: slot free */
	__u32 flags;       /* SV_PROC_SESSION_* */
	__u32 owner_pid;   /* the claiming supervisor */
	__u64 owner_start; /* its start time (/proc/PID/stat field 22) */
};
SV_PROC_STATIC_ASSERT(sizeof(struct sv_proc_session) == 24, "sv_proc_session layout");

/* Key of sv_proc_approved: an approval belongs to one thread in one session
 * (nested sessions each approve the execs they see). */
struct sv_proc_approval_key {
	__u32 tid;
	__u32 slot;
};
SV_PROC_STATIC_ASSERT(sizeof(struct sv_proc_approval_key) == 8, "sv_proc_approval_key layout");

enum sv_proc_event_type {
	SV_PROC_EVENT_FORK = 1, /* a new process (not a thread) */
	SV_PROC_EVENT_EXEC = 2, /* an exec completed (user code not yet run) */
	SV_PROC_EVENT_EXIT = 3, /* a thread group leader exited */
};

/* Verdict of the exec re-check, in sv_proc_event.verdict. */
enum sv_proc_verdict {
	SV_PROC_VERDICT_NONE = 0,     /* re-check off (not an exec, or not enabled) */
	SV_PROC_VERDICT_APPROVED = 1, /* the binary is one the supervisor approved */
	SV_PROC_VERDICT_MISMATCH = 2, /* approved, but for another file: the race */
	SV_PROC_VERDICT_UNAPPROVED = 3, /* no approval for this thread at all */
	SV_PROC_VERDICT_ARGS_MISMATCH = 4, /* the approved file, but argv changed (the loader's program) */
};

/* Flags in sv_proc_event.flags. */
#define SV_PROC_F_KILLED 0x1      /* SIGKILL sent before user code ran */
#define SV_PROC_F_KILL_FAILED 0x2 /* bpf_send_signal refused (kill_err holds why) */
#define SV_PROC_F_AUDIT 0x4       /* audit-only load: reported, not killed */
#define SV_PROC_F_ARGS_TRUNC 0x8  /* argv longer than SV_PROC_ARGS_LEN */

/* One event of sv_proc_events. Strings are NUL-padded; args holds argv as
 * the kernel laid it out (NUL-separated), args_len bytes of it. */
struct sv_proc_event {
	__u64 ktime_ns;      /* bpf_ktime_get_ns() */
	__u64 start_boottime; /* of the process (pid), ns since boot */
	__u64 session;       /* the session's cgroup id: a reused slot's ring may hold a
			      * previous session's last events */
	__u16 abi_version;   /* SV_PROC_ABI_VERSION */
	__u8 type;           /* enum sv_proc_event_type */
	__u8 verdict;        /* enum sv_proc_verdict */
	__u32 flags;         /* SV_PROC_F_* */
	__u32 pid;           /* thread id (init pid namespace) */
	__u32 tgid;          /* process id */
	__u32 ppid;          /* real parent's process id */
	__u32 old_pid;       /* exec: the thread that called execve (!= pid when not the leader) */
	__s32 kill_err;      /* bpf_send_signal's return when it failed */
	__u32 args_len;
	struct sv_proc_file_id file; /* exec: the binary that is about to run */
	char comm[SV_PROC_COMM_LEN];
	char filename[SV_PROC_FILENAME_LEN];
	char args[SV_PROC_ARGS_LEN];
};
SV_PROC_STATIC_ASSERT(sizeof(struct sv_proc_event) ==
			      56 + 16 + SV_PROC_COMM_LEN + SV_PROC_FILENAME_LEN + SV_PROC_ARGS_LEN,
		      "sv_proc_event layout");

/* Index of a session's counters in the sv_proc_stats per-CPU array, whose
 * entry is slot * SV_PROC_STAT_MAX + the counter. */
enum sv_proc_stat {
	SV_PROC_STAT_EVENTS_DROPPED = 0, /* ring buffer full: an event was lost */
	SV_PROC_STAT_KILLS = 1,          /* execs killed by the re-check */
	SV_PROC_STAT_MAX = 2,
};
