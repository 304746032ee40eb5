// readProcessInfo(): who made a syscall (audit/process.h), read from /proc
// when an event needs it. A process can exit between the
// kernel event and our read, so readProcessInfo() never fails: whatever it
// could not read stays empty (strings) or "unknown" (-1 / kUnknownId / 0
// start_time), and the event still goes out. ProcessCache keeps a burst of
// events from one process from re-reading /proc every time; entries are keyed
// by (pid, tid) and checked against start_time so a recycled pid never shows
// the previous owner's argv.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "supervisor/audit/process.h"

namespace sv::supervisor {

// Reads /proc/<pid> (and /proc/<pid>/task/<tid> for the per-thread fields).
// tid <= 0 means tid = pid. Never throws, never fails: see the file comment.
// exe, parent_exe and cwd are named as seen from `process_root`, the
// process's root directory as we name it (policy::pathInRoot).
ProcessInfo readProcessInfo(int pid, int tid, std::string_view process_root = {});

// Only the start time (one small read), for cache validation. 0 if gone.
uint64_t readStartTime(int pid);
// Only the parent pid (one small read), for walking up the tree. -1 if gone.
int readParentPid(int pid);
// The number in the `key` line (e.g. "Tgid", "Umask") of /proc/TID/status,
// in `base` (one small read, no allocation: the decision path); `fallback`
// when the thread is gone or the line is missing.
long readStatusNumber(int tid, const char* key, int base, long fallback);

// LRU cache of ProcessInfo. Not thread-safe: used from the supervisor loop.
class ProcessCache {
 public:
  explicit ProcessCache(size_t capacity = 1024) : capacity_(capacity ? capacity : 1) {}

  // Returns the cached info for (pid, tid) if it belongs to the same process
  // instance, else reads /proc. `start_time` is the process start time when
  // the caller already knows it (BPF events carry it): a hit then costs no
  // syscall. With 0 the cache reads /proc/PID/stat once to validate.
  // The pointer stays valid after eviction; point AuditEvent::process at it.
  std::shared_ptr<const ProcessInfo> lookup(int pid, int tid, uint64_t start_time = 0);

  // The process exec'd: comm, exe, argv changed for every thread.
  void invalidate(int pid);
  // The process exited: drop its entries and its profile.
  void forget(int pid);
  // The supervisor's process table assigned a profile; applies to cached and
  // future entries of this pid.
  void setProfile(int pid, std::string profile);

  // What the kernel reported of a process's image (the process tracker's
  // fork and exec records), asked when /proc no longer shows it: an exiting
  // process loses its mm (exe, cmdline) before it leaves /proc, so a connect
  // made just before exit would otherwise be named by nobody. Fills the
  // empty fields of `info` for (pid, start_time); start_time 0 = unknown.
  using ImageSource = std::function<void(int pid, uint64_t start_time, ProcessInfo& info)>;
  void setImageSource(ImageSource source) { image_source_ = std::move(source); }

  // The processes' root directory as we name it (target_path.h
  // processRoot()): their exe and cwd are then named as they see them.
  void setProcessRoot(std::string root) { process_root_ = std::move(root); }

  size_t size() const { return map_.size(); }
  uint64_t reads() const { return reads_; }  // /proc full reads, for tests and stats

 private:
  struct Key {
    int pid, tid;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>()((uint64_t(uint32_t(k.pid)) << 32) | uint32_t(k.tid));
    }
  };
  struct Entry {
    Key key;
    std::shared_ptr<ProcessInfo> info;
    uint64_t checked_ns = 0;  // CLOCK_MONOTONIC of the last start-time check
  };
  // How long a start-time check stays good. Reusing a pid means cycling
  // through pid_max pids; within this window that is out of reach, and it
  // saves a /proc read on every event of a busy process.
  static constexpr uint64_t kRecheckAfterNs = 250'000'000;
  using List = std::list<Entry>;

  void erase(List::iterator it);

  size_t capacity_;
  List lru_;  // front = most recently used
  std::unordered_map<Key, List::iterator, KeyHash> map_;
  std::unordered_map<int, std::string> profiles_;
  ImageSource image_source_;
  std::string process_root_;
  uint64_t reads_ = 0;
};

}  // namespace sv::supervisor
