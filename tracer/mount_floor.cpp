// The mount-namespace floor (see the header).
#include "tracer/mount_floor.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/mount.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <set>

#include "tracer/capabilities.h"
#include "tracer/probe.h"
#include "tracer/protected_names.h"

namespace sv::tracer {
namespace {

// The rights of a Landlock rule as mount attributes.
uint64_t attributesOf(const policy::LandlockRule& rule) {
  uint64_t attrs = MOUNT_ATTR_NOSUID;
  if (!rule.write) attrs |= MOUNT_ATTR_RDONLY;
  if (!rule.exec) attrs |= MOUNT_ATTR_NOEXEC;
  if (!isAtOrBelow(rule.path, "/dev")) attrs |= MOUNT_ATTR_NODEV;
  return attrs;
}

// Scaffolding in the staging tmpfs for a mount point at `path`: its parents
// as directories, itself as a directory or an empty file.
void addMountPoint(MountFloorPlan& out, std::set<std::string>& made, const std::string& path,
                   bool directory) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    const std::string parent = path.substr(0, slash);
    if (made.insert(parent).second)
      out.steps.push_back({MountFloorStep::Kind::MakeDir, "", out.staging + parent});
  }
  if (made.insert(path).second)
    out.steps.push_back({directory ? MountFloorStep::Kind::MakeDir : MountFloorStep::Kind::MakeFile,
                         "", out.staging + path});
}

}  // namespace

bool mountFloorAvailable(std::string* why) {
  auto no = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return false;
  };
  if (testDisabled("mountns")) return no(kDisabledByTest);
  if (!hasEffectiveCapability(CAP_SYS_ADMIN))
    return no("unavailable (a private mount namespace needs CAP_SYS_ADMIN: run supervise as root)");
  errno = 0;
  if (setMountAttributes("", 0, 0, 0) != 0 && errno == ENOSYS)
    return no("unavailable (no mount_setattr: kernel < 5.12)");
  return true;
}

Result<MountFloorPlan> planMountFloor(const policy::LandlockPlan& plan,
                                      const std::vector<policy::PathRule>& protect,
                                      const std::string& staging, const std::string& cwd,
                                      size_t walk_budget) {
  if (!plan.paths) return Error{0, "mount floor: the plan decides no paths"};
  MountFloorPlan out;
  out.staging = staging;
  out.cwd = cwd;
  std::set<std::string> made;
  std::vector<policy::LandlockRule> bound;  // with the rights in effect there
  std::vector<std::string> writable_dirs;  // walked for protected names
  for (policy::LandlockRule rule : plan.rules) {  // sorted by path: a parent before what is below
    struct stat st;
    if (::stat(rule.path.c_str(), &st) != 0) continue;  // as Landlock: a missing path grants nothing
    // Landlock grants the union of the rules on a path's ancestors; the
    // mount below a bound rule carries that union too, or is not needed.
    const policy::LandlockRule* nearest = nullptr;
    for (const auto& b : bound)
      if (isAtOrBelow(rule.path, b.path)) nearest = &b;
    if (nearest) {
      rule.read |= nearest->read;
      rule.write |= nearest->write;
      rule.exec |= nearest->exec;
      if (rule.read == nearest->read && rule.write == nearest->write && rule.exec == nearest->exec)
        continue;
    } else {
      addMountPoint(out, made, rule.path, S_ISDIR(st.st_mode));  // below one, the host's exists
    }
    out.steps.push_back({MountFloorStep::Kind::Bind, rule.path, staging + rule.path,
                         attributesOf(rule), 0});
    bound.push_back(rule);
    if (rule.write && S_ISDIR(st.st_mode)) writable_dirs.push_back(rule.path);
  }
  ProtectedNames names = findProtectedNames(writable_dirs, cwd, protect, walk_budget);
  out.read_only_names = std::move(names.paths);
  out.names_truncated = names.truncated;
  for (const auto& name : out.read_only_names)
    out.steps.push_back({MountFloorStep::Kind::Bind, name, staging + name,
                         MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0});
  return out;
}

int applyMountFloor(const MountFloorPlan& plan, const char** failed) {
  auto fail = [&](const char* step) {
    *failed = step;
    return -errno;
  };
  if (::unshare(CLONE_NEWNS) != 0) return fail("unshare the mount namespace");
  // Nothing done here reaches the host's namespace.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return fail("make the mounts private");
  const char* root = plan.staging.c_str();
  if (::mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") != 0)
    return fail("mount the root tmpfs");
  for (const auto& step : plan.steps) {
    const char* target = step.target.c_str();
    switch (step.kind) {
      case MountFloorStep::Kind::MakeDir:
        if (::mkdir(target, 0755) != 0 && errno != EEXIST) return fail("make a mount point");
        break;
      case MountFloorStep::Kind::MakeFile: {
        const int fd = ::open(target, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0) return fail("make a file mount point");
        ::close(fd);
        break;
      }
      case MountFloorStep::Kind::Bind:
        if (::mount(step.source.c_str(), target, nullptr, MS_BIND | MS_REC, nullptr) != 0)
          return fail("bind a root");
        // Recursively: a mount below the root gets the root's rights.
        if (setMountAttributes(target, AT_RECURSIVE, step.attr_set, step.attr_clr) != 0)
          return fail("set a root's mount attributes");
        break;
    }
  }
  if (setMountAttributes(root, 0, MOUNT_ATTR_RDONLY, 0) != 0) return fail("make the root read-only");
  // pivot_root(".", "."): the old root stacks under the new one, then goes.
  if (::chdir(root) != 0) return fail("enter the new root");
  if (::syscall(SYS_pivot_root, ".", ".") != 0) return fail("pivot_root");
  if (::umount2(".", MNT_DETACH) != 0) return fail("detach the host's root");
  if (::chdir(plan.cwd.c_str()) != 0)
    return fail("enter the working directory (it lies outside every root of the policy?)");
  return 0;
}

Result<StagingDir> StagingDir::create(const policy::LandlockPlan& plan) {
  // Outside every rule: a recursive bind of a rule must not copy the staging
  // mount into the new root.
  for (const char* base : {"/run", "/mnt", "/var/tmp", "/tmp", "/"}) {
    struct stat st;
    if (::stat(base, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    bool under_rule = false;
    for (const auto& rule : plan.rules) under_rule = under_rule || isAtOrBelow(base, rule.path);
    if (under_rule) continue;
    std::string path = std::string(base == std::string("/") ? "" : base) + "/.supervise-root.XXXXXX";
    if (::mkdtemp(path.data())) return StagingDir(std::move(path));
  }
  // Everything is below some rule (a root of "/"): the copy the binds make
  // of the staging mount shows only the floor's own tmpfs.
  std::string path = "/tmp/.supervise-root.XXXXXX";
  if (::mkdtemp(path.data())) return StagingDir(std::move(path));
  return errnoError("mount floor: create a staging directory");
}

StagingDir::~StagingDir() {
  if (!path_.empty()) ::rmdir(path_.c_str());
}

}  // namespace sv::tracer
