/* lsm_helpers.h: inline helpers of the BPF-LSM programs: session scoping,
 * the task's profile, building a path in the per-CPU scratch buffer, walking
 * the compiled DFA over it, and reporting the decision.
 *
 * Needs vmlinux.h, bpf_helpers.h, bpf_tracing.h, bpf_core_read.h and
 * maps/lsm_maps.h first.
 */
#pragma once

#define SV_EACCES 13
#define SV_PATH_MASK (SV_LSM_PATH_MAX - 1)
#define SV_SCRATCH_MAX (SV_LSM_PATH_MAX + SV_LSM_NAME_MAX)

static __always_inline void sv_lsm_count(__u32 stat)
{
	__u64 *c = bpf_map_lookup_elem(&sv_lsm_stats, &stat);

	if (c)
		*c += 1;
}

static __always_inline bool sv_lsm_in_session(void)
{
	__u64 id = bpf_get_current_cgroup_id();

	return bpf_map_lookup_elem(&sv_lsm_sessions, &id) != NULL;
}

static __always_inline __u32 sv_lsm_profile(void)
{
	struct sv_lsm_task *t =
		bpf_task_storage_get(&sv_lsm_task_store, bpf_get_current_task_btf(), 0, 0);

	return t ? t->profile : 0;
}

static __always_inline struct sv_lsm_scratch *sv_lsm_scratch(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&sv_lsm_scratch_map, &zero);
}

/* The kfunc twin of bpf_d_path (6.12+): any LSM hook may call it, whereas
 * the helper is limited to the sleepable-capable hooks, which path_mknod
 * (the create route of open(O_CREAT)) is not. The loader only loads the
 * programs that use it when the kernel's BTF has it. */
extern int bpf_path_d_path(struct path *path, char *buf, size_t buf__sz) __ksym __weak;

/* The scratch buffer when the current task belongs to a session; NULL
 * when it is none of our business (or, impossibly, no buffer). */
static __always_inline struct sv_lsm_scratch *sv_lsm_session_scratch(void)
{
	return sv_lsm_in_session() ? sv_lsm_scratch() : NULL;
}

/* The path of `path` into s->path; returns its length without the NUL, or
 * a negative errno (too long, not a path). */
static __always_inline long sv_lsm_load_path(struct sv_lsm_scratch *s, const struct path *path,
					     bool kfunc)
{
	long n = kfunc ? bpf_path_d_path((struct path *)path, s->path, SV_LSM_PATH_MAX)
		       : bpf_d_path((struct path *)path, s->path, SV_LSM_PATH_MAX);

	if (n <= 1)
		return n < 0 ? n : -1;
	return n - 1;
}

/* dir + "/" + name (a hook on an entry that may not exist yet). */
static __always_inline long sv_lsm_load_child(struct sv_lsm_scratch *s, const struct path *dir,
					      struct dentry *dentry, bool kfunc)
{
	const unsigned char *name = BPF_CORE_READ(dentry, d_name.name);
	long n = sv_lsm_load_path(s, dir, kfunc);
	long m;

	if (n < 0)
		return n;
	if (n == 1 && s->path[0] == '/')
		n = 0; /* the root: "/" + name, not "//" + name */
	if (n >= SV_LSM_PATH_MAX - 1)
		return -36; /* ENAMETOOLONG */
	s->path[n & SV_PATH_MASK] = '/';
	n += 1;
	m = bpf_probe_read_kernel_str(&s->path[n & SV_PATH_MASK], SV_LSM_NAME_MAX, name);
	if (m <= 1)
		return -1;
	return n + m - 1;
}

struct sv_lsm_walk {
	__u32 state;
	__u32 len;
	__u32 miss;
};

/* One byte of the walk (bpf_loop callback): 1 stops the loop. */
static long sv_lsm_step(__u32 i, struct sv_lsm_walk *w)
{
	struct sv_lsm_scratch *s;
	__u32 *st, *next, key;
	__u8 cls;

	if (i >= w->len)
		return 1;
	st = bpf_map_lookup_elem(&sv_lsm_states, &w->state);
	if (!st) {
		w->miss = 1;
		return 1;
	}
	if (*st & SV_LSM_STATE_FINAL)
		return 1; /* no continuation changes the outcome */
	s = sv_lsm_scratch();
	if (!s) {
		w->miss = 1;
		return 1;
	}
	cls = sv_lsm_byte_class[(__u8)s->path[i & (SV_SCRATCH_MAX - 1)]];
	key = w->state * sv_lsm_nclasses + cls;
	next = bpf_map_lookup_elem(&sv_lsm_trans, &key);
	if (!next) {
		w->miss = 1;
		return 1;
	}
	w->state = *next;
	return 0;
}

