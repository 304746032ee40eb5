// Shared loads: BPF programs loaded once per boot and used by every session.
//
// Loading and verifying programs, JIT-ing them and allocating their maps is
// most of a session's start-up; the programs are the same for every session.
// So the first session loads them and pins maps and links under
// <bpffs>/supervise/<name>/, where <name> carries the ABI version and a hash
// of the BPF object, so sessions of one build share and builds never mix. A
// session is a slot: an index into per-slot maps (settings, a ring buffer
// in a map-of-maps, counters) claimed under an flock of the pin directory.
// A claim names the supervisor (pid and start time), so the slot of one
// killed by SIGKILL, which could not release it, is taken over by the next.
//
// Users: proc_tracker.cpp (process tracking and the exec re-check) and
// net_filter.cpp (network policy).
#pragma once

#include <bpf/bpf.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"

namespace sv::tracer {

// "<prefix>-v<abi>-<object id>", a pin directory's name. The id is the
// build's <name>.object_id.h (a hash of the BPF object, computed at build time).
std::string sharedPinName(const char* prefix, int abi, const char* object_id);

// The pin directory of a shared load, and its lock. Without bpffs (no
// keeperPinDir()) there is no directory: the caller loads a private copy
// and the lock is a no-op.
class SharedPins {
 public:
  explicit SharedPins(const std::string& name);
  SharedPins() = default;  // none: a private load
  SharedPins(SharedPins&&) noexcept = default;
  SharedPins& operator=(SharedPins&&) noexcept = default;

  bool pinned() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }

  // Every named pin opened, or nullopt when one is missing (no complete load).
  std::optional<std::vector<UniqueFd>> open(std::span<const char* const> names) const;
  // Pins fds[i] as names[i]; the directory is created first.
  Status pin(std::span<const int> fds, std::span<const char* const> names) const;
  // Removes the named pins and the directory (what a failed load left).
  void remove(std::span<const char* const> names) const;
  // Removes the loads of other builds (sibling directories named like
  // sharedPinName(prefix, ...)) that no running session uses: their pinned
  // links would otherwise stay attached for the boot, one set per build.
  // Their "sessions" map tells (struct of 24 bytes per slot: cgroup id, flags,
  // owner pid and start time, as both ABIs lay it out). Call with the lock held.
  void removeUnusedSiblings(const char* prefix) const;

  // Holds the pin directory's flock for a scope; a no-op without bpffs.
  class Lock {
   public:
    explicit Lock(const SharedPins& pins);
    ~Lock();
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;

   private:
    int fd_;
  };

 private:
  std::string dir_;
  UniqueFd lock_fd_;  // the keepers' directory, which holds every shared load
};

// The start time of a process (/proc/PID/stat field 22), 0 if it is gone.
uint64_t processStartTime(pid_t pid);

// Whether the supervisor that made a claim (owner_pid, owner_start) still runs.
bool claimOwnerAlive(uint32_t owner_pid, uint64_t owner_start);

// Whether slot `slot` of a "sessions" map (struct of 24 bytes per slot, the
// cgroup id first, as both ABIs lay it out) still holds the claim made for
// `cgroup_id`. A session's tear-down may run after its supervisor has exited
// (exit_handoff.h), when the slot looks free: a session that took it over
// since removed what was left in it, and there is nothing more to undo.
// Call with the lock held; true when the entry is unreadable.
bool stillOurs(int sessions_fd, uint32_t slot, uint64_t cgroup_id);

// Sets entries [first, first + count) of a per-CPU array to 0 on every CPU.
Status zeroPerCpu(int map_fd, uint32_t first, uint32_t count);

// Sums entry `key` of a per-CPU u64 array over the CPUs (0 if unreadable).
uint64_t sumPerCpu(int map_fd, uint32_t key);

// Deletes every entry of a hash or LPM map for which `stale(key, value)`
// holds: what a slot's previous session left.
template <typename Key, typename Value, typename Pred>
void purgeEntries(int map_fd, Pred stale) {
  Key key{}, next{};
  Value value{};
  std::vector<Key> gone;
  const void* prev = nullptr;
  while (bpf_map_get_next_key(map_fd, prev, &next) == 0) {
    if (bpf_map_lookup_elem(map_fd, &next, &value) == 0 && stale(next, value))
      gone.push_back(next);
    key = next;
    prev = &key;
  }
  for (const auto& k : gone) (void)bpf_map_delete_elem(map_fd, &k);
}

// The ring buffer in slot `slot` of a map-of-maps: the one an earlier
// session of the slot created, or a new one of `bytes` that is put there.
Result<UniqueFd> slotRingBuffer(int rings_fd, uint32_t slot, uint32_t bytes, const char* name);

}  // namespace sv::tracer
