// Whether a session's write opens may run in the kernel (see the header).
#include "supervisor/session/write_recheck.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/capability.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <utility>

#include "policy/path.h"
#include "supervisor/notify/target_path.h"
#include "supervisor/session/clone_shared_vm.h"
#include "tracer/mount_floor.h"
#include "tracer/probe.h"

namespace sv::supervisor {
namespace {

Error no(std::string why) { return Error{0, std::move(why)}; }

// A self-protection rule may match a path below a writable directory.
bool reachesBelow(const policy::PathRule& rule, const std::vector<std::string>& writable_dirs) {
  const std::string& prefix = rule.glob.literalPrefix();
  for (const auto& dir : writable_dirs)
    if (tracer::isAtOrBelow(prefix, dir) || rule.glob.couldMatchBelow(dir)) return true;
  return false;
}

// An fd the command inherits (not close-on-exec) that leads past the binds:
// a directory (opened in the host's namespace: an openat() from it walks the
// host's mounts, where no name is bound) or a protected file itself
// (reopened through /proc/self/fd/N), checked by the file's own path.
std::string inheritedFdPastTheBinds(const std::vector<policy::PathRule>& protect) {
  std::unique_ptr<DIR, int (*)(DIR*)> fds(::opendir("/proc/self/fd"), ::closedir);
  if (!fds) return "our fds cannot be listed";
  const int listing = ::dirfd(fds.get());
  while (const dirent* e = ::readdir(fds.get())) {
    if (e->d_name[0] == '.') continue;
    const int fd = std::atoi(e->d_name);
    const int fd_flags = ::fcntl(fd, F_GETFD);
    if (fd == listing || fd_flags < 0 || (fd_flags & FD_CLOEXEC)) continue;
    struct stat st {};
    if (::fstat(fd, &st) != 0) continue;
    if (S_ISDIR(st.st_mode))
      return "fd " + std::to_string(fd) + ", which the command inherits, is a directory";
    auto path = fdPath(fd);
    if (!path || path->empty() || path->front() != '/') continue;  // a pipe, socket...
    for (const auto& rule : protect)
      if (rule.glob.matches(*path))
        return "fd " + std::to_string(fd) + ", which the command inherits, is a protected file";
  }
  return {};
}

}  // namespace

Result<WriteRecheckPlan> planWriteRecheck(const WriteRecheckInputs& in) {
  if (tracer::testDisabled("write-recheck")) return no(tracer::kDisabledByTest);
  if (!in.notify_decides_files) return no("another backend than seccomp user-notify decides files");
  if (!in.landlock_ruleset || !in.landlock.paths) return no("Landlock does not hold the roots");
  if (in.policy.mode != policy::Mode::Enforce) return no("mode audit binds nothing");
  for (const auto& [name, profile] : in.policy.profiles)
    if (!profile.filesystem.writable_roots.empty() || !profile.filesystem.deny_write.empty())
      return no("profile " + name + " has write rules of its own, which one mount namespace "
                "for the whole tree cannot express");
  std::string why;
  if (!tracer::mountFloorAvailable(&why)) return no("a mount namespace is " + why);
  WriteRecheckPlan plan;
  plan.cwd = in.cwd;
  plan.session_cgroup = in.session_cgroup;
  for (const auto& rule : in.landlock.rules)
    if (rule.write) plan.writable_dirs.push_back(rule.path);  // files too: dropped by the walk
  plan.protect = in.policy.self_protect.deny_write;
  plan.self_protect_rules = plan.protect.size();
  plan.protect.insert(plan.protect.end(), in.policy.filesystem.deny_write.begin(),
                      in.policy.filesystem.deny_write.end());
  // O_RDWR reads too: a swapped path must not open a denyRead file for reading.
  plan.read_write =
      in.policy.filesystem.deny_read.empty() && in.policy.self_protect.deny_read.empty();
  return plan;
}

Status checkBeforeTheWalk(WriteRecheckPlan& plan) {
  std::erase_if(plan.writable_dirs, [](const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode);
  });
  // supervise's own files that appear during the session (an audit file's
  // rotations, spools) would have no bind. The audit files themselves are
  // open by now.
  for (size_t i = 0; i < plan.self_protect_rules; ++i) {
    const policy::PathRule& rule = plan.protect[i];
    struct stat st {};
    if (reachesBelow(rule, plan.writable_dirs) &&
        (!rule.glob.isLiteral() || ::lstat(rule.glob.literalPrefix().c_str(), &st) != 0))
      return no("supervise's own " + rule.glob.pattern() + " (" + rule.id +
                ") may appear below a writable root during the session");
  }
  if (std::string fd = inheritedFdPastTheBinds(plan.protect); !fd.empty()) return no(fd);
  return {};
}

