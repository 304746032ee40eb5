/* lsm_helpers.h: inline helpers of the BPF-LSM programs: session scoping,
 * the task's profile, building a path in the per-CPU scratch buffer, walking
 * the compiled DFA over it, and reporting the decision.
 *
 * Needs vmlinux.h, bpf_helpers.h, bpf_tracing.h, bpf_core_read.h and
 * maps/lsm_maps.h first.
 */
#pragma once

#define SV_EPERM 1
#define SV_EACCES 13
#define SV_EINVAL 22
#define SV_ENAMETOOLONG 36
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
		return -SV_ENAMETOOLONG;
	s->path[n & SV_PATH_MASK] = '/';
	n += 1;
	m = bpf_probe_read_kernel_str(&s->path[n & SV_PATH_MASK], SV_LSM_NAME_MAX, name);
	if (m <= 1)
		return -1;
	return n + m - 1;
}

/* A path built by walking up from a dentry, for hooks whose object the
 * path kfuncs refuse: a pointer derived from the hook's arguments through a
 * cast or bpf_skc_to_unix_sock() is untrusted ("R1 must be referenced or
 * trusted" from bpf_path_d_path), and bpf_d_path is refused outside the
 * sleepable hooks ("helper call is not allowed in probe"). The walk is
 * d_path's (fs/d_path.c, prepend_path) with CO-RE reads and without
 * rename_lock: up d_parent to the mount's root, over to the mount point in
 * the parent mount, until the caller's root or a namespace's (a tree the
 * caller's root does not reach is named from that root, as d_path names
 * it). A rename racing the walk can garble only a path whose directories
 * the caller may rename, i.e. one under its writable roots already. */
struct sv_lsm_climb {
	struct sv_lsm_scratch *s; /* depth: the dentries stacked so far */
	struct dentry *dentry;
	struct mount *mnt;
	struct dentry *root_dentry; /* the caller's root (chroot included) */
	struct vfsmount *root_mnt;
	long err; /* 1 while climbing, 0 at a root, < 0 fail closed */
};

/* One step of d_path's climb (fs/d_path.c, prepend_path), shared by the
 * path walk below and the moving-directory check (progs/lsm.bpf.c): up
 * d_parent, or from a mount's root over to its mount point in the parent
 * mount. TOP: a namespace's root or a detached tree's; STUCK: no parent to
 * go to below a mount's root (d_path's "escaped"), or a failed read. */
enum sv_lsm_step { SV_LSM_STEP_PARENT, SV_LSM_STEP_MOUNT, SV_LSM_STEP_TOP, SV_LSM_STEP_STUCK };

static __always_inline enum sv_lsm_step sv_lsm_step_up(struct dentry **at, struct mount **at_mnt)
{
	/* Locals: inside BPF_CORE_READ, (*at)->... would be relocated too. */
	struct dentry *dentry = *at, *parent;
	struct mount *mnt = *at_mnt, *up;
	struct vfsmount *vfsmnt = &mnt->mnt;

	if (dentry == BPF_CORE_READ(vfsmnt, mnt_root)) {
		up = BPF_CORE_READ(mnt, mnt_parent);
		if (up == mnt)
			return SV_LSM_STEP_TOP;
		*at = BPF_CORE_READ(mnt, mnt_mountpoint);
		*at_mnt = up;
		return SV_LSM_STEP_MOUNT;
	}
	parent = BPF_CORE_READ(dentry, d_parent);
	if (!parent || parent == dentry)
		return SV_LSM_STEP_STUCK;
	*at = parent;
	return SV_LSM_STEP_PARENT;
}

/* One step up (bpf_loop callback): 1 stops the walk. */
static long sv_lsm_climb_step(__u32 i, struct sv_lsm_climb *c)
{
	struct dentry *dentry = c->dentry;
	__u32 depth = c->s->depth;

	if (dentry == c->root_dentry && &c->mnt->mnt == c->root_mnt) {
		c->err = 0;
		return 1;
	}
	switch (sv_lsm_step_up(&c->dentry, &c->mnt)) {
	case SV_LSM_STEP_MOUNT:
		return 0;
	case SV_LSM_STEP_TOP:
		c->err = 0;
		return 1;
	case SV_LSM_STEP_PARENT:
		if (depth < SV_LSM_DEPTH_MAX) {
			c->s->dentries[depth & (SV_LSM_DEPTH_MAX - 1)] = (__u64)dentry;
			c->s->depth = depth + 1;
			return 0;
		}
		break; /* deeper than the stack: too long */
	default:
		break; /* not reachable from the root, or a failed read */
	}
	c->err = -SV_ENAMETOOLONG;
	return 1;
}

struct sv_lsm_names {
	struct sv_lsm_scratch *s; /* len: the path's length so far */
	long err;
};

