// cgroup v2 discovery (and the mount where none is), the per-session cgroup
// lifecycle.
#include "tracer/cgroup.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "common/read_file.h"
#include "tracer/mountinfo.h"
#include "tracer/probe.h"

namespace sv::tracer {
namespace {

Status writeFile(const std::string& path, std::string_view data) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return errnoError("open " + path);
  ssize_t n = ::write(fd.get(), data.data(), data.size());
  if (n < 0) return errnoError("write " + path);
  if (static_cast<size_t>(n) != data.size()) return Error{EIO, "short write " + path};
  return {};
}

// The mount of cgroup v1 whose super options name `controller`.
Result<MountEntry> findV1Mount(std::string_view controller) {
  if (mountinfoOnce().empty()) return Error{EIO, "cannot read /proc/self/mountinfo"};
  auto entry = findMountEntry(mountinfoOnce(), "cgroup", [controller](const MountEntry& e) {
    return ("," + e.super_options + ",").find("," + std::string(controller) + ",") !=
           std::string::npos;
  });
  if (!entry)
    return Error{ENOENT, "no cgroup filesystem with " + std::string(controller) +
                             " in /proc/self/mountinfo"};
  return *entry;
}

// ---- the cgroup2 mount: found, or made at kCgroup2MountDir ----

Cgroup2Mount fromEntry(const MountEntry& e) {
  return Cgroup2Mount{e.mount_point, e.root, e.mount_point == kCgroup2MountDir};
}

constexpr char kCgroup2MountParent[] = "/run/supervise";  // of kCgroup2MountDir
static_assert(std::string_view(kCgroup2MountDir).starts_with(kCgroup2MountParent));

// What the operator reads when there is no cgroup2 and none can be mounted:
// what happened, what to do, and last (message() appends the errno) the step
// that failed.
constexpr char kNoCgroup2[] =
    "no cgroup2 filesystem is mounted in supervise's mount namespace (`ip netns exec` remounts "
    "/sys; containers and cgroup-v1 hosts may mount none)";
constexpr char kMountHint[] =
    "; mount one yourself, e.g. `mount -t cgroup2 none /sys/fs/cgroup` (any directory will "
    "do), and run supervise again. What failed: ";

Error cannotMount(int err, const std::string& step) {
  return Error{err, std::string(kNoCgroup2) + ", and supervise cannot mount one at " +
                        kCgroup2MountDir +
                        (err == EPERM ? " (it needs CAP_SYS_ADMIN: run it as root)" : "") +
                        kMountHint + step};
}

// mkdir `dir` (mode) unless it exists; either way it must be a directory of
// root's, not a symlink: the hierarchy is mounted there.
Status makeRootDir(const char* dir, mode_t mode) {
  if (::mkdir(dir, mode) != 0 && errno != EEXIST)
    return cannotMount(errno, std::string("mkdir ") + dir);
  struct stat st{};
  if (::lstat(dir, &st) != 0) return cannotMount(errno, std::string("lstat ") + dir);
  if (!S_ISDIR(st.st_mode) || st.st_uid != 0)
    return cannotMount(ENOTDIR, std::string(dir) + " is not a directory owned by root");
  return {};
}

// Mounts cgroup2 at kCgroup2MountDir (or finds it mounted there).
Status mountCgroup2() {
  // Asked first, so the answer names the real cause rather than mount's ENODEV.
  if (auto fs = readWholeFile("/proc/filesystems");
      fs && fs->find("\tcgroup2\n") == std::string::npos)
    return Error{ENODEV, std::string(kNoCgroup2) +
                             ", and this kernel has none: supervise needs a kernel with cgroup v2 "
                             "(CONFIG_CGROUPS, Linux 4.5+). What failed: cgroup2 is not in "
                             "/proc/filesystems"};
  SV_TRY(makeRootDir(kCgroup2MountParent, 0700));  // as the kernel-audit state keeps it
  SV_TRY(makeRootDir(kCgroup2MountDir, 0755));
  // A concurrent session may have mounted it since we read mountinfo.
  if (struct statfs fs{}; ::statfs(kCgroup2MountDir, &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC)
    return {};
  // The hierarchy's flags, as the mount of pid 1 (the host's, mostly) shows them.
  auto init_mounts = readWholeFile("/proc/1/mountinfo");
  const std::string flags = init_mounts ? cgroup2RootFlags(*init_mounts) : "";
  if (::mount("cgroup2", kCgroup2MountDir, "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              flags.empty() ? nullptr : flags.c_str()) != 0)
    return cannotMount(errno, "mount -t cgroup2 cgroup2 " + std::string(kCgroup2MountDir));
  return {};
}

Result<Cgroup2Mount> findOrMountCgroup2() {
  if (auto e = findMountEntry(mountinfoOnce(), "cgroup2")) return fromEntry(*e);
  // The snapshot may predate a mount (a concurrent session's): read afresh.
  auto now = mountinfoNow();
  if (!now) return Error{now.error().code, "cannot read /proc/self/mountinfo"};
  if (auto e = findMountEntry(*now, "cgroup2")) return fromEntry(*e);
  SV_TRY(mountCgroup2());
  // A concurrent session may have mounted too: two mounts of the one tree.
  now = mountinfoNow();
  auto e = now ? findMountEntry(*now, "cgroup2") : std::nullopt;
  if (!e) return Error{ENOENT, std::string("mounted cgroup2 at ") + kCgroup2MountDir +
                                   " but /proc/self/mountinfo does not list it"};
  return fromEntry(*e);
}

// Our cgroup in the hierarchy whose directory `root` is mounted at
// `mount_point`, from the /proc/self/cgroup line whose controller list is
// `controllers` ("" for the v2 line "0::").
Result<std::string> ownCgroupIn(const std::string& mount_point, const std::string& root,
                                std::string_view controller) {
  auto content = readWholeFile("/proc/self/cgroup");
  if (!content) return content.error();
  std::istringstream in(*content);
  std::string line;
  while (std::getline(in, line)) {
    // "id:controller,list:/path"
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string list = line.substr(a + 1, b - a - 1);
    if (controller.empty() ? !list.empty() || line.compare(0, a, "0") != 0
                           : ("," + list + ",").find("," + std::string(controller) + ",") ==
                                 std::string::npos)
      continue;
    std::string rel = line.substr(b + 1);
    if (rel.ends_with(" (deleted)")) return Error{ENOENT, "own cgroup " + rel + " was removed"};
    // /proc/self/cgroup is relative to the hierarchy root; the mount may expose
    // a subtree (containers): strip the mounted root's prefix.
    if (root != "/" && rel.rfind(root, 0) == 0) rel = rel.substr(root.size());
    if (rel.empty() || rel == "/") return mount_point;
    return mount_point + rel;
  }
  return Error{ENOENT, controller.empty()
                           ? std::string("no cgroup v2 (\"0::\") line in /proc/self/cgroup")
                           : "no " + std::string(controller) + " line in /proc/self/cgroup"};
}

}  // namespace

std::string cgroup2RootFlags(std::string_view mountinfo) {
  auto e = findMountEntry(mountinfo, "cgroup2");
  if (!e) return "";
  // The options apply_cgroup_root_flags() sets or clears for the hierarchy.
  static constexpr std::string_view kRootFlags[] = {
      "nsdelegate",           "favordynmods",           "memory_localevents",
      "memory_recursiveprot", "memory_hugetlb_accounting", "pids_localevents"};
  std::string out;
  std::string_view rest = e->super_options;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view option = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    for (std::string_view flag : kRootFlags)
      if (option == flag) out += (out.empty() ? "" : ",") + std::string(option);
  }
  return out;
}

Result<Cgroup2Mount> cgroup2Mount() {
  if (testDisabled("cgroup")) return Error{ENOSYS, std::string("cgroup2 ") + kDisabledByTest};
  // Asked from start-up and the tracker's thread at once; a failure is asked again.
  static std::mutex mu;
  static std::optional<Cgroup2Mount> found;
  std::lock_guard lock(mu);
  if (found) return *found;
  auto m = findOrMountCgroup2();
  if (m) found = *m;
  return m;
}

Result<std::string> findCgroup2Mount() {
  auto m = cgroup2Mount();
  if (!m) return m.error();
  return m->mount_point;
}

bool cgroup2Listed() {
  if (findMountEntry(mountinfoOnce(), "cgroup2")) return true;
  auto now = mountinfoNow();
  return now && findMountEntry(*now, "cgroup2");
}

Result<std::string> ownCgroupPath() {
  auto m = cgroup2Mount();
  if (!m) return m.error();
  return ownCgroupIn(m->mount_point, m->root, {});
}

Result<SessionCgroup> SessionCgroup::create(std::string_view name) {
  if (name.empty() || name.find('/') != std::string_view::npos || name == "." || name == "..") {
    return Error{EINVAL, "session cgroup name must be a single path component"};
  }
  auto own = ownCgroupPath();
  if (!own) return own.error();
  std::string path = *own + "/" + std::string(name);
  if (::mkdir(path.c_str(), 0755) != 0) {
    int err = errno;
    std::string why;
    if (err == EACCES || err == EPERM || err == EROFS) {
      why = " (the supervisor's cgroup " + *own +
            " is not writable: run as root, or under a delegated cgroup, e.g. "
            "systemd-run --user --scope -p Delegate=yes)";
    }
    return Error{err, "mkdir " + path + why};
  }
  UniqueFd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) {
    Error e = errnoError("open " + path);
    ::rmdir(path.c_str());
    return e;
  }
  return SessionCgroup(std::move(path), std::move(dir));
}

SessionCgroup::SessionCgroup(SessionCgroup&& other) noexcept
    : path_(std::move(other.path_)),
      dir_(std::move(other.dir_)),
      children_(std::exchange(other.children_, {})) {
  other.path_.clear();
}

SessionCgroup& SessionCgroup::operator=(SessionCgroup&& other) noexcept {
  if (this != &other) {
    destroy();
    path_ = std::move(other.path_);
    dir_ = std::move(other.dir_);
    children_ = std::exchange(other.children_, {});
    other.path_.clear();
  }
  return *this;
}

SessionCgroup::~SessionCgroup() { destroy(); }

void SessionCgroup::destroy() {
  if (path_.empty()) return;
  (void)kill();
  // Killed processes leave the cgroup asynchronously (after exit, not reap).
  for (int i = 0; i < 100; ++i) {
    auto pop = populated();
    if (!pop.ok() || !*pop) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  dir_.reset();
  for (const auto& child : children_) ::rmdir((path_ + "/" + child).c_str());
  ::rmdir(path_.c_str());
  path_.clear();
}

Status SessionCgroup::addProcess(pid_t pid) { return moveProcess({}, pid); }

Result<std::string> SessionCgroup::addChild(std::string_view name) {
  if (name.empty() || name.find('/') != std::string_view::npos || name == "." || name == "..")
    return Error{EINVAL, "child cgroup name must be a single path component"};
  std::string path = path_ + "/" + std::string(name);
  if (::mkdir(path.c_str(), 0755) != 0) return errnoError("mkdir " + path);
  children_.emplace_back(name);
  return path;
}

Status SessionCgroup::moveProcess(std::string_view name, pid_t pid) {
  std::string dir = name.empty() ? path_ : path_ + "/" + std::string(name);
  return writeFile(dir + "/cgroup.procs", std::to_string(pid));
}

Status SessionCgroup::kill() {
  Status st = writeFile(path_ + "/cgroup.kill", "1");
  if (st.ok()) return st;
  if (st.error().code != ENOENT) return st;
  return killEachProcess();
}

Status SessionCgroup::killEachProcess() {
  // Kill pid by pid until the list stays empty: a process may fork between our
  // read of cgroup.procs and its death, and its child lands in this cgroup too.
  for (int round = 0; round < 100; ++round) {
    auto procs = readWholeFile(path_ + "/cgroup.procs");
    if (!procs) return procs.error();
    for (const auto& child : children_) {
      auto more = readWholeFile(path_ + "/" + child + "/cgroup.procs");
      if (more) *procs += "\n" + *more;
    }
    std::istringstream in(*procs);
    pid_t pid;
    bool any = false;
    while (in >> pid) {
      any = true;
      ::kill(pid, SIGKILL);
    }
    if (!any) return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return Error{EBUSY, "cgroup " + path_ + " did not empty after repeated SIGKILL"};
}

Result<bool> SessionCgroup::populated() {
  auto events = readWholeFile(path_ + "/cgroup.events");
  if (!events) return events.error();
  std::istringstream in(*events);
  std::string key;
  int value = 0;
  while (in >> key >> value) {
    if (key == "populated") return value != 0;
  }
  return Error{EINVAL, "no populated key in " + path_ + "/cgroup.events"};
}

Status SessionCgroup::setPidsMax(int max) {
  std::string file = path_ + "/pids.max";
  if (::access(file.c_str(), F_OK) != 0) {
    return Error{ENOTSUP, "pids controller not enabled for " + path_ +
                              " (not in the parent's cgroup.subtree_control; on hybrid hosts it "
                              "may be bound to a v1 hierarchy)"};
  }
  return writeFile(file, max < 0 ? std::string("max") : std::to_string(max));
}

Result<PidsCgroupV1> PidsCgroupV1::create(std::string_view name, int max) {
  if (name.empty() || name.find('/') != std::string_view::npos)
    return Error{EINVAL, "pids cgroup name must be a single path component"};
  auto mount = findV1Mount("pids");
  if (!mount) return mount.error();
  auto own = ownCgroupIn(mount->mount_point, mount->root, "pids");
  if (!own) return own.error();
  std::string path = *own + "/" + std::string(name);
  if (::mkdir(path.c_str(), 0755) != 0) return errnoError("mkdir " + path);
  PidsCgroupV1 out(path, UniqueFd());
  SV_TRY(writeFile(path + "/pids.max", std::to_string(max)));
  out.tasks_.reset(::open((path + "/tasks").c_str(), O_WRONLY | O_CLOEXEC));
  if (!out.tasks_) return errnoError("open " + path + "/tasks");
  return out;
}

PidsCgroupV1::PidsCgroupV1(PidsCgroupV1&& other) noexcept
    : path_(std::exchange(other.path_, {})), tasks_(std::move(other.tasks_)) {}

PidsCgroupV1::~PidsCgroupV1() {
  if (path_.empty()) return;
  tasks_.reset();
  // The tree was killed through the session cgroup; its processes may still
  // be exiting: rmdir succeeds once the last one is gone.
  for (int i = 0; i < 100 && ::rmdir(path_.c_str()) != 0 && errno == EBUSY; ++i) ::usleep(10000);
}

// ---- cgroup ids, scratch cgroups ----

Result<uint64_t> cgroupId(const std::string& path) {
  // A cgroup2 directory's file handle is its kernfs id (FILEID_KERNFS).
  alignas(file_handle) char buf[sizeof(file_handle) + sizeof(uint64_t)] = {};
  auto* handle = reinterpret_cast<file_handle*>(buf);
  handle->handle_bytes = sizeof(uint64_t);
  int mount_id = 0;
  if (name_to_handle_at(AT_FDCWD, path.c_str(), handle, &mount_id, 0) != 0)
    return errnoError("name_to_handle_at " + path);
  if (handle->handle_bytes != sizeof(uint64_t)) return Error{EINVAL, "no cgroup id for " + path};
  uint64_t id = 0;
  std::memcpy(&id, handle->f_handle, sizeof id);
  return id;
}

Result<ScratchCgroup> ScratchCgroup::create(const std::string& parent_dir,
                                            const std::string& prefix) {
  std::string path =
      parent_dir + "/" + prefix + "-" + std::to_string(getpid()) + "-" + std::to_string(rand());
  if (mkdir(path.c_str(), 0755) != 0) return errnoError("mkdir " + path);
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) {
    Error e = errnoError("open " + path);
    rmdir(path.c_str());
    return e;
  }
  return ScratchCgroup(std::move(path), std::move(fd));
}

ScratchCgroup::~ScratchCgroup() {
  if (path_.empty()) return;
  fd_.reset();
  // Fails with EBUSY while a process is still inside; callers reap first.
  rmdir(path_.c_str());
}

Status ScratchCgroup::addProcess(pid_t pid) const {
  std::string procs = path_ + "/cgroup.procs";
  UniqueFd fd(open(procs.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return errnoError("open " + procs);
  std::string text = std::to_string(pid);
  if (write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    return errnoError("write " + procs);
  return {};
}

}  // namespace sv::tracer