Result<tracer::ProtectedNames> findNamesToBind(WriteRecheckPlan& plan,
                                               const std::atomic<bool>* cancel) {
  SV_TRY(checkBeforeTheWalk(plan));
  tracer::ProtectedNames names = tracer::findProtectedNames(
      plan.writable_dirs, plan.cwd, plan.protect, tracer::kMaxWalkEntries, cancel);
  if (cancel && cancel->load()) return no("stopped");
  if (names.truncated)
    return no("more than " + std::to_string(tracer::kMaxWalkEntries) +
              " entries below the writable roots were walked for protected names");
  if (!names.unbindable.empty())
    return no(names.unbindable + " is protected and not a file or directory (a read-only mount "
              "does not stop writes to it)");
  return names;
}

namespace {

struct BindJob {
  int pidfd;
  int root;  // the command's root directory (rootFd())
  const std::vector<const char*>* paths;
};

// The helper: raw syscalls only (it may share our memory, or be a fork of a
// multi-threaded process). Its exit code says which step failed.
int bindJob(void* arg) {
  const auto* job = static_cast<const BindJob*>(arg);
  // The supervisor lowered its effective capabilities; the mounts need
  // CAP_SYS_ADMIN (and setns CAP_SYS_CHROOT) back.
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct caps[2]{};
  if (::syscall(SYS_capget, &header, caps) != 0) return 10;
  for (auto& c : caps) c.effective = c.permitted;
  if (::syscall(SYS_capset, &header, caps) != 0) return 11;
  // Through the pidfd: a pid reused since would name another process.
  if (::setns(job->pidfd, CLONE_NEWNS) != 0) return 12;
  // setns put us at the namespace's root; the names are the command's, from
  // its root (ours, when supervise runs chrooted).
  if (::fchdir(job->root) != 0 || ::chroot(".") != 0) return 14;
  const char* failed = nullptr;
  for (const char* path : *job->paths)
    if (tracer::bindReadOnly(path, &failed) != 0) return 13;
  return 0;
}

}  // namespace

Status bindReadOnlyIn(int pidfd, const std::vector<std::string>& names) {
  std::vector<const char*> paths;
  paths.reserve(names.size());
  for (const auto& n : names) paths.push_back(n.c_str());
  BindJob job{pidfd, rootFd(), &paths};
  pid_t child;
  if constexpr (kCanShareVm) {
    // Sharing our memory, this thread suspended until it is done: no copy of
    // the page tables (a fork costs ~1-3 ms here). Without CLONE_FS, so
    // that it may join another mount namespace.
    std::vector<char> stack(64 * 1024);
    child = ::clone(bindJob, stack.data() + stack.size(), CLONE_VM | CLONE_VFORK | SIGCHLD, &job);
  } else {
    child = ::fork();
    if (child == 0) ::_exit(bindJob(&job));
  }
  if (child < 0) return errnoError("start the helper that binds the protected names");
  int status = 0;
  while (::waitpid(child, &status, 0) < 0)
    if (errno != EINTR) return errnoError("waitpid");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Error{0, "binding the protected names failed (helper status " +
                        std::to_string(status) + ")"};
  return {};
}

namespace {

// The mount a path or magic link ends on.
std::optional<uint64_t> mountIdOf(int dirfd, const char* path) {
  struct statx stx {};
  if (::statx(dirfd, path, AT_STATX_DONT_SYNC, STATX_MNT_ID, &stx) != 0 ||
      !(stx.stx_mask & STATX_MNT_ID))
    return std::nullopt;
  return stx.stx_mnt_id;
}

}  // namespace