/* Appends "/" + the name of the i-th dentry from the top (bpf_loop
 * callback): 1 stops. */
static long sv_lsm_put_name(__u32 i, struct sv_lsm_names *b)
{
	struct sv_lsm_scratch *s = b->s;
	__u32 depth = s->depth, len = s->len;
	struct dentry *d;
	long m;

	if (i >= depth || depth > SV_LSM_DEPTH_MAX)
		return 1;
	if (len >= SV_LSM_PATH_MAX - 1) {
		b->err = -SV_ENAMETOOLONG;
		return 1;
	}
	d = (struct dentry *)s->dentries[(depth - 1 - i) & (SV_LSM_DEPTH_MAX - 1)];
	s->path[len & SV_PATH_MASK] = '/';
	m = bpf_probe_read_kernel_str(&s->path[(len + 1) & SV_PATH_MASK], SV_LSM_NAME_MAX,
				      BPF_CORE_READ(d, d_name.name));
	if (m <= 1) {
		b->err = -SV_EINVAL; /* unreadable or empty: fail closed, never "no path" */
		return 1;
	}
	s->len = len + m; /* the '/' and m - 1 bytes of name */
	return 0;
}

/* The absolute path of (dentry, vfsmnt) into s->path, as sv_lsm_load_path
 * returns it; never -1 ("not a path"), so a failure is judged and denied. */
static __always_inline long sv_lsm_load_walked(struct sv_lsm_scratch *s, struct dentry *dentry,
					       struct vfsmount *vfsmnt)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct sv_lsm_climb c = {
		.s = s,
		.dentry = dentry,
		.mnt = (void *)vfsmnt - bpf_core_field_offset(struct mount, mnt),
		.root_dentry = BPF_CORE_READ(task, fs, root.dentry),
		.root_mnt = BPF_CORE_READ(task, fs, root.mnt),
		.err = 1,
	};
	struct sv_lsm_names b = {.s = s};

	s->depth = 0;
	s->len = 0;
	bpf_loop(2 * SV_LSM_DEPTH_MAX, sv_lsm_climb_step, &c, 0);
	if (c.err)
		return c.err < 0 ? c.err : -SV_ENAMETOOLONG; /* more mounts than steps */
	if (s->depth == 0) {
		s->path[0] = '/';
		return 1;
	}
	bpf_loop(SV_LSM_DEPTH_MAX, sv_lsm_put_name, &b, 0);
	return b.err ? b.err : s->len;
}

/* One policy version's tables, found under one version key (see
 * maps/lsm_maps.h): a decision uses these and nothing else. */
struct sv_lsm_tables {
	struct sv_lsm_policy *pol;
	void *trans;
	void *states;
	void *outcomes;
	void *net_allow;
};

/* The current version's tables; false (fail closed) when there are none.
 * NULL inner maps mean the version read was retired by a newer swap in
 * the meantime: read sv_lsm_current once more. */
static __always_inline bool sv_lsm_tables(struct sv_lsm_tables *t)
{
	__u32 zero = 0;

	for (int attempt = 0; attempt < 2; attempt++) {
		__u32 *cur = bpf_map_lookup_elem(&sv_lsm_current, &zero);
		void *header;
		__u32 v;

		if (!cur)
			return false;
		v = *cur;
		header = bpf_map_lookup_elem(&sv_lsm_pol_header, &v);
		t->trans = bpf_map_lookup_elem(&sv_lsm_pol_trans, &v);
		t->states = bpf_map_lookup_elem(&sv_lsm_pol_states, &v);
		t->outcomes = bpf_map_lookup_elem(&sv_lsm_pol_outcomes, &v);
		t->net_allow = bpf_map_lookup_elem(&sv_lsm_pol_net_allow, &v);
		if (!header || !t->trans || !t->states || !t->outcomes || !t->net_allow)
			continue;
		t->pol = bpf_map_lookup_elem(header, &zero);
		return t->pol != NULL;
	}
	return false;
}

struct sv_lsm_walk {
	struct sv_lsm_policy *pol;
	void *trans;
	struct sv_lsm_scratch *s;
	__u32 state; /* | SV_LSM_STATE_FINAL once no byte can change the outcome */
	__u32 len;
	__u32 miss;
};

/* One byte of the walk: false stops it (end of path, final state, miss). */
static __always_inline bool sv_lsm_step_byte(struct sv_lsm_walk *w, __u32 i)
{
	__u32 *next, key;
	__u8 cls;

	/* A bounds check, not a mask: SV_SCRATCH_MAX is no power of two, and
	 * `i & (SV_SCRATCH_MAX - 1)` read byte 0 again at i = 256. */
	if (i >= w->len || i >= SV_SCRATCH_MAX || (w->state & SV_LSM_STATE_FINAL))
		return false;
	cls = w->pol->byte_class[(__u8)w->s->path[i]];
	key = w->state * w->pol->nclasses + cls;
	next = bpf_map_lookup_elem(w->trans, &key);
	if (!next) {
		w->miss = 1;
		return false;
	}
	w->state = *next;
	return true;
}

