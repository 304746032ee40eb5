// SPDX-License-Identifier: GPL-2.0
/* proc.bpf.c: process tracking and the in-kernel exec re-check of a session.
 *
 * Three raw tracepoints, loaded and attached once per boot and shared by
 * every session (tracer/bpf/proc_tracker.cpp): each event is handled once per
 * session whose cgroup (or below) the current task is in, the sessions being
 * the claimed slots of sv_proc_sessions:
 *   sched_process_fork  a new process of the tree (threads are skipped),
 *   sched_process_exec  an exec that has passed the point of no return but
 *                       has not run a single user instruction yet,
 *   sched_process_exit  a thread exits (its exec approval is dropped) and, for
 *                       a thread group leader, the process.
 * At exec, in a session with SV_PROC_SESSION_RECHECK, the binary about to run
 * (bprm->file, the interpreter for a #! script) must be one of the files the
 * supervisor approved for the thread that called execve (sv_proc_approved,
 * keyed by old_pid and the slot); otherwise the process gets SIGKILL, which it can't
 * handle and which is delivered before it returns to user mode. See
 * docs/enforcement.md "exec" for why this closes the path race.
 *
 * Raw tracepoints, not tp_btf: their arguments are plain u64s and the kernel
 * structs are read at offsets the loader found in the kernel's BTF, so there
 * is no CO-RE relocation and no attach_btf_id for libbpf to resolve; parsing
 * the kernel BTF in libbpf cost ~30 ms per start-up here.
 */
#include <linux/bpf.h>
#include <stdbool.h>

#include <bpf/bpf_helpers.h>

#include "maps/proc_maps.h"

char LICENSE[] SEC("license") = "GPL";

#define SV_SIGKILL 9

static __always_inline void sv_proc_count(__u32 slot, __u32 stat)
{
	__u32 key = slot * SV_PROC_STAT_MAX + stat;
	__u64 *n = bpf_map_lookup_elem(&sv_proc_stats, &key);

	if (n)
		__sync_fetch_and_add(n, 1);
}

/* Reads a pointer-sized or smaller member at `off` of the kernel object at
 * `base`; 0 when base is NULL or the read faults. */
static __always_inline __u64 sv_read_u64(__u64 base, __u32 off)
{
	__u64 v = 0;

	if (base)
		bpf_probe_read_kernel(&v, sizeof(v), (void *)(base + off));
	return v;
}

static __always_inline __u32 sv_read_u32(__u64 base, __u32 off)
{
	__u32 v = 0;

	if (base)
		bpf_probe_read_kernel(&v, sizeof(v), (void *)(base + off));
	return v;
}

/* How many slots to scan: none while no session runs. */
static __always_inline __u32 sv_proc_active_slots(void)
{
	__u32 zero = 0;
	__u32 *n = bpf_map_lookup_elem(&sv_proc_active, &zero);

	if (!n)
		return 0;
	return *n < SV_PROC_MAX_SESSIONS ? *n : SV_PROC_MAX_SESSIONS;
}

/* The session of `slot` when the current task is in its tree, else NULL. */
static __always_inline struct sv_proc_session *sv_proc_session_of(__u32 slot)
{
	struct sv_proc_session *s;

	if (bpf_current_task_under_cgroup(&sv_proc_cgroups, slot) != 1)
		return NULL;
	s = bpf_map_lookup_elem(&sv_proc_sessions, &slot);
	return s && s->cgroup_id ? s : NULL;
}

static __always_inline struct sv_proc_event *sv_proc_reserve(__u32 slot,
							     const struct sv_proc_session *s,
							     __u8 type, __u64 task)
{
	struct sv_proc_event *ev = NULL;
	void *ring = bpf_map_lookup_elem(&sv_proc_rings, &slot);
	__u64 parent;

	if (ring)
		ev = bpf_ringbuf_reserve(ring, sizeof(*ev), 0);
	if (!ev) {
		sv_proc_count(slot, SV_PROC_STAT_EVENTS_DROPPED);
		return NULL;
	}
	ev->ktime_ns = bpf_ktime_get_ns();
	ev->session = s->cgroup_id;
	ev->abi_version = SV_PROC_ABI_VERSION;
	ev->type = type;
	ev->verdict = SV_PROC_VERDICT_NONE;
	ev->flags = 0;
	ev->pid = sv_read_u32(task, sv_proc_layout.task_pid);
	ev->tgid = sv_read_u32(task, sv_proc_layout.task_tgid);
	parent = sv_read_u64(task, sv_proc_layout.task_real_parent);
	ev->ppid = sv_read_u32(parent, sv_proc_layout.task_tgid);
	ev->start_boottime = sv_read_u64(task, sv_proc_layout.task_start_boottime);
	ev->old_pid = 0;
	ev->kill_err = 0;
	ev->args_len = 0;
	ev->file.ino = 0;
	ev->file.dev = 0;
	ev->file._pad = 0;
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));
	ev->filename[0] = 0;
	ev->args[0] = 0;
	return ev;
}

