// Shared loads; see bpf_shared.h.
#include "tracer/bpf/bpf_shared.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "tracer/bpf/bpf_keepers.h"
#include "common/proc_stat.h"
#include "common/read_file.h"

namespace sv::tracer {

std::string sharedPinName(const char* prefix, int abi, const char* object_id) {
  return std::string(prefix) + "-v" + std::to_string(abi) + "-" + object_id;
}

SharedPins::SharedPins(const std::string& name) {
  const std::string keepers = keeperPinDir();
  if (keepers.empty()) return;
  lock_fd_.reset(::open(keepers.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (lock_fd_) dir_ = keepers + "/" + name;
}

std::optional<std::vector<UniqueFd>> SharedPins::open(std::span<const char* const> names) const {
  if (dir_.empty()) return std::nullopt;
  std::vector<UniqueFd> fds;
  for (const char* name : names) {
    fds.emplace_back(bpf_obj_get((dir_ + "/" + name).c_str()));
    if (!fds.back()) return std::nullopt;
  }
  return fds;
}

Status SharedPins::pin(std::span<const int> fds, std::span<const char* const> names) const {
  if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) return errnoError("mkdir " + dir_);
  for (size_t i = 0; i < fds.size() && i < names.size(); ++i) {
    const std::string path = dir_ + "/" + names[i];
    if (bpf_obj_pin(fds[i], path.c_str()) != 0) return errnoError("pin " + path);
  }
  return {};
}

void SharedPins::remove(std::span<const char* const> names) const {
  if (dir_.empty()) return;
  for (const char* name : names) ::unlink((dir_ + "/" + name).c_str());
  ::rmdir(dir_.c_str());
}

namespace {

// A "sessions" map's entry, as every ABI of both loads lays it out.
struct SessionSlot {
  uint64_t cgroup_id;
  uint32_t flags, owner_pid;
  uint64_t owner_start;
};
static_assert(sizeof(SessionSlot) == 24);

// Whether a session of the load in `dir` may still run: a slot claimed by a
// live supervisor, or a map this code cannot read (kept, to be safe).
bool loadInUse(const std::string& dir) {
  UniqueFd sessions(bpf_obj_get((dir + "/sessions").c_str()));
  if (!sessions) return false;  // a half-made load: nothing can use it
  bpf_map_info info{};
  __u32 len = sizeof info;
  if (bpf_obj_get_info_by_fd(sessions.get(), &info, &len) != 0 || info.value_size != 24)
    return true;
  SessionSlot slot{};
  for (uint32_t i = 0; i < info.max_entries; ++i) {
    if (bpf_map_lookup_elem(sessions.get(), &i, &slot) != 0) return true;
    if (slot.cgroup_id != 0 && claimOwnerAlive(slot.owner_pid, slot.owner_start)) return true;
  }
  return false;
}

}  // namespace

void SharedPins::removeUnusedSiblings(const char* prefix) const {
  if (dir_.empty()) return;
  const std::string parent = dir_.substr(0, dir_.rfind('/'));
  const std::string mine = dir_.substr(parent.size() + 1);
  const std::string start = std::string(prefix) + "-v";
  DIR* d = ::opendir(parent.c_str());
  if (!d) return;
  std::vector<std::string> stale;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (e->d_type == DT_DIR && name.rfind(start, 0) == 0 && name != mine &&
        !loadInUse(parent + "/" + name))
      stale.push_back(parent + "/" + name);
  }
  ::closedir(d);
  for (const auto& dir : stale) {
    DIR* pins = ::opendir(dir.c_str());
    if (!pins) continue;
    while (const dirent* e = ::readdir(pins))
      if (e->d_name[0] != '.') ::unlinkat(::dirfd(pins), e->d_name, 0);
    ::closedir(pins);
    ::rmdir(dir.c_str());
  }
}

SharedPins::Lock::Lock(const SharedPins& pins) : fd_(pins.lock_fd_.get()) {
  if (fd_ < 0) return;
  while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
  }
}

SharedPins::Lock::~Lock() {
  if (fd_ >= 0) ::flock(fd_, LOCK_UN);
}

uint64_t processStartTime(pid_t pid) {
  char buf[1024];
  const auto line = readProcStat(pid, buf, sizeof buf);
  return line ? procStatNumber<uint64_t>(*line, kStatStartTime).value_or(0) : 0;
}

bool stillOurs(int sessions_fd, uint32_t slot, uint64_t cgroup_id) {
  SessionSlot entry{};
  return bpf_map_lookup_elem(sessions_fd, &slot, &entry) != 0 || entry.cgroup_id == cgroup_id;
}

bool claimOwnerAlive(uint32_t owner_pid, uint64_t owner_start) {
  return owner_pid != 0 && processStartTime(static_cast<pid_t>(owner_pid)) == owner_start;
}

Status zeroPerCpu(int map_fd, uint32_t first, uint32_t count) {
  const int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return Error{EINVAL, "libbpf_num_possible_cpus"};
  std::vector<uint64_t> zeros(static_cast<size_t>(ncpu), 0);
  for (uint32_t key = first; key < first + count; ++key)
    if (bpf_map_update_elem(map_fd, &key, zeros.data(), BPF_ANY) != 0)
      return errnoError("reset the session's counters");
  return {};
}

uint64_t sumPerCpu(int map_fd, uint32_t key) {
  const int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return 0;
  std::vector<uint64_t> per_cpu(static_cast<size_t>(ncpu));
  if (bpf_map_lookup_elem(map_fd, &key, per_cpu.data()) != 0) return 0;
  uint64_t total = 0;
  for (uint64_t v : per_cpu) total += v;
  return total;
}

Result<UniqueFd> slotRingBuffer(int rings_fd, uint32_t slot, uint32_t bytes, const char* name) {
  uint32_t id = 0;
  if (bpf_map_lookup_elem(rings_fd, &slot, &id) == 0) {
    UniqueFd ring(bpf_map_get_fd_by_id(id));
    if (ring) return ring;
  }
  UniqueFd ring(bpf_map_create(BPF_MAP_TYPE_RINGBUF, name, 0, 0, bytes, nullptr));
  if (!ring) return errnoError(std::string("create ring buffer ") + name);
  const uint32_t fd = static_cast<uint32_t>(ring.get());
  if (bpf_map_update_elem(rings_fd, &slot, &fd, BPF_ANY) != 0)
    return errnoError(std::string("put ring buffer ") + name + " in its slot");
  return ring;
}

}  // namespace sv::tracer