Status nothingHeldPastTheBinds(const WriteRecheckPlan& plan,
                               const std::vector<std::string>& binds) {
  if (plan.session_cgroup.empty()) return no("no session cgroup to find the command's tasks in");
  // Each bind's own mount, as the command's namespace has it.
  std::vector<std::pair<std::string, uint64_t>> bound;
  for (const auto& name : binds) {
    const size_t start = name.find_first_not_of('/');
    const std::string rel = start == std::string::npos ? "." : name.substr(start);
    if (auto id = mountIdOf(rootFd(), rel.c_str())) bound.emplace_back(name, *id);
  }
  // A handle on `link` (a /proc magic link) is past the binds when it names a
  // bound path, or one below it, on another mount than the bind's.
  auto pastTheBinds = [&](const std::string& link) {
    char target[4096];
    const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
    if (n <= 0 || target[0] != '/') return false;  // gone, or a pipe or socket
    std::string path(target, static_cast<size_t>(n));
    policy::takePathInRoot(path, plan.process_root);
    for (const auto& [name, id] : bound)
      if (tracer::isAtOrBelow(path, name)) {
        const auto held = mountIdOf(AT_FDCWD, link.c_str());
        return !held || *held != id;
      }
    return false;
  };
  std::unique_ptr<DIR, int (*)(DIR*)> procs(::opendir("/proc"), ::closedir);
  if (!procs) return errnoError("/proc");
  while (const dirent* p = ::readdir(procs.get())) {
    if (!isPidName(p->d_name) || !inSessionCgroup(std::atoi(p->d_name), plan.session_cgroup))
      continue;
    const std::string tasks_dir = std::string("/proc/") + p->d_name + "/task";
    std::unique_ptr<DIR, int (*)(DIR*)> tasks(::opendir(tasks_dir.c_str()), ::closedir);
    while (tasks) {
      const dirent* t = ::readdir(tasks.get());
      if (!t) break;
      if (!isPidName(t->d_name)) continue;
      const std::string task = tasks_dir + "/" + t->d_name;
      for (const char* link : {"/cwd", "/root"})
        if (pastTheBinds(task + link))
          return no("task " + std::string(t->d_name) + " has its " + (link + 1) +
                    " on a protected name, reached before the binds");
      const std::string fd_dir = task + "/fd";
      std::unique_ptr<DIR, int (*)(DIR*)> fds(::opendir(fd_dir.c_str()), ::closedir);
      while (fds) {
        const dirent* f = ::readdir(fds.get());
        if (!f) break;
        if (isPidName(f->d_name) && pastTheBinds(fd_dir + "/" + f->d_name))
          return no("task " + std::string(t->d_name) + " holds a protected name (fd " +
                    f->d_name + ") opened before the binds");
      }
    }
  }
  return {};
}

bool bindProtectedNames(WriteRecheckPlan& plan, int pidfd, const std::atomic<bool>* cancel) {
  auto names = findNamesToBind(plan, cancel);
  return names && bindReadOnlyIn(pidfd, names->paths).ok() &&
         nothingHeldPastTheBinds(plan, names->paths).ok();
}

WriteRecheck::WriteRecheck(WriteRecheckPlan plan, UniqueFd pidfd, std::chrono::milliseconds delay,
                           std::function<void()> ready)
    : plan_(std::move(plan)), pidfd_(std::move(pidfd)) {
  thread_ = std::thread([this, delay, ready = std::move(ready)] { run(delay, ready); });
}

WriteRecheck::~WriteRecheck() {
  {
    std::lock_guard lock(mu_);
    cancel_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void WriteRecheck::run(std::chrono::milliseconds delay, const std::function<void()>& ready) {
  {
    std::unique_lock lock(mu_);
    if (wake_.wait_for(lock, delay, [this] { return cancel_.load(); })) return;
  }
  try {
    if (bindProtectedNames(plan_, pidfd_.get(), &cancel_) && !cancel_) ready();
  } catch (...) {
    // Out of memory on the walk: every write open stays emulated.
  }
}

}  // namespace sv::supervisor