/* Hands the event over. A routine one (a fork, an exit, an exec let run)
 * does not wake the supervisor: a wake-up per event cost each fork+exec
 * about eight context switches (~0.7 ms on the test VM); the supervisor
 * drains on a timer, whenever it needs the events, and at the end. A
 * quarter of the ring waiting does wake it, and so does an exec the
 * re-check refused (its denial line is due now). */
static __always_inline void sv_proc_submit(__u32 slot, struct sv_proc_event *ev, int urgent)
{
	void *ring = bpf_map_lookup_elem(&sv_proc_rings, &slot);
	__u64 wake = 0;

	if (!urgent && ring)
		wake = bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) > SV_PROC_RING_BYTES / 4
			       ? BPF_RB_FORCE_WAKEUP
			       : BPF_RB_NO_WAKEUP;
	bpf_ringbuf_submit(ev, wake);
}

/* ---- fork ---------------------------------------------------------------- */

static long sv_proc_fork_in(__u32 slot, __u64 *child)
{
	struct sv_proc_session *s = sv_proc_session_of(slot);
	struct sv_proc_event *ev;

	if (!s)
		return 0;
	ev = sv_proc_reserve(slot, s, SV_PROC_EVENT_FORK, *child);
	if (ev)
		sv_proc_submit(slot, ev, 0);
	return 0;
}

SEC("raw_tp/sched_process_fork")
int sched_process_fork(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 child = ctx->args[1];
	__u32 n = sv_proc_active_slots();

	if (!n)
		return 0;
	/* clone(CLONE_THREAD) fires here too; the tree is tracked by process. */
	if (sv_read_u32(child, sv_proc_layout.task_pid) !=
	    sv_read_u32(child, sv_proc_layout.task_tgid))
		return 0;
	bpf_loop(n, sv_proc_fork_in, &child, 0);
	return 0;
}

/* ---- exec ---------------------------------------------------------------- */

struct sv_proc_exec_ctx {
	__u64 task;
	__u64 bprm;
	struct sv_proc_file_id id; /* the binary about to run */
	__u32 old_pid;
	__u32 killed; /* SIGKILL already sent (by an outer session's check) */
	long kill_err;
	__u64 arg_start, arg_end; /* the new image's argv area */
};

/* Whether `id` is among the approved files. */
static __always_inline bool sv_proc_approved_file(const struct sv_proc_approval *a,
						  const struct sv_proc_file_id *id)
{
	for (int i = 0; i < SV_PROC_MAX_APPROVED; i++) {
		if (i >= a->count)
			break;
		if (a->ids[i].ino == id->ino && a->ids[i].dev == id->dev)
			return true;
	}
	return false;
}

struct sv_proc_hash_ctx {
	const char *buf;
	__u64 hash;
};

/* One byte of the hash; bpf_loop keeps the verifier from walking 512
 * iterations inside the per-slot callback. */
static long sv_proc_hash_step(__u32 i, struct sv_proc_hash_ctx *h)
{
	if (i >= SV_PROC_ARGS_LEN)
		return 1;
	h->hash = SV_PROC_FNV_STEP(h->hash, h->buf[i]);
	return 0;
}

/* Whether the new argv area is exactly the a->args_len bytes the supervisor
 * approved (proc_abi.h, struct sv_proc_approval). */
static __always_inline bool sv_proc_args_match(const struct sv_proc_approval *a,
					       const struct sv_proc_exec_ctx *c)
{
	__u32 zero = 0, len = a->args_len;
	struct sv_proc_hash_ctx h = {.hash = SV_PROC_FNV_OFFSET};
	char *buf;

	if (len == 0)
		return true;
	/* The whole argv area, no more: an argument appended after the check
	 * would be read by the loader too. */
	if (len > SV_PROC_ARGS_LEN || c->arg_end < c->arg_start || c->arg_end - c->arg_start != len)
		return false;
	buf = bpf_map_lookup_elem(&sv_proc_args_scratch, &zero);
	if (!buf || bpf_probe_read_user(buf, len, (void *)c->arg_start) != 0)
		return false;
	h.buf = buf;
	bpf_loop(len, sv_proc_hash_step, &h, 0);
	return h.hash == a->args_hash;
}

