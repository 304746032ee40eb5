// Protected names: the paths that exist at launch below the writable roots
// and that a deny-write rule names (`.env`, `.git/config`, supervise's own
// files), found by a bounded walk and bound read-only in the command's own
// mount namespace. The kernel then refuses a write to one (EROFS; EBUSY for
// a rename or unlink over it) whatever path, symlink or race led there.
//
// Two users: the mount floor (mount_floor.h, where Landlock is missing) and,
// with Landlock, the write opens the notify handler lets the kernel perform
// (docs/enforcement.md, "Write opens the kernel re-checks").
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "policy/model.h"

namespace sv::tracer {

// `path` is `dir` or lies below it (components, not characters).
bool isAtOrBelow(const std::string& path, const std::string& dir);

// mount_setattr(2) of `path` (from the cwd); 0 or -1 with errno.
int setMountAttributes(const char* path, unsigned flags, uint64_t set, uint64_t clr);

inline constexpr size_t kMaxWalkEntries = 50000;

struct ProtectedNames {
  std::vector<std::string> paths;  // sorted, each once: bind these read-only
  bool truncated = false;          // the walk hit its budget: names beyond it were not looked for
  // The first match a read-only mount does not protect (a FIFO, socket or
  // device node: writes to those ignore the mount's flag); "" when none.
  std::string unbindable;
};

// The existing paths below `writable_dirs` that a rule of `protect` matches.
// The walk starts at `cwd` (the command's own .env before the rest of a
// shared /tmp), then at each writable directory not already covered, and
// enters only directories below which a rule could still match, so a
// writable /tmp is walked down to the workspace's `.env`, not through every
// other program's temporary tree. Literal rules are looked up directly,
// whatever the budget. A matching directory covers what lies below it. A
// directory that vanishes or cannot be read under the walk costs only itself.
// `cancel`, when set, stops the walk as if its budget were spent.
ProtectedNames findProtectedNames(const std::vector<std::string>& writable_dirs,
                                  const std::string& cwd,
                                  const std::vector<policy::PathRule>& protect,
                                  size_t budget = kMaxWalkEntries,
                                  const std::atomic<bool>* cancel = nullptr);

// In the child, before Landlock (a Landlocked task may not mount): a mount
// namespace of its own, whose mounts receive the host's later mounts but
// send nothing back (MS_SLAVE), for the binds to come. Raw syscalls only.
// Returns 0, or -errno with *failed set to a static description of the step.
int enterOwnMountNamespace(const char** failed);

// `path` bound read-only onto itself (nosuid, nodev; recursively for a
// directory), in the caller's mount namespace: 0 (also when `path` is
// gone), or -errno with *failed set. Raw syscalls only.
int bindReadOnly(const char* path, const char** failed);

}  // namespace sv::tracer
