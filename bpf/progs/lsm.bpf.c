// SPDX-License-Identifier: GPL-2.0
/* lsm.bpf.c: the BPF-LSM backend: every file open, path change and exec of a
 * session's tasks judged in the kernel against the compiled policy.
 *
 * Each hook turns its object into an absolute path (bpf_d_path, plus the new
 * entry's name for hooks on entries that do not exist yet), walks the
 * (profile, op) DFA that policy/compile_lsm.cpp built from the same rules
 * Engine::decide uses, reports the decision with its rule index, and returns
 * -EACCES on a denial (0 in audit mode). Tasks outside the session cgroups
 * are never judged. The profile lives in task storage: inherited by
 * task_alloc, switched by exec.switch rules once an exec has committed.
 * Hooks the running kernel lacks are left unloaded by the loader.
 * socket_connect and socket_sendmsg (sendto with an address) judge IPv4/IPv6
 * destinations against the profile's network mode and allowlist (an LPM
 * trie keyed by profile and address). unix_stream_connect and unix_may_send
 * judge a pathname unix socket's peer as a write of its bound path (the
 * resolved socket, symlinks followed; the path built by a CO-RE walk up the
 * dentries, since neither path helper accepts it there).
 */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "maps/lsm_maps.h"
#include "lib/lsm_helpers.h"

char LICENSE[] SEC("license") = "GPL";

/* Not in vmlinux.h (#defines in linux/fs.h). */
#define SV_FMODE_WRITE 0x2
#define SV_FMODE_EXEC 0x20
#define SV___FMODE_EXEC 0x20 /* the open flag execve's open carries in f_flags */
#define SV_O_TRUNC 01000

static __always_inline int sv_lsm_path_op(const struct path *path, __u8 hook, __u8 op)
{
	struct sv_lsm_scratch *s = sv_lsm_session_scratch();

	return s ? sv_lsm_judge(s, sv_lsm_load_path(s, path, false), hook, op) : 0;
}

static __always_inline int sv_lsm_child_op(const struct path *dir, struct dentry *dentry, __u8 hook,
					   bool kfunc)
{
	struct sv_lsm_scratch *s = sv_lsm_session_scratch();

	return s ? sv_lsm_judge(s, sv_lsm_load_child(s, dir, dentry, kfunc), hook, SV_LSM_OP_WRITE)
		 : 0;
}

SEC("lsm/file_open")
int BPF_PROG(file_open, struct file *file)
{
	unsigned int mode = BPF_CORE_READ(file, f_mode);
	unsigned int flags = BPF_CORE_READ(file, f_flags);

	/* The binary of an exec is judged (as an exec) by bprm_check_security. */
	if ((mode & SV_FMODE_EXEC) || (flags & SV___FMODE_EXEC))
		return 0;
	/* O_RDONLY|O_TRUNC opens for reading and then truncates (through
	 * file_truncate, not path_truncate): a write. f_flags still has O_TRUNC
	 * here; do_dentry_open clears it after this hook. */
	return sv_lsm_path_op(&file->f_path, SV_LSM_HOOK_FILE_OPEN,
			      (mode & SV_FMODE_WRITE) || (flags & SV_O_TRUNC) ? SV_LSM_OP_WRITE
									: SV_LSM_OP_READ);
}

/* A directory move (rename) is judged in user space: the notify handler
 * walks the tree for protected paths under both names, then renames. Creates
 * do not wait for it here, so one landing after the walk would move under a
 * name no check saw (`mkdir x; mv x .git` racing a create of x/config). The
 * handler lists the directory in sv_lsm_moving for the walk and the rename,
 * and a create below it is refused meanwhile. No window: a create holds its
 * parent's i_rwsem from this hook until the entry exists, and the walk's
 * readdir takes it too, so a create either precedes the listing (and is
 * seen) or runs after the mark (and is refused). The climb follows d_parent
 * and crosses mounts as d_path does; one deeper than its bound is refused. */
