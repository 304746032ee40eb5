// Lexical path normalisation shared by the policy loader and the supervisor.
//
// Policy rules and the paths read from syscalls must be compared in one
// canonical form, so both sides call normalizePath(). It is purely lexical
// (no symlink resolution, no syscalls): `.`, `..`, repeated `/` and trailing
// `/` are folded; `..` at the root stays at the root, as the kernel does.
#pragma once

#include <string>
#include <string_view>

namespace sv::policy {

// Returns the absolute, lexically normal form of `p`. A relative `p` is taken
// relative to `cwd` (which should itself be absolute; a relative cwd is
// treated as relative to `/`).
std::string normalizePath(std::string_view cwd, std::string_view p);
// The same into `out` (which must not alias cwd or p), reusing its capacity:
// no allocation when `out` already holds cwd.size() + p.size() + 2 bytes. For
// the supervisor's per-syscall path.
void normalizePathInto(std::string_view cwd, std::string_view p, std::string& out);

// True when `path` equals `root` or lies below it (both absolute, normal).
bool isUnder(std::string_view path, std::string_view root);

// `path`, a name the kernel gave us (readlink of /proc/PID/cwd or fd/N), as
// the process whose root directory we see named `process_root` sees it: the
// root's name taken off the front ("/" when it is the root itself). A root
// of "" or "/" changes nothing, nor does a path outside the root (it has no
// name from there). Why: a process in another mount namespace (the mount
// floor) whose root we can't reach from ours is named from that namespace's
// root, e.g. "/mnt/chr/tmp/ws" for "/tmp/ws" when we run chrooted at /mnt/chr.
std::string_view pathInRoot(std::string_view path, std::string_view process_root);
// The same, in place.
void takePathInRoot(std::string& path, std::string_view process_root);

}  // namespace sv::policy