/* The outcome for the path in s->path[0, len) under the task's profile. A
 * failed lookup (a table the loader did not fill) fails closed. */
static __always_inline struct sv_lsm_outcome *sv_lsm_decide(__u32 profile, __u32 op, __u32 len)
{
	struct sv_lsm_walk w = {};
	__u32 key, *start, *st, oi;

	if (profile >= sv_lsm_nprofiles)
		profile = 0;
	key = profile * SV_LSM_NUM_OPS + op;
	start = bpf_map_lookup_elem(&sv_lsm_starts, &key);
	if (!start)
		return NULL;
	w.state = *start;
	w.len = len == 1 ? 0 : len; /* "/" walks no byte */
	bpf_loop(SV_SCRATCH_MAX, sv_lsm_step, &w, 0);
	if (w.miss)
		return NULL;
	st = bpf_map_lookup_elem(&sv_lsm_states, &w.state);
	if (!st)
		return NULL;
	oi = *st & SV_LSM_STATE_OUTCOME_MASK;
	return bpf_map_lookup_elem(&sv_lsm_outcomes, &oi);
}

/* Reports a decision. Denials wake the consumer (adaptively); allows are
 * batched: no wake-up until 64 KiB wait, so a burst of opens costs the
 * supervisor one wake-up, not one each (it also drains on a timer). */
static __always_inline void sv_lsm_emit(struct sv_lsm_scratch *s, __u8 hook, __u8 op,
					__u8 verdict, __u32 value, __u32 profile, __u8 flags,
					long len)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u64 wake;
	long size;

	if (verdict == SV_LSM_ALLOW && (sv_lsm_cfg_flags & SV_LSM_CFG_DENY_EVENTS))
		return;
	s->ev.ktime_ns = bpf_ktime_get_ns();
	s->ev.cgroup_id = bpf_get_current_cgroup_id();
	s->ev.pid = (__u32)pid_tgid;
	s->ev.tgid = pid_tgid >> 32;
	s->ev.rule_index = value;
	s->ev.profile = profile;
	s->ev.op = op;
	s->ev.verdict = verdict;
	s->ev.hook = hook;
	s->ev.flags = flags;
	if (len < 0)
		len = 0;
	if (len > SV_SCRATCH_MAX)
		len = SV_SCRATCH_MAX;
	s->ev.path_len = len;
	size = sizeof(s->ev) + len;
	if (size > sizeof(*s))
		size = sizeof(*s);
	if (verdict == SV_LSM_ALLOW)
		wake = bpf_ringbuf_query(&sv_lsm_events, BPF_RB_AVAIL_DATA) > 65536
			       ? BPF_RB_FORCE_WAKEUP
			       : BPF_RB_NO_WAKEUP;
	else
		wake = 0;
	if (bpf_ringbuf_output(&sv_lsm_events, s, size, wake))
		sv_lsm_count(SV_LSM_STAT_DROPPED);
}

/* Judges the path in the scratch buffer (len from sv_lsm_load_*) for `op`,
 * reports it, and returns the hook's verdict: 0 or -EACCES. */
static __always_inline int sv_lsm_judge(struct sv_lsm_scratch *s, long len, __u8 hook, __u8 op)
{
	__u32 profile = sv_lsm_profile();
	struct sv_lsm_outcome *o;
	__u8 verdict = SV_LSM_DENY, flags = 0;
	__u32 value = 0;

	if (len == -1)
		return 0; /* not a path (pseudo file): not the policy's business */
	if (len < 0) {
		sv_lsm_count(SV_LSM_STAT_TOO_LONG);
		flags |= SV_LSM_EVENT_F_TRUNCATED;
		len = 0;
		o = NULL;
	} else if (len > 0 && s->path[0] != '/') {
		return 0;
	} else {
		o = sv_lsm_decide(profile, op, len);
		if (!o)
			sv_lsm_count(SV_LSM_STAT_TABLE_MISS);
	}
	if (o) {
		verdict = o->verdict;
		value = o->value;
	}
	if (verdict != SV_LSM_ALLOW && (sv_lsm_cfg_flags & SV_LSM_CFG_AUDIT_MODE))
		flags |= SV_LSM_EVENT_F_AUDIT;
	sv_lsm_emit(s, hook, op, verdict, value, profile, flags, len);
	if (verdict == SV_LSM_ALLOW || (flags & SV_LSM_EVENT_F_AUDIT))
		return 0;
	return -SV_EACCES;
}