/* SV_LSM_WALK_STRIDE bytes of the walk (bpf_loop callback): 1 stops the
 * loop. Several bytes per call spread the call's cost over them. */
#define SV_LSM_WALK_STRIDE 8
static long sv_lsm_step(__u32 i, struct sv_lsm_walk *w)
{
	__u32 at = i * SV_LSM_WALK_STRIDE;

#pragma unroll
	for (int k = 0; k < SV_LSM_WALK_STRIDE; k++)
		if (!sv_lsm_step_byte(w, at + k))
			return 1;
	return 0;
}

/* The outcome for the path in s->path[0, len) under `profile`. A failed
 * lookup (a table the loader did not fill) fails closed. */
static __always_inline struct sv_lsm_outcome *
sv_lsm_decide(struct sv_lsm_tables *t, struct sv_lsm_scratch *s, __u32 profile, __u32 op, __u32 len)
{
	struct sv_lsm_walk w = {.pol = t->pol, .trans = t->trans, .s = s};
	__u32 key, *st, oi;

	if (profile >= t->pol->nprofiles || profile >= SV_LSM_MAX_PROFILES)
		profile = 0;
	key = profile * SV_LSM_NUM_OPS + op;
	if (key >= SV_LSM_MAX_PROFILES * SV_LSM_NUM_OPS)
		return NULL;
	w.state = t->pol->starts[key];
	w.len = len == 1 ? 0 : len; /* "/" walks no byte */
	bpf_loop(SV_SCRATCH_MAX / SV_LSM_WALK_STRIDE, sv_lsm_step, &w, 0);
	if (w.miss)
		return NULL;
	key = w.state & SV_LSM_STATE_OUTCOME_MASK;
	st = bpf_map_lookup_elem(t->states, &key);
	if (!st)
		return NULL;
	oi = *st & SV_LSM_STATE_OUTCOME_MASK;
	return bpf_map_lookup_elem(t->outcomes, &oi);
}

/* The number of the system call the current task is in (what events name
 * as `syscall`): orig_ax of its user registers, -1 there outside one (a
 * kernel thread, an exec the kernel started). The session's seccomp filter
 * refuses foreign ABIs, so this is a native number. */
static __always_inline __u16 sv_lsm_syscall_nr(void)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	long nr = regs->orig_ax;

	return nr >= 0 && nr < SV_LSM_NO_SYSCALL ? nr : SV_LSM_NO_SYSCALL;
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
	s->ev.syscall_nr = sv_lsm_syscall_nr();
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

/* Judges the path in the scratch buffer (len from sv_lsm_load_*) for `op`
 * with the tables `t` (NULL: look up the current ones), reports it, and
 * returns the hook's verdict: 0 or -EACCES. */
static __always_inline int sv_lsm_judge_with(struct sv_lsm_tables *t, struct sv_lsm_scratch *s,
					     long len, __u8 hook, __u8 op)
{
	__u32 profile = sv_lsm_profile();
	struct sv_lsm_outcome *o = NULL;
	__u8 verdict = SV_LSM_DENY, flags = 0;
	__u32 value = 0;

	if (len == -1)
		return 0; /* not a path (pseudo file): not the policy's business */
	if (len > 0 && s->path[0] != '/')
		return 0;
	if (len < 0) {
		sv_lsm_count(SV_LSM_STAT_TOO_LONG);
		flags |= SV_LSM_EVENT_F_TRUNCATED;
		len = 0;
	} else if (t) {
		o = sv_lsm_decide(t, s, profile, op, len);
		if (!o)
			sv_lsm_count(SV_LSM_STAT_TABLE_MISS);
	} else {
		sv_lsm_count(SV_LSM_STAT_TABLE_MISS);
	}
	if (o) {
		verdict = o->verdict;
		value = o->value;
	}
	if (verdict != SV_LSM_ALLOW && t && (t->pol->flags & SV_LSM_POL_AUDIT))
		flags |= SV_LSM_EVENT_F_AUDIT;
	sv_lsm_emit(s, hook, op, verdict, value, profile, flags, len);
	if (verdict == SV_LSM_ALLOW || (flags & SV_LSM_EVENT_F_AUDIT))
		return 0;
	return -SV_EACCES;
}

static __always_inline int sv_lsm_judge(struct sv_lsm_scratch *s, long len, __u8 hook, __u8 op)
{
	struct sv_lsm_tables t;

	return sv_lsm_judge_with(sv_lsm_tables(&t) ? &t : NULL, s, len, hook, op);
}
