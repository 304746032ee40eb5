// execFileIdOf(): see exec_file_id.h.
#include "tracer/bpf/exec_file_id.h"

#include <poll.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tracer/mountinfo.h"
#include "common/read_file.h"

namespace sv::tracer {
namespace {

// "key:\tvalue" in a /proc text file's contents, as a number; -1 if absent.
long long procField(std::string_view text, std::string_view key) {
  size_t at = 0;
  while ((at = text.find(key, at)) != std::string_view::npos) {
    if (at == 0 || text[at - 1] == '\n') return std::strtoll(text.data() + at + key.size(), nullptr, 10);
    at += key.size();
  }
  return -1;
}

// mount id → super_block.s_dev, from mountinfo's "major:minor" (sb->s_dev
// exactly), for our mount namespace and the others registered. A mount id
// is reused once its mount is gone (an unmount here; a namespace that
// ended), so an entry is trusted only while no table changed since it was
// read: every lookup first polls the tables' fds (POLLPRI: changed, one
// system call), and a change or a miss reads them all again.
class MountDevs {
 public:
  Result<uint32_t> devOf(long long mnt_id) {
    std::lock_guard lock(mu_);
    if (!primed_) {
      // The snapshot supervise took at start-up, through the fd that tells
      // of changes since (no read on a session's first exec, which waits).
      primed_ = true;
      parse(mountinfoOnce());
    }
    if (!changed()) {
      if (auto it = devs_.find(mnt_id); it != devs_.end()) return it->second;
    }
    if (auto st = readAll(); !st) return st.error();
    if (auto it = devs_.find(mnt_id); it != devs_.end()) return it->second;
    return Error{ENOENT, "mount " + std::to_string(mnt_id) + " in no mountinfo we read"};
  }

  uint64_t addNamespace(UniqueFd mountinfo) {
    std::lock_guard lock(mu_);
    const uint64_t id = ++next_id_;
    namespaces_.emplace(id, std::move(mountinfo));
    stale_ = true;  // its mounts are not read yet
    return id;
  }

  int namespaceFd(uint64_t id) {
    std::lock_guard lock(mu_);
    auto it = namespaces_.find(id);
    return it == namespaces_.end() ? -1 : it->second.get();
  }

  void removeNamespace(uint64_t id) {
    std::lock_guard lock(mu_);
    namespaces_.erase(id);
    stale_ = true;  // its mount ids may be reused from now on
  }

 private:
  // Whether a table changed since it was last read (poll resets the
  // kernel's change mark for that fd).
  bool changed() {
    poll_fds_.clear();  // kept: no allocation per exec
    if (mountinfoOnceFd() >= 0) poll_fds_.push_back({mountinfoOnceFd(), POLLPRI, 0});
    for (const auto& [id, fd] : namespaces_) poll_fds_.push_back({fd.get(), POLLPRI, 0});
    bool any = stale_;
    if (::poll(poll_fds_.data(), poll_fds_.size(), 0) > 0)
      for (const pollfd& p : poll_fds_) any = any || (p.revents & (POLLPRI | POLLERR));
    return any;
  }

  Status readAll() {
    devs_.clear();
    stale_ = false;
    Result<std::string> ours = mountinfoOnceFd() >= 0 ? readAllFrom(mountinfoOnceFd())
                                                     : readWholeFile("/proc/self/mountinfo");
    if (!ours) return ours.error();
    parse(*ours);
    for (const auto& [id, fd] : namespaces_)
      if (auto more = readAllFrom(fd.get())) parse(*more);
    return {};
  }

  void parse(std::string_view rest) {
    while (!rest.empty()) {
      const size_t nl = rest.find('\n');
      const std::string_view line = rest.substr(0, nl);
      rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
      long long id = 0, parent = 0;
      unsigned major = 0, minor = 0;
      if (std::sscanf(std::string(line.substr(0, 64)).c_str(), "%lld %lld %u:%u", &id, &parent,
                      &major, &minor) == 4)
        devs_[id] = (major << 20) | minor;
    }
  }

  std::mutex mu_;
  bool primed_ = false;
  bool stale_ = false;  // a namespace came or went since the last read
  std::unordered_map<long long, uint32_t> devs_;
  // Other namespaces' mountinfo (MountNamespaceShare), by registration.
  std::map<uint64_t, UniqueFd> namespaces_;
  uint64_t next_id_ = 0;
  std::vector<pollfd> poll_fds_;
};

MountDevs& mountDevs() {
  static MountDevs devs;
  return devs;
}

}  // namespace

MountNamespaceShare::MountNamespaceShare(UniqueFd mountinfo)
    : id_(mountDevs().addNamespace(std::move(mountinfo))) {}

MountNamespaceShare::~MountNamespaceShare() {
  if (id_) mountDevs().removeNamespace(id_);
}

int MountNamespaceShare::fd() const { return id_ ? mountDevs().namespaceFd(id_) : -1; }

MountNamespaceShare::MountNamespaceShare(MountNamespaceShare&& other) noexcept
    : id_(std::exchange(other.id_, 0)) {}

MountNamespaceShare& MountNamespaceShare::operator=(MountNamespaceShare&& other) noexcept {
  if (this != &other) {
    if (id_) mountDevs().removeNamespace(id_);
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

Result<ExecFileId> execFileIdOf(int fd) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
  UniqueFd info(::open(path, O_RDONLY | O_CLOEXEC));
  if (!info) return errnoError(std::string("open ") + path);
  char buf[512];
  const ssize_t n = ::read(info.get(), buf, sizeof buf - 1);
  if (n <= 0) return errnoError(std::string("read ") + path);
  const std::string_view text(buf, size_t(n));
  const long long ino = procField(text, "ino:"), mnt_id = procField(text, "mnt_id:");
  if (ino < 0 || mnt_id < 0) return Error{ENOTSUP, std::string("no ino/mnt_id in ") + path};
  auto dev = mountDevs().devOf(mnt_id);
  if (!dev) {
    // Kernel-internal mounts (memfd's shm, pipes) are in no mountinfo; their
    // stat device is the superblock's own.
    struct stat st;
    if (::fstat(fd, &st) != 0) return dev.error();
    return ExecFileId{(major(st.st_dev) << 20) | minor(st.st_dev), static_cast<uint64_t>(ino)};
  }
  return ExecFileId{*dev, static_cast<uint64_t>(ino)};
}

}  // namespace sv::tracer