static long sv_proc_exec_in(__u32 slot, struct sv_proc_exec_ctx *c)
{
	struct sv_proc_session *s = sv_proc_session_of(slot);
	struct sv_proc_approval_key key = {.tid = c->old_pid, .slot = slot};
	struct sv_proc_approval *approval;
	struct sv_proc_event *ev;
	__u8 verdict = SV_PROC_VERDICT_NONE;
	__u32 flags = 0;
	__u64 len;

	if (!s)
		return 0;
	if (s->flags & SV_PROC_SESSION_RECHECK) {
		/* old_pid: the thread that called execve, whose id the supervisor
		 * saw; after a non-leader exec the task already carries the leader's. */
		approval = bpf_map_lookup_elem(&sv_proc_approved, &key);
		if (!approval)
			verdict = SV_PROC_VERDICT_UNAPPROVED;
		else if (!c->id.ino || !sv_proc_approved_file(approval, &c->id))
			verdict = SV_PROC_VERDICT_MISMATCH;
		else if (!sv_proc_args_match(approval, c))
			verdict = SV_PROC_VERDICT_ARGS_MISMATCH;
		else
			verdict = SV_PROC_VERDICT_APPROVED;
		if (approval)
			bpf_map_delete_elem(&sv_proc_approved, &key);
		if (verdict != SV_PROC_VERDICT_APPROVED) {
			if (s->flags & SV_PROC_SESSION_AUDIT) {
				flags |= SV_PROC_F_AUDIT;
			} else {
				if (!c->killed) {
					c->kill_err = bpf_send_signal(SV_SIGKILL);
					c->killed = 1;
				}
				flags |= c->kill_err ? SV_PROC_F_KILL_FAILED : SV_PROC_F_KILLED;
				sv_proc_count(slot, SV_PROC_STAT_KILLS);
			}
		}
	}

	ev = sv_proc_reserve(slot, s, SV_PROC_EVENT_EXEC, c->task);
	if (!ev)
		return 0;
	ev->verdict = verdict;
	ev->flags = flags;
	ev->kill_err = (flags & SV_PROC_F_KILL_FAILED) ? (__s32)c->kill_err : 0;
	ev->old_pid = c->old_pid;
	ev->file = c->id;
	bpf_probe_read_kernel_str(ev->filename, sizeof(ev->filename),
				  (void *)sv_read_u64(c->bprm, sv_proc_layout.bprm_filename));
	len = c->arg_end > c->arg_start ? c->arg_end - c->arg_start : 0;
	if (len > SV_PROC_ARGS_LEN) {
		len = SV_PROC_ARGS_LEN;
		ev->flags |= SV_PROC_F_ARGS_TRUNC;
	}
	if (len && bpf_probe_read_user(ev->args, len, (void *)c->arg_start) == 0)
		ev->args_len = (__u32)len;
	sv_proc_submit(slot, ev,
		       verdict != SV_PROC_VERDICT_NONE && verdict != SV_PROC_VERDICT_APPROVED);
	return 0;
}

SEC("raw_tp/sched_process_exec")
int sched_process_exec(struct bpf_raw_tracepoint_args *ctx)
{
	struct sv_proc_exec_ctx c = {};
	__u32 n = sv_proc_active_slots();
	__u64 file, inode, sb, mm;

	if (!n)
		return 0;
	c.task = ctx->args[0];
	c.old_pid = (__u32)ctx->args[1];
	c.bprm = ctx->args[2];
	/* bprm->file is what runs: for a #! script binfmt_script has already
	 * swapped in the (innermost) interpreter. */
	file = sv_read_u64(c.bprm, sv_proc_layout.bprm_file);
	inode = sv_read_u64(file, sv_proc_layout.file_inode);
	c.id.ino = sv_read_u64(inode, sv_proc_layout.inode_ino);
	sb = sv_read_u64(inode, sv_proc_layout.inode_sb);
	c.id.dev = sv_read_u32(sb, sv_proc_layout.sb_dev);
	/* argv is on the new stack already (copy_strings), so present in memory. */
	mm = sv_read_u64(c.task, sv_proc_layout.task_mm);
	c.arg_start = sv_read_u64(mm, sv_proc_layout.mm_arg_start);
	c.arg_end = sv_read_u64(mm, sv_proc_layout.mm_arg_end);
	bpf_loop(n, sv_proc_exec_in, &c, 0);
	return 0;
}

/* ---- exit ---------------------------------------------------------------- */

struct sv_proc_exit_ctx {
	__u64 task;
	__u32 pid;
	__u32 leader; /* the thread group leader: the process exits */
};

static long sv_proc_exit_in(__u32 slot, struct sv_proc_exit_ctx *c)
{
	struct sv_proc_session *s = sv_proc_session_of(slot);
	struct sv_proc_approval_key key = {.tid = c->pid, .slot = slot};
	struct sv_proc_event *ev;

	if (!s)
		return 0;
	/* Before the tid can be reused: an approval never outlives its thread. */
	bpf_map_delete_elem(&sv_proc_approved, &key);
	if (!c->leader)
		return 0;
	ev = sv_proc_reserve(slot, s, SV_PROC_EVENT_EXIT, c->task);
	if (ev)
		sv_proc_submit(slot, ev, 0);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int sched_process_exit(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct sv_proc_exit_ctx c = {};
	__u32 n = sv_proc_active_slots();

	if (!n)
		return 0;
	c.task = ctx->args[0];
	c.pid = (__u32)pid_tgid;
	c.leader = c.pid == (__u32)(pid_tgid >> 32);
	bpf_loop(n, sv_proc_exit_in, &c, 0);
	return 0;
}