struct sv_lsm_up {
	struct dentry *dentry;
	struct mount *mnt;
	int found; /* 1: below a moving directory; -1: too deep to tell */
};

static long sv_lsm_up_step(__u32 i, struct sv_lsm_up *u)
{
	struct dentry *dentry = u->dentry;
	struct sv_lsm_inode_key key = {
		.ino = BPF_CORE_READ(dentry, d_inode, i_ino),
		.dev = BPF_CORE_READ(dentry, d_sb, s_dev),
	};

	if (bpf_map_lookup_elem(&sv_lsm_moving, &key)) {
		u->found = 1;
		return 1;
	}
	switch (sv_lsm_step_up(&u->dentry, &u->mnt)) {
	case SV_LSM_STEP_PARENT:
	case SV_LSM_STEP_MOUNT:
		return 0;
	default:
		u->found = 0; /* the top */
		return 1;
	}
}

#define SV_LSM_UP_MAX 2048
static __always_inline bool sv_lsm_below_moving(const struct path *dir)
{
	struct sv_lsm_up u = {
		.dentry = BPF_CORE_READ(dir, dentry),
		.mnt = (void *)BPF_CORE_READ(dir, mnt) - bpf_core_field_offset(struct mount, mnt),
		.found = -1,
	};

	if (!sv_lsm_moves)
		return false;
	bpf_loop(SV_LSM_UP_MAX, sv_lsm_up_step, &u, 0);
	return u.found != 0;
}

/* A create (mknod, O_CREAT, mkdir, symlink): refused below a directory being
 * moved, else judged as a write of the new entry. */
static __always_inline int sv_lsm_create_op(const struct path *dir, struct dentry *dentry,
					    __u8 hook, bool kfunc)
{
	struct sv_lsm_scratch *s = sv_lsm_session_scratch();
	long len;

	if (!s)
		return 0;
	len = sv_lsm_load_child(s, dir, dentry, kfunc);
	if (!sv_lsm_below_moving(dir))
		return sv_lsm_judge(s, len, hook, SV_LSM_OP_WRITE);
	sv_lsm_emit(s, hook, SV_LSM_OP_WRITE, SV_LSM_DENY, 0, sv_lsm_profile(),
		    SV_LSM_EVENT_F_MOVING, len);
	return -SV_EACCES;
}

/* Also reached by open(O_CREAT) of a new file (may_o_create), before it
 * exists: judging here means a denied create leaves no empty file behind.
 * Needs bpf_path_d_path; without it file_open judges the create afterwards. */
SEC("lsm/path_mknod")
int BPF_PROG(path_mknod, const struct path *dir, struct dentry *dentry, umode_t mode,
	     unsigned int dev)
{
	return sv_lsm_create_op(dir, dentry, SV_LSM_HOOK_PATH_MKNOD, true);
}

SEC("lsm/path_unlink")
int BPF_PROG(path_unlink, const struct path *dir, struct dentry *dentry)
{
	return sv_lsm_child_op(dir, dentry, SV_LSM_HOOK_PATH_UNLINK, false);
}

SEC("lsm/path_mkdir")
int BPF_PROG(path_mkdir, const struct path *dir, struct dentry *dentry, umode_t mode)
{
	return sv_lsm_create_op(dir, dentry, SV_LSM_HOOK_PATH_MKDIR, false);
}

SEC("lsm/path_rmdir")
int BPF_PROG(path_rmdir, const struct path *dir, struct dentry *dentry)
{
	return sv_lsm_child_op(dir, dentry, SV_LSM_HOOK_PATH_RMDIR, false);
}

SEC("lsm/path_symlink")
int BPF_PROG(path_symlink, const struct path *dir, struct dentry *dentry, const char *old_name)
{
	return sv_lsm_create_op(dir, dentry, SV_LSM_HOOK_PATH_SYMLINK, false);
}

