// execFileIdOf(): a file as the kernel identifies it when it execs it, so
// the exec re-check (proc_tracker.h) can compare "the file supervise
// approved" with "the file the kernel is about to run" by identity, not path.
#pragma once

#include <cstdint>

#include "common/result.h"
#include "common/unique_fd.h"

namespace sv::tracer {

// A file as the kernel identifies it at exec: super_block.s_dev in the
// kernel's encoding (MAJOR << 20 | MINOR) and inode.i_ino.
struct ExecFileId {
  uint32_t dev = 0;
  uint64_t ino = 0;
  bool operator==(const ExecFileId&) const = default;
};

// The kernel identity of the file open at `fd` (an O_PATH fd will do):
// i_ino from /proc/self/fdinfo (exact, where stat may remap it, e.g.
// overlayfs) and s_dev from the mount's major:minor in /proc/self/mountinfo
// (exact, where stat's st_dev differs, e.g. btrfs subvolumes). Thread-safe.
Result<ExecFileId> execFileIdOf(int fd);

// While it lives, the mount table of another mount namespace whose files
// execFileIdOf() is handed: the command's own (the write re-check's, the
// mount floor's), where the same superblocks have other mount ids than in
// ours. `mountinfo` is an fd of its /proc/PID/mountinfo, which reads that
// namespace afresh at each pread, even once PID is gone (and keeps the
// namespace alive: a session ends its share with it). Thread-safe.
class MountNamespaceShare {
 public:
  explicit MountNamespaceShare(UniqueFd mountinfo);
  ~MountNamespaceShare();
  MountNamespaceShare(MountNamespaceShare&& other) noexcept;
  MountNamespaceShare& operator=(MountNamespaceShare&& other) noexcept;
  MountNamespaceShare(const MountNamespaceShare&) = delete;
  MountNamespaceShare& operator=(const MountNamespaceShare&) = delete;

  // The mountinfo fd, a reference to the namespace (-1 once moved from).
  int fd() const;

 private:
  uint64_t id_ = 0;
};

}  // namespace sv::tracer
