// Resolving a path argument exactly as the target process would, but pinned.
//
// A user-notify decision must not depend on memory or names the target can
// change after we looked (docs/enforcement.md: emulate, never CONTINUE). So the
// supervisor walks the target's path itself, one component at a time, from the
// target's root, cwd or dirfd (/proc/TID/{root,cwd}, /proc/TGID/fd/N), holding
// an O_PATH fd for each step. The result is the directory that holds the final
// component (for creates, unlinks, renames), the final object if it exists (for
// opens, truncates, chmods), and the real absolute path the engine decides on.
// The emulated operation then acts on those fds, never on the path again.
//
// Why not plain openat2 from /proc/TID/cwd: symlinks through /proc/self (as
// /dev/stdout -> /proc/self/fd/1) would resolve to the supervisor, not the
// target. The walk substitutes the target for "self"/"thread-self" and lets the
// kernel follow procfs magic links (fd/N, cwd, root, exe), which already point
// into the target's own fd table.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "common/result.h"
#include "common/unique_fd.h"

namespace sv::supervisor {

struct ResolveOptions {
  bool follow_final = true;    // follow a symlink in the last component
  bool no_symlinks = false;    // RESOLVE_NO_SYMLINKS: any symlink is ELOOP
  bool no_magiclinks = false;  // RESOLVE_NO_MAGICLINKS: procfs magic links are ELOOP
  bool beneath = false;        // RESOLVE_BENEATH: no absolute jumps, no `..` above the start
  // The caller uses only `object` and `real_path` (exec): a path through
  // plain symlinks may then be resolved by the kernel (openFollowingSymlinks).
  bool object_only = false;
  // The session cgroup's directory name. When set, /proc/PID of a process
  // outside the session is EACCES, as Landlock's scoping makes it for the
  // target itself: the supervisor opens with its own, ptrace-capable
  // credentials and must not lend them (another process's fds, mem, environ).
  std::string_view session_cgroup;
  // readlink of the target's /proc/PID/root as we see it ("" or "/": ours).
  // Names the kernel gives for the target's objects are taken relative to it
  // (policy::pathInRoot): under the mount floor with supervise itself
  // chrooted, the target's root is our root's name in its namespace.
  std::string_view process_root;
};

// True when `pid` runs in the cgroup named `session_cgroup` or below it
// (read from /proc/PID/cgroup). False for a process that is gone.
bool inSessionCgroup(pid_t pid, std::string_view session_cgroup);

// A /proc directory entry that names a process, task or fd: digits only.
bool isPidName(std::string_view s);

struct ResolvedPath {
  UniqueFd parent;        // O_PATH dir holding `name` (invalid when a magic link was the last step)
  std::string name;       // the last component as written ("." and ".." kept)
  UniqueFd object;        // O_PATH fd of the final object; invalid when it does not exist
  std::string real_path;  // absolute path the engine decides on ("pipe:[12]" for anonymous objects)
  bool must_be_dir = false;  // the path ended in '/'
};

// tid: the thread that made the syscall (its cwd and root); tgid: its process
// (its fd table). dirfd as passed to the *at syscall (AT_FDCWD allowed).
Result<ResolvedPath> resolveTargetPath(pid_t tid, pid_t tgid, int dirfd, std::string_view path,
                                       const ResolveOptions& options);

// The fast path, tried first. A path with no symlink in it means the same
// thing lexically as physically, so the decision can be taken on the lexical
// absolute path (the target's cwd or dirfd + the argument, normalised), and
// the operation then done with openat2(RESOLVE_NO_SYMLINKS) from the root: if
// any component turns out to be a symlink (including /proc/self, /dev/stdout)
// the kernel refuses with ELOOP and the caller falls back to the walk above.
// Forms the absolute lexical path, or fails when it can't be formed
// (unreadable dirfd: the caller falls back too).
// The path goes into `out`, reusing its capacity (no allocation once it is
// big enough: this runs for every notified open).
// `process_root`: as in ResolveOptions.
Status lexicalTargetPath(pid_t tid, pid_t tgid, int dirfd, std::string_view path,
                         std::string_view process_root, std::string& out);

// The root directory every target resolves absolute paths against. The tree
// can't chroot, pivot_root or unshare a mount namespace (no capabilities, no
// user namespaces), so it is the supervisor's own root, opened once, unless
// the session gave the command a mount namespace of its own with protected
// names bound read-only (write_recheck.h): then it is the command's root
// (setTargetRoot), so that what the handler opens lies on the command's
// mounts, past no bind.
int rootFd();
void setTargetRoot(UniqueFd root);

// An O_PATH fd of `pid`'s root directory, in its mount namespace.
Result<UniqueFd> openProcessRoot(pid_t pid);

// openat2 from rootFd() with RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS.
// Returns the fd, or -errno (ELOOP: a symlink was on the way).
int openNoSymlinks(std::string_view abs_path, uint64_t flags, uint64_t mode = 0);

// Whether `abs_path` names something from rootFd() with no symlink on the
// way: 0, or -errno (-ELOOP: a symlink). `only_final_may_be_one`: the
// directory part is known to be physical (a readlink of the target's cwd or
// dirfd), so one fstatat of the last component answers, not an open and a
// close.
int existsWithoutSymlinks(std::string_view abs_path, bool only_final_may_be_one);

// For object_only resolutions: an O_PATH fd of what `abs_path` names from
// rootFd(), the kernel following plain symlinks (the last one only with
// follow_final) but no magic link. Exact for the target as long as nothing on
// the way is procfs, whose "self" would name the supervisor: every way from a
// /proc/PID directory to a non-procfs object is a magic link, which fails
// here with ELOOP, and a result on procfs fails with EXDEV. Any failure means
// "take the walk", which also produces the exact errno.
int openFollowingSymlinks(std::string_view abs_path, bool follow_final);

// The kernel's idea of the absolute path of an O_PATH fd (readlink of
// /proc/self/fd/N), without a " (deleted)" suffix; for an object of the
// target's, taken relative to its root (`process_root`, as in ResolveOptions).
Result<std::string> fdPath(int fd, std::string_view process_root = {});

// readlink of /proc/PID/root: the name of `pid`'s root directory from ours.
// Read once per session, after the command's set-up (the mount floor).
Result<std::string> processRoot(pid_t pid);

}  // namespace sv::supervisor