/* Both ends are writes: the source disappears, the target appears. */
SEC("lsm/path_rename")
int BPF_PROG(path_rename, const struct path *old_dir, struct dentry *old_dentry,
	     const struct path *new_dir, struct dentry *new_dentry)
{
	int ret = sv_lsm_child_op(old_dir, old_dentry, SV_LSM_HOOK_PATH_RENAME, false);

	if (ret)
		return ret;
	return sv_lsm_child_op(new_dir, new_dentry, SV_LSM_HOOK_PATH_RENAME, false);
}

SEC("lsm/path_link")
int BPF_PROG(path_link, struct dentry *old_dentry, const struct path *new_dir,
	     struct dentry *new_dentry)
{
	return sv_lsm_child_op(new_dir, new_dentry, SV_LSM_HOOK_PATH_LINK, false);
}

SEC("lsm/path_truncate")
int BPF_PROG(path_truncate, const struct path *path)
{
	return sv_lsm_path_op(path, SV_LSM_HOOK_PATH_TRUNCATE, SV_LSM_OP_WRITE);
}

/* chmod, fchmod, fchmodat(2): every form reaches this hook with the file's path. */
SEC("lsm/path_chmod")
int BPF_PROG(path_chmod, const struct path *path, umode_t mode)
{
	return sv_lsm_path_op(path, SV_LSM_HOOK_PATH_CHMOD, SV_LSM_OP_WRITE);
}

/* chown, lchown, fchown, fchownat. The uid and gid arguments (structs,
 * which BPF_PROG cannot unpack) are not needed. */
SEC("lsm/path_chown")
int BPF_PROG(path_chown, const struct path *path)
{
	return sv_lsm_path_op(path, SV_LSM_HOOK_PATH_CHOWN, SV_LSM_OP_WRITE);
}

/* No file_truncate program: ftruncate needs a file opened for writing, and
 * file_open judges every open with O_TRUNC as a write. */

/* Whether `file` is a dynamic loader by its name, as the notify handler's
 * isDynamicLoader names them (supervisor/notify/loader_exec.cpp): ld.so,
 * ld.so.*, ld64.so.*, ld-*.so* (glibc's ld-linux*, musl's ld-musl-*). A name
 * longer than the buffer that starts "ld-" counts: marking a task that is no
 * loader costs only the judgement of its first executable mapping. */
#define SV_LOADER_NAME_MAX 64
static __always_inline bool sv_lsm_is_loader(struct file *file)
{
	char name[SV_LOADER_NAME_MAX];
	long n = bpf_probe_read_kernel_str(name, sizeof name,
					   BPF_CORE_READ(file, f_path.dentry, d_name.name));

	if (n < 4 || name[0] != 'l' || name[1] != 'd')
		return false;
	if (name[2] == '-') {
		if (n == sizeof name)
			return true;
		for (int i = 3; i + 3 < SV_LOADER_NAME_MAX; i++) {
			if (i + 2 >= n)
				break;
			if (name[i] == '.' && name[i + 1] == 's' && name[i + 2] == 'o')
				return true;
		}
		return false;
	}
	if (name[2] == '.' && name[3] == 's' && n >= 6 && name[4] == 'o')
		return n == 6 || name[5] == '.'; /* "ld.so", "ld.so.*" */
	return n >= 9 && name[2] == '6' && name[3] == '4' && name[4] == '.' && name[5] == 's' &&
	       name[6] == 'o' && name[7] == '.'; /* "ld64.so.*" */
}

