// cgroup v2 discovery and the per-session cgroup lifecycle.
#include "tracer/cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "common/read_file.h"
#include "tracer/mountinfo.h"
#include "tracer/probe.h"

namespace sv::tracer {
namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescapeMountField(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    auto octal = [&](size_t j) { return s[j] >= '0' && s[j] <= '7'; };
    if (s[i] == '\\' && i + 3 < s.size() && octal(i + 1) && octal(i + 2) && octal(i + 3)) {
      out.push_back(static_cast<char>(std::strtol(s.substr(i + 1, 3).c_str(), nullptr, 8)));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

Status writeFile(const std::string& path, std::string_view data) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return errnoError("open " + path);
  ssize_t n = ::write(fd.get(), data.data(), data.size());
  if (n < 0) return errnoError("write " + path);
  if (static_cast<size_t>(n) != data.size()) return Error{EIO, "short write " + path};
  return {};
}

struct CgroupMount {
  std::string mount_point;
  std::string root;  // which directory of the hierarchy is mounted there
};

// The mount of `fstype`; for "cgroup" (v1), the one whose super options name
// `controller`.
Result<CgroupMount> findMount(std::string_view fstype = "cgroup2",
                              std::string_view controller = {}) {
  if (testDisabled("cgroup")) return Error{ENOSYS, std::string("cgroup2 ") + kDisabledByTest};
  if (mountinfoOnce().empty()) return Error{EIO, "cannot read /proc/self/mountinfo"};
  std::istringstream in(mountinfoOnce());
  std::string line;
  while (std::getline(in, line)) {
    // id parent major:minor root mount-point options [optional...] - fstype source super
    size_t sep = line.find(" - ");
    if (sep == std::string::npos) continue;
    std::istringstream tail(line.substr(sep + 3));
    std::string type, source, super;
    tail >> type >> source >> super;
    if (type != fstype) continue;
    if (!controller.empty() && ("," + super + ",").find("," + std::string(controller) + ",") ==
                                   std::string::npos)
      continue;
    std::istringstream head(line.substr(0, sep));
    std::string id, parent, devno, root, mount_point;
    head >> id >> parent >> devno >> root >> mount_point;
    return CgroupMount{unescapeMountField(mount_point), unescapeMountField(root)};
  }
  return Error{ENOENT, "no " + std::string(fstype) + " filesystem" +
                           (controller.empty() ? "" : " with " + std::string(controller)) +
                           " in /proc/self/mountinfo"};
}

// Our cgroup in the hierarchy mounted at `m`, from the /proc/self/cgroup line
// whose controller list is `controllers` ("" for the v2 line "0::").
Result<std::string> ownCgroupIn(const CgroupMount& m, std::string_view controller) {
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
    // /proc/self/cgroup is relative to the hierarchy root; the mount may expose
    // a subtree (containers): strip the mounted root's prefix.
    if (m.root != "/" && rel.rfind(m.root, 0) == 0) rel = rel.substr(m.root.size());
    if (rel.empty() || rel == "/") return m.mount_point;
    return m.mount_point + rel;
  }
  return Error{ENOENT, controller.empty()
                           ? std::string("no cgroup v2 (\"0::\") line in /proc/self/cgroup")
                           : "no " + std::string(controller) + " line in /proc/self/cgroup"};
}

}  // namespace

Result<std::string> findCgroup2Mount() {
  auto m = findMount();
  if (!m) return m.error();
  return m->mount_point;
}

Result<std::string> ownCgroupPath() {
  auto m = findMount();
  if (!m) return m.error();
  return ownCgroupIn(*m, {});
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
  auto mount = findMount("cgroup", "pids");
  if (!mount) return mount.error();
  auto own = ownCgroupIn(*mount, "pids");
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

// ---- cgroup ids, the current cgroup2 directory, scratch cgroups ----

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

Result<std::string> currentCgroup2Dir() {
  std::ifstream mountinfo("/proc/self/mountinfo");
  if (!mountinfo) return errnoError("open /proc/self/mountinfo");
  std::string line, mount;
  while (std::getline(mountinfo, line)) {
    // "... <mount point> <options> [optional...] - <fstype> <source> ..."
    auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream tail(line.substr(dash + 3));
    std::string fstype;
    tail >> fstype;
    if (fstype != "cgroup2") continue;
    std::istringstream head(line.substr(0, dash));
    std::string id, parent, devno, root, point;
    head >> id >> parent >> devno >> root >> point;
    mount = point;
    break;
  }
  if (mount.empty()) return Error{ENOENT, "no cgroup2 mount in /proc/self/mountinfo"};

  std::ifstream self_cg("/proc/self/cgroup");
  if (!self_cg) return errnoError("open /proc/self/cgroup");
  while (std::getline(self_cg, line)) {
    if (line.rfind("0::", 0) == 0) {
      std::string rel = line.substr(3);
      if (rel.find("(deleted)") != std::string::npos)
        return Error{ENOENT, "own cgroup2 directory was removed"};
      return rel == "/" ? mount : mount + rel;
    }
  }
  return Error{ENOENT, "no cgroup2 entry in /proc/self/cgroup"};
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
