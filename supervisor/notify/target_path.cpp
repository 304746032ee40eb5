// Component-by-component path walk on behalf of a target process; see target_path.h.
#include "supervisor/notify/target_path.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <linux/openat2.h>
#include <sys/syscall.h>

#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <deque>

#include "policy/path.h"

namespace sv::supervisor {
namespace {

constexpr int kMaxSymlinks = 40;  // the kernel's MAXSYMLINKS
constexpr ino_t kProcRootIno = 1;

Result<UniqueFd> openPath(int dirfd, const char* name, int extra_flags = 0) {
  int fd = ::openat(dirfd, name, O_PATH | O_CLOEXEC | extra_flags);
  if (fd < 0) return errnoError(std::string("openat ") + name);
  return UniqueFd(fd);
}

bool sameInode(int a, int b) {
  struct stat sa, sb;
  return ::fstat(a, &sa) == 0 && ::fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// True when `dirfd` is the root directory of a procfs mount: the only procfs
// directory whose symlinks (self, thread-self, mounts, net) are plain text
// links rather than magic links.
bool isProcRoot(int dirfd) {
  struct statfs sfs;
  struct stat st;
  return ::fstatfs(dirfd, &sfs) == 0 && sfs.f_type == PROC_SUPER_MAGIC && ::fstat(dirfd, &st) == 0 &&
         st.st_ino == kProcRootIno;
}

bool isProcfs(int fd) {
  struct statfs sfs;
  return ::fstatfs(fd, &sfs) == 0 && sfs.f_type == PROC_SUPER_MAGIC;
}

// Pushes the components of `text` to the front of the work list, in order.
void pushComponents(std::deque<std::string>& work, std::string_view text) {
  std::deque<std::string> parts;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == '/') ++i;
    size_t j = i;
    while (j < text.size() && text[j] != '/') ++j;
    if (j > i) parts.emplace_back(text.substr(i, j - i));
    i = j;
  }
  work.insert(work.begin(), parts.begin(), parts.end());
}

std::string joinPath(std::string_view dir, std::string_view name) {
  std::string out(dir);
  if (out.empty() || out.back() != '/') out.push_back('/');
  out.append(name);
  return out;
}

std::string dirName(std::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

}  // namespace

namespace {
std::atomic<int> target_root{-1};  // set before the first notification is read
}  // namespace

int rootFd() {
  if (const int set = target_root.load(std::memory_order_acquire); set >= 0) return set;
  static const int own = ::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  return own;
}

void setTargetRoot(UniqueFd root) {
  if (const int old = target_root.exchange(root.release()); old >= 0) ::close(old);
}

namespace {

// openat2 of `abs_path` from rootFd() ("" or "/" is the root itself);
// returns the fd or -errno. The path is copied to the stack: no allocation.
int openFromRoot(std::string_view abs_path, uint64_t flags, uint64_t mode, uint64_t resolve) {
  while (!abs_path.empty() && abs_path.front() == '/') abs_path.remove_prefix(1);
  char rel[2 * PATH_MAX + 1];
  if (abs_path.size() >= sizeof rel) return -ENAMETOOLONG;
  abs_path.copy(rel, abs_path.size());
  rel[abs_path.size()] = '\0';
  open_how how{};
  how.flags = flags | O_CLOEXEC;
  how.mode = mode;
  how.resolve = resolve;
  long fd = ::syscall(SYS_openat2, rootFd(), abs_path.empty() ? "." : rel, &how, sizeof how);
  return fd < 0 ? -errno : static_cast<int>(fd);
}

}  // namespace

int openNoSymlinks(std::string_view abs_path, uint64_t flags, uint64_t mode) {
  return openFromRoot(abs_path, flags, mode, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
}

int existsWithoutSymlinks(std::string_view abs_path, bool only_final_may_be_one) {
  if (!only_final_may_be_one) {
    const int fd = openNoSymlinks(abs_path, O_PATH);
    if (fd < 0) return fd;
    ::close(fd);
    return 0;
  }
  while (!abs_path.empty() && abs_path.front() == '/') abs_path.remove_prefix(1);
  char rel[2 * PATH_MAX + 1];
  if (abs_path.empty()) return -ELOOP;  // the root: the walk has it
  if (abs_path.size() >= sizeof rel) return -ENAMETOOLONG;
  abs_path.copy(rel, abs_path.size());
  rel[abs_path.size()] = '\0';
  struct stat st;
  if (::fstatat(rootFd(), rel, &st, AT_SYMLINK_NOFOLLOW) != 0) return -errno;
  return S_ISLNK(st.st_mode) ? -ELOOP : 0;
}

int openFollowingSymlinks(std::string_view abs_path, bool follow_final) {
  if (abs_path.find_first_not_of('/') == std::string_view::npos)
    return -EINVAL;  // the root itself: the walk has it
  const int fd = openFromRoot(abs_path, O_PATH | (follow_final ? 0 : O_NOFOLLOW), 0,
                              RESOLVE_NO_MAGICLINKS);
  if (fd >= 0 && isProcfs(fd)) {
    ::close(fd);
    return -EXDEV;
  }
  return fd;
}

Status lexicalTargetPath(pid_t tid, pid_t tgid, int dirfd, std::string_view path,
                         std::string_view process_root, std::string& out) {
  if (path.empty()) return Error{ENOENT, "empty path"};
  if (path[0] == '/') {
    policy::normalizePathInto("/", path, out);
    return {};
  }
  char link[64];
  if (dirfd == AT_FDCWD)
    std::snprintf(link, sizeof link, "/proc/%d/cwd", tid);
  else
    std::snprintf(link, sizeof link, "/proc/%d/fd/%d", tgid, dirfd);
  char buf[4096];
  ssize_t n = ::readlink(link, buf, sizeof buf);
  if (n <= 0 || static_cast<size_t>(n) >= sizeof buf || buf[0] != '/')
    return Error{EBADF, "no path for the base directory"};  // anonymous: walk instead
  const std::string_view base(buf, static_cast<size_t>(n));
  if (base.ends_with(" (deleted)")) return Error{ENOENT, "base directory deleted"};  // walk
  policy::normalizePathInto(policy::pathInRoot(base, process_root), path, out);
  return {};
}

Result<std::string> fdPath(int fd, std::string_view process_root) {
  char link[64];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  char buf[4096 + 16];
  ssize_t n = ::readlink(link, buf, sizeof buf);
  if (n < 0) return errnoError("readlink fd");
  if (static_cast<size_t>(n) >= sizeof buf) return Error{ENAMETOOLONG, "readlink fd"};
  std::string out(buf, static_cast<size_t>(n));
  constexpr std::string_view kDeleted = " (deleted)";
  if (out.size() > kDeleted.size() && out.ends_with(kDeleted)) out.resize(out.size() - kDeleted.size());
  policy::takePathInRoot(out, process_root);
  return out;
}

Result<std::string> processRoot(pid_t pid) {
  char link[64];
  std::snprintf(link, sizeof link, "/proc/%d/root", pid);
  char buf[4096];
  const ssize_t n = ::readlink(link, buf, sizeof buf);
  if (n < 0) return errnoError(link);
  if (static_cast<size_t>(n) >= sizeof buf || buf[0] != '/')
    return Error{ENAMETOOLONG, std::string(link) + ": no usable name"};
  return std::string(buf, static_cast<size_t>(n));
}

Result<UniqueFd> openProcessRoot(pid_t pid) {
  char link[64];
  std::snprintf(link, sizeof link, "/proc/%d/root", pid);
  UniqueFd fd(::open(link, O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return errnoError(link);
  return fd;
}

bool inSessionCgroup(pid_t pid, std::string_view session_cgroup) {
  if (session_cgroup.empty()) return false;
  char name[64];
  std::snprintf(name, sizeof name, "/proc/%d/cgroup", pid);
  UniqueFd fd(::open(name, O_RDONLY | O_CLOEXEC));
  if (!fd) return false;
  char buf[4096];
  const ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
  if (n <= 0) return false;
  // cgroup v2 line: "0::/path/of/the/cgroup\n"; the session's name must be a
  // whole component of it.
  std::string_view text(buf, static_cast<size_t>(n));
  const size_t v2 = text.find("0::/");
  if (v2 == std::string_view::npos) return false;
  std::string_view path = text.substr(v2 + 3);
  path = path.substr(0, path.find('\n'));
  for (size_t at = 0; (at = path.find(session_cgroup, at)) != std::string_view::npos; ++at) {
    const size_t end = at + session_cgroup.size();
    if (at > 0 && path[at - 1] == '/' && (end == path.size() || path[end] == '/')) return true;
  }
  return false;
}

bool isPidName(std::string_view s) {
  if (s.empty() || s.size() > 10) return false;
  for (char ch : s)
    if (ch < '0' || ch > '9') return false;
  return true;
}

Result<ResolvedPath> resolveTargetPath(pid_t tid, pid_t tgid, int dirfd, std::string_view path,
                                       const ResolveOptions& options) {
  if (path.empty()) return Error{ENOENT, "empty path"};
  char proc[64];
  std::snprintf(proc, sizeof proc, "/proc/%d/root", tid);
  auto root = openPath(AT_FDCWD, proc, O_DIRECTORY);
  if (!root) return root.error();

  UniqueFd cur;
  if (path[0] == '/') {
    if (options.beneath) return Error{EXDEV, "absolute path under RESOLVE_BENEATH"};
    cur.reset(::dup(root->get()));
  } else if (dirfd == AT_FDCWD) {
    std::snprintf(proc, sizeof proc, "/proc/%d/cwd", tid);
    auto cwd = openPath(AT_FDCWD, proc, O_DIRECTORY);
    if (!cwd) return cwd.error();
    cur = std::move(*cwd);
  } else {
    std::snprintf(proc, sizeof proc, "/proc/%d/fd/%d", tgid, dirfd);
    int fd = ::openat(AT_FDCWD, proc, O_PATH | O_CLOEXEC);
    if (fd < 0) return Error{EBADF, "dirfd"};
    cur.reset(fd);
    struct stat st;
    if (::fstat(cur.get(), &st) != 0 || !S_ISDIR(st.st_mode)) return Error{ENOTDIR, "dirfd"};
  }
  if (!cur) return errnoError("dup root");
  const UniqueFd start(::dup(cur.get()));  // RESOLVE_BENEATH's boundary

  ResolvedPath out;
  out.must_be_dir = path.back() == '/';
  std::deque<std::string> work;
  pushComponents(work, path);
  if (work.empty()) {  // "/" or "///": the root itself
    out.object = std::move(cur);
    out.name = ".";
    out.real_path = "/";
    return out;
  }

  int links = 0;
  while (!work.empty()) {
    std::string comp = std::move(work.front());
    work.pop_front();
    const bool last = work.empty();

    if (last && (comp == "." || comp == "..")) {
      // Kept as written: the kernel decides what "rmdir(x/.)" means.
      auto obj = openPath(cur.get(), comp.c_str(), O_DIRECTORY);
      if (!obj) return obj.error();
      auto real = fdPath(cur.get(), options.process_root);
      if (!real) return real.error();
      out.real_path = comp == "." ? *real : dirName(*real);
      out.parent = std::move(cur);
      out.name = comp;
      out.object = std::move(*obj);
      return out;
    }
    if (comp == ".") continue;
    if (comp == "..") {
      if (sameInode(cur.get(), root->get())) continue;  // ".." of the root is the root
      if (options.beneath && sameInode(cur.get(), start.get()))
        return Error{EXDEV, "'..' above the start under RESOLVE_BENEATH"};
      auto up = openPath(cur.get(), "..", O_DIRECTORY);
      if (!up) return up.error();
      cur = std::move(*up);
      continue;
    }

    if (!options.session_cgroup.empty() && isPidName(comp) && isProcRoot(cur.get())) {
      const pid_t pid = static_cast<pid_t>(std::strtol(comp.c_str(), nullptr, 10));
      if (pid != tgid && pid != tid && !inSessionCgroup(pid, options.session_cgroup))
        return Error{EACCES, "/proc/" + comp + " is a process outside the session"};
    }
    int fd = ::openat(cur.get(), comp.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      int err = errno;
      if (err == ENOENT && last) {  // the final component does not exist yet: a create
        auto real = fdPath(cur.get(), options.process_root);
        if (!real) return real.error();
        out.real_path = joinPath(*real, comp);
        out.parent = std::move(cur);
        out.name = std::move(comp);
        return out;
      }
      return Error{err, "lookup " + comp};
    }
    UniqueFd next(fd);
    struct stat st;
    if (::fstat(next.get(), &st) != 0) return errnoError("fstat");

    if (S_ISLNK(st.st_mode) && (!last || options.follow_final)) {
      if (options.no_symlinks) return Error{ELOOP, "symlink under RESOLVE_NO_SYMLINKS"};
      if (++links > kMaxSymlinks) return Error{ELOOP, "too many symlinks"};
      if (isProcRoot(cur.get())) {
        // Plain procfs links resolve relative to the *reader*: substitute the target.
        std::string target;
        if (comp == "self") {
          target = std::to_string(tgid);
        } else if (comp == "thread-self") {
          target = std::to_string(tgid) + "/task/" + std::to_string(tid);
        } else {
          char buf[256];
          ssize_t n = ::readlinkat(next.get(), "", buf, sizeof buf - 1);
          if (n < 0) return errnoError("readlink " + comp);
          target.assign(buf, static_cast<size_t>(n));
        }
        pushComponents(work, target);
        continue;
      }
      if (isProcfs(next.get())) {
        // A magic link (/proc/PID/fd/N, cwd, root, exe): the kernel jumps straight
        // to the object, which is the target's own. Follow it the same way.
        if (options.no_magiclinks) return Error{ELOOP, "magic link under RESOLVE_NO_MAGICLINKS"};
        auto obj = openPath(cur.get(), comp.c_str());
        if (!obj) return obj.error();
        if (last) {
          auto real = fdPath(obj->get(), options.process_root);
          if (!real) return real.error();
          out.real_path = std::move(*real);
          out.object = std::move(*obj);
          out.name = std::move(comp);
          return out;  // no parent: a magic link names an object, not a directory entry
        }
        cur = std::move(*obj);
        continue;
      }
      char buf[4096];
      ssize_t n = ::readlinkat(next.get(), "", buf, sizeof buf);
      if (n < 0) return errnoError("readlink " + comp);
      if (static_cast<size_t>(n) >= sizeof buf) return Error{ENAMETOOLONG, "readlink " + comp};
      std::string_view target(buf, static_cast<size_t>(n));
      if (!target.empty() && target[0] == '/') {
        if (options.beneath) return Error{EXDEV, "absolute symlink under RESOLVE_BENEATH"};
        cur.reset(::dup(root->get()));
      }
      pushComponents(work, target);
      continue;
    }

    if (last) {
      auto real = fdPath(next.get(), options.process_root);
      if (!real) return real.error();
      out.real_path = std::move(*real);
      out.parent = std::move(cur);
      out.name = std::move(comp);
      out.object = std::move(next);
      return out;
    }
    if (!S_ISDIR(st.st_mode)) return Error{ENOTDIR, "not a directory: " + comp};
    cur = std::move(next);
  }
  // The path ended in symlinks that resolved to the directory we stand in.
  auto real = fdPath(cur.get(), options.process_root);
  if (!real) return real.error();
  out.real_path = std::move(*real);
  out.object = std::move(cur);
  out.name = ".";
  return out;
}

}  // namespace sv::supervisor