SEC("lsm/bprm_check_security")
int BPF_PROG(bprm_check_security, struct linux_binprm *bprm)
{
	struct sv_lsm_tables tables, *t;
	struct sv_lsm_scratch *s;
	struct sv_lsm_outcome *sw;
	struct sv_lsm_task *task;
	__u32 profile;
	bool loader;
	long len;
	int ret;

	s = sv_lsm_session_scratch();
	if (!s)
		return 0;
	/* One version decides both the exec and the switch. */
	t = sv_lsm_tables(&tables) ? &tables : NULL;
	len = sv_lsm_load_path(s, &bprm->file->f_path, false);
	ret = sv_lsm_judge_with(t, s, len, SV_LSM_HOOK_BPRM_CHECK, SV_LSM_OP_EXEC);
	if (ret || len < 0 || !t)
		return ret;
	loader = sv_lsm_is_loader(bprm->file);
	task = bpf_task_storage_get(&sv_lsm_task_store, bpf_get_current_task_btf(), 0,
				    BPF_LOCAL_STORAGE_GET_F_CREATE);
	/* A loader whose mark cannot be kept would map its program unjudged. */
	if (!task)
		return loader ? -SV_EACCES : 0;
	/* Every round (a script, then its interpreter) overwrites it: the
	 * last round's binary is what runs. */
	if (loader)
		task->flags |= SV_LSM_TASK_F_LOADER_PENDING;
	else
		task->flags &= ~SV_LSM_TASK_F_LOADER_PENDING;
	/* Profile switches follow the path the caller executed (the first
	 * round), not a script's interpreter; they take effect at commit. */
	if (BPF_CORE_READ(bprm, interp) != BPF_CORE_READ(bprm, filename))
		return 0;
	profile = sv_lsm_profile();
	sw = sv_lsm_decide(t, s, profile, SV_LSM_OP_SWITCH, len);
	task->flags &= ~SV_LSM_TASK_F_PENDING;
	if (sw && sw->verdict == SV_LSM_SWITCH) {
		task->pending_profile = sw->value;
		task->flags |= SV_LSM_TASK_F_PENDING;
	}
	return 0;
}

SEC("lsm/bprm_committed_creds")
int BPF_PROG(bprm_committed_creds, struct linux_binprm *bprm)
{
	struct sv_lsm_task *t;

	if (!sv_lsm_in_session())
		return 0;
	t = bpf_task_storage_get(&sv_lsm_task_store, bpf_get_current_task_btf(), 0, 0);
	if (!t)
		return 0;
	if (t->flags & SV_LSM_TASK_F_PENDING) {
		t->profile = t->pending_profile;
		t->flags &= ~SV_LSM_TASK_F_PENDING;
	}
	if (t->flags & SV_LSM_TASK_F_LOADER_PENDING)
		t->flags |= SV_LSM_TASK_F_LOADING;
	else
		t->flags &= ~SV_LSM_TASK_F_LOADING;
	t->flags &= ~SV_LSM_TASK_F_LOADER_PENDING;
	return 0;
}

/* The dynamic loader run as a program (`ld-linux-x86-64.so.2 ./tool`): the
 * kernel execs the loader, which then maps ./tool itself, with open and
 * mmap, in no exec bprm_check_security sees. A task whose exec committed a
 * loader is LOADING: its first executable mapping of a file other than the
 * loader is the program, judged by the exec rules as an exec of it and
 * followed by the profile switch an exec of it makes. glibc's and musl's
 * loaders map the program before any other object (--preload and --audit
 * libraries come after it; the ld.so.cache a search reads first is mapped
 * read-only), and no code but the loader's runs before. The file mapped is
 * the one judged: nothing to race, unlike the argument the notify handler
 * reads. Every other mmap costs a task-storage lookup. */
#define SV_PROT_EXEC 0x4
SEC("lsm/mmap_file")
int BPF_PROG(mmap_file, struct file *file, unsigned long reqprot, unsigned long prot,
	     unsigned long flags)
{
	struct task_struct *current = bpf_get_current_task_btf();
	struct sv_lsm_tables tables, *t;
	struct sv_lsm_scratch *s;
	struct sv_lsm_outcome *sw;
	struct sv_lsm_task *task;
	long len;
	int ret;

	if (!file || !(prot & SV_PROT_EXEC))
		return 0;
	task = bpf_task_storage_get(&sv_lsm_task_store, current, 0, 0);
	if (!task || !(task->flags & SV_LSM_TASK_F_LOADING))
		return 0;
	/* The loader's own segments, which the exec maps. */
	if (BPF_CORE_READ(file, f_inode) == BPF_CORE_READ(current, mm, exe_file, f_inode))
		return 0;
	task->flags &= ~SV_LSM_TASK_F_LOADING;
	s = sv_lsm_session_scratch();
	if (!s)
		return 0;
	t = sv_lsm_tables(&tables) ? &tables : NULL;
	len = sv_lsm_load_path(s, &file->f_path, false);
	ret = sv_lsm_judge_with(t, s, len, SV_LSM_HOOK_MMAP_FILE, SV_LSM_OP_EXEC);
	if (ret || len < 0 || !t)
		return ret;
	sw = sv_lsm_decide(t, s, task->profile, SV_LSM_OP_SWITCH, len);
	if (sw && sw->verdict == SV_LSM_SWITCH)
		task->profile = sw->value;
	return 0;
}

/* fork/clone: the child starts in its parent's profile. */
SEC("lsm/task_alloc")
int BPF_PROG(task_alloc, struct task_struct *task, unsigned long clone_flags)
{
	struct sv_lsm_task *parent, *child;

	if (!sv_lsm_in_session())
		return 0;
	parent = bpf_task_storage_get(&sv_lsm_task_store, bpf_get_current_task_btf(), 0, 0);
	if (!parent || parent->profile == 0)
		return 0;
	child = bpf_task_storage_get(&sv_lsm_task_store, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (child)
		child->profile = parent->profile;
	return 0;
}

#define SV_AF_INET 2
#define SV_AF_INET6 10

/* The allowlist verdict for dest under profile (see Engine decideConnect). */
static __always_inline __u8 sv_lsm_net_judge(struct sv_lsm_tables *t, __u32 profile,
					     struct sv_lsm_net_dest *dest, __u32 *rule)
{
	struct sv_lsm_net_key key = {};
	struct sv_net_allow_value *v;
	__u32 mode;

	*rule = t->pol->rule_net_default;
	if (profile >= SV_LSM_MAX_PROFILES)
		return SV_LSM_DENY;
	mode = t->pol->net_mode[profile];
	if (mode == SV_NET_MODE_NONE) {
		*rule = t->pol->rule_net_none;
		return SV_LSM_DENY;
	}
	if (mode == SV_NET_MODE_ALL) {
		*rule = t->pol->rule_net_all;
		return SV_LSM_ALLOW;
	}
	key.prefixlen = 32 + 128;
	key.profile_be = bpf_htonl(profile);
	__builtin_memcpy(key.addr, dest->addr, 16);
	v = bpf_map_lookup_elem(t->net_allow, &key);
	if (!v)
		return SV_LSM_DENY;
	for (int i = 0; i < SV_NET_MAX_PORT_RANGES; i++) {
		if (i >= v->count)
			break;
		if (dest->port >= v->ranges[i].lo && dest->port <= v->ranges[i].hi) {
			*rule = v->ranges[i].rule_index;
			return SV_LSM_ALLOW;
		}
	}
	return SV_LSM_DENY;
}

/* One destination judged for connect or sendmsg: its verdict as a return
 * value. A refusal is EPERM, as the cgroup programs' are (they can return
 * nothing else; docs/network.md): one errno per network denial, whichever
 * backend judged it. */
static __always_inline int sv_lsm_net_op(struct sockaddr *address, int addrlen, __u8 hook)
{
	struct sv_lsm_net_dest *dest;
	struct sv_lsm_scratch *s;
	struct sv_lsm_tables t;
	__u16 family;
	__u32 profile, rule;
	__u8 verdict, flags = 0;

	if (!address || addrlen < (int)sizeof(family))
		return 0;
	family = BPF_CORE_READ(address, sa_family);
	if (family != SV_AF_INET && family != SV_AF_INET6)
		return 0; /* unix sockets, AF_UNSPEC (disconnect): not network policy */
	s = sv_lsm_session_scratch();
	if (!s)
		return 0;
	dest = (struct sv_lsm_net_dest *)s->path;
	__builtin_memset(dest, 0, sizeof(*dest));
	dest->family = family;
	if (family == SV_AF_INET) {
		struct sockaddr_in in4;

		if (addrlen < (int)sizeof(in4) || bpf_probe_read_kernel(&in4, sizeof(in4), address))
			return -SV_EPERM;
		dest->addr[10] = 0xff;
		dest->addr[11] = 0xff;
		__builtin_memcpy(&dest->addr[12], &in4.sin_addr.s_addr, 4);
		dest->port = bpf_ntohs(in4.sin_port);
	} else {
		struct sockaddr_in6 in6;

		/* 24 bytes is the RFC 2133 size without sin6_scope_id, still accepted. */
		if (addrlen < 24 || bpf_probe_read_kernel(&in6, 24, address))
			return -SV_EPERM;
		__builtin_memcpy(dest->addr, &in6.sin6_addr, 16);
		dest->port = bpf_ntohs(in6.sin6_port);
	}
	profile = sv_lsm_profile();
	if (sv_lsm_tables(&t)) {
		if (profile >= t.pol->nprofiles)
			profile = 0;
		verdict = sv_lsm_net_judge(&t, profile, dest, &rule);
		if (verdict != SV_LSM_ALLOW && (t.pol->flags & SV_LSM_POL_AUDIT))
			flags |= SV_LSM_EVENT_F_AUDIT;
	} else {
		sv_lsm_count(SV_LSM_STAT_TABLE_MISS);
		verdict = SV_LSM_DENY;
		rule = 0;
	}
	sv_lsm_emit(s, hook, SV_LSM_OP_CONNECT, verdict, rule, profile, flags, sizeof(*dest));
	if (verdict == SV_LSM_ALLOW || (flags & SV_LSM_EVENT_F_AUDIT))
		return 0;
	return -SV_EPERM;
}

SEC("lsm/socket_connect")
int BPF_PROG(socket_connect, struct socket *sock, struct sockaddr *address, int addrlen)
{
	return sv_lsm_net_op(address, addrlen, SV_LSM_HOOK_SOCKET_CONNECT);
}

/* sendto/sendmsg with a destination (UDP without connect; TCP fast open).
 * msg_name already points at the kernel's copy of the address. Without one
 * the socket is connected, and socket_connect judged that destination. */
SEC("lsm/socket_sendmsg")
int BPF_PROG(socket_sendmsg, struct socket *sock, struct msghdr *msg, int size)
{
	struct sockaddr *address = BPF_CORE_READ(msg, msg_name);

	return sv_lsm_net_op(address, BPF_CORE_READ(msg, msg_namelen), SV_LSM_HOOK_SOCKET_SENDMSG);
}

/* The profile's network mode (a profile past the policy's acts as the base). */
static __always_inline __u32 sv_lsm_net_mode(struct sv_lsm_tables *t, __u32 profile)
{
	if (profile >= t->pol->nprofiles || profile >= SV_LSM_MAX_PROFILES)
		profile = 0;
	return t->pol->net_mode[profile];
}

/* A pathname unix socket judged on the socket the kernel found (symlinks
 * followed: the peer), where the cgroup connect_unix program saw only the
 * address string. Connecting needs write permission on the socket file, so
 * the rule that applies is the write rule of the peer's bound path (roots
 * and deny globs). Abstract and unnamed peers have no path: Landlock's
 * scoping. Network mode all judges nothing, as on the host backend (no
 * network filter there). */
static __always_inline int sv_lsm_unix_peer_op(struct sock *peer, __u8 hook)
{
	struct unix_sock *u = (struct unix_sock *)peer;
	struct sv_lsm_tables tables, *t;
	struct sv_lsm_scratch *s;
	struct dentry *dentry;

	s = sv_lsm_session_scratch();
	if (!s)
		return 0;
	dentry = BPF_CORE_READ(u, path.dentry);
	if (!dentry)
		return 0;
	t = sv_lsm_tables(&tables) ? &tables : NULL;
	if (t && sv_lsm_net_mode(t, sv_lsm_profile()) == SV_NET_MODE_ALL)
		return 0;
	return sv_lsm_judge_with(t, s, sv_lsm_load_walked(s, dentry, BPF_CORE_READ(u, path.mnt)),
				 hook, SV_LSM_OP_WRITE);
}

/* connect(2) of a stream or seqpacket socket; other is the listener. */
SEC("lsm/unix_stream_connect")
int BPF_PROG(unix_stream_connect, struct sock *sock, struct sock *other, struct sock *newsk)
{
	return sv_lsm_unix_peer_op(other, SV_LSM_HOOK_UNIX_STREAM_CONNECT);
}

/* A datagram connect(2), and every datagram send (with an address or not). */
SEC("lsm/unix_may_send")
int BPF_PROG(unix_may_send, struct socket *sock, struct socket *other)
{
	struct sock *peer = BPF_CORE_READ(other, sk);
	struct unix_sock *self = (struct unix_sock *)BPF_CORE_READ(sock, sk);

	/* A send to the socket's connected peer: judged at the connect (the
	 * hook runs there before the peer is set), not again per datagram. */
	if (peer == BPF_CORE_READ(self, peer))
		return 0;
	return sv_lsm_unix_peer_op(peer, SV_LSM_HOOK_UNIX_MAY_SEND);
}

/* Not a hook: BPF_PROG_TEST_RUN runs it on the request in sv_lsm_test_req
 * and it answers there with the outcome the current policy's tables give,
 * through the same table lookup and walk the hooks use, `repeat` times (for
 * timing). Loaded only for differential tests and benchmarks
 * (LsmFilterOptions::test_only). A raw_tp, never attached: not sleepable, so
 * it may use the LPM-trie inner maps (6.18 refuses them to a syscall
 * program: "Sleepable programs can only use array, hash, ringbuf and local
 * storage maps, also as inner maps"). */
struct sv_lsm_test_run {
	struct sv_lsm_scratch *s;
	struct sv_lsm_test_request *req;
	struct sv_lsm_outcome *o;
	__u32 version;
};

static long sv_lsm_test_decide_once(__u32 i, struct sv_lsm_test_run *run)
{
	struct sv_lsm_tables t;

	run->o = NULL;
	if (!sv_lsm_tables(&t))
		return 1;
	run->version = t.pol->version;
	run->o = sv_lsm_decide(&t, run->s, run->req->profile, run->req->op, run->req->len);
	return 0;
}

SEC("raw_tp")
int decide_for_test(void *ctx)
{
	__u32 zero = 0;
	struct sv_lsm_test_request *req = bpf_map_lookup_elem(&sv_lsm_test_req, &zero);
	struct sv_lsm_test_run run = {.s = sv_lsm_scratch(), .req = req};
	__u64 start;

	if (!req)
		return 0;
	req->found = 0;
	if (!run.s || req->len > SV_LSM_PATH_MAX || req->op >= SV_LSM_NUM_OPS)
		return 0;
	if (bpf_probe_read_kernel(run.s->path, SV_LSM_PATH_MAX, req->path))
		return 0;
	start = bpf_ktime_get_ns();
	bpf_loop(req->repeat ? req->repeat : 1, sv_lsm_test_decide_once, &run, 0);
	req->elapsed_ns = bpf_ktime_get_ns() - start;
	if (!run.o)
		return 0;
	req->version = run.version;
	req->found = 1;
	req->verdict = run.o->verdict;
	req->value = run.o->value;
	return 0;
}
