// Protected names (see the header).
#include "tracer/protected_names.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <filesystem>
#include <set>
#include <system_error>

namespace sv::tracer {
namespace {

namespace fs = std::filesystem;

// Where the walk starts: the working directory first, then each writable
// directory not already covered by an earlier start.
std::vector<std::string> walkStarts(const std::vector<std::string>& writable_dirs,
                                    const std::string& cwd) {
  std::vector<std::string> starts;
  for (const auto& dir : writable_dirs)
    if (isAtOrBelow(cwd, dir)) {
      starts.push_back(cwd);
      break;
    }
  for (const auto& dir : writable_dirs) {
    bool covered = false;
    for (const auto& s : starts) covered = covered || isAtOrBelow(dir, s);
    if (!covered) starts.push_back(dir);
  }
  return starts;
}

// A match of this type is bound; a symlink is not (an open follows it to a
// file judged by its own name); anything else is what a mount can't protect.
enum class Kind { Bind, Skip, Unbindable };
Kind kindOf(fs::file_type type) {
  switch (type) {
    case fs::file_type::regular:
    case fs::file_type::directory: return Kind::Bind;
    case fs::file_type::symlink:
    case fs::file_type::not_found:
    case fs::file_type::none: return Kind::Skip;
    default: return Kind::Unbindable;
  }
}

// An entry's own type (a symlink's, not its target's), from the listing's
// d_type where the filesystem fills it in: no lstat per entry (a /tmp of
// thousands of entries costs as many syscalls at every start). libstdc++'s
// symlink_status() always asks the kernel; these observers use the cache.
fs::file_type ownType(const fs::directory_entry& entry, std::error_code& ec) {
  if (entry.is_symlink(ec)) return fs::file_type::symlink;
  if (!ec && entry.is_directory(ec)) return fs::file_type::directory;
  if (!ec && entry.is_regular_file(ec)) return fs::file_type::regular;
  return ec ? fs::file_type::not_found : fs::file_type::unknown;  // a fifo, socket or device
}

void note(ProtectedNames& out, std::string path, Kind kind) {
  if (kind == Kind::Bind) out.paths.push_back(std::move(path));
  if (kind == Kind::Unbindable && out.unbindable.empty()) out.unbindable = std::move(path);
}

void walkFrom(const std::string& start, const std::set<std::string>& other_starts,
              const std::vector<policy::PathRule>& protect, size_t& budget,
              const std::atomic<bool>* cancel, ProtectedNames& out) {
  std::vector<const policy::PathRule*> here;
  for (const auto& rule : protect) {
    const std::string& prefix = rule.glob.literalPrefix();
    if (isAtOrBelow(prefix, start) || isAtOrBelow(start, prefix)) here.push_back(&rule);
  }
  // Literal rules first: found without a walk, whatever the budget.
  for (const auto* rule : here) {
    const std::string& path = rule->glob.literalPrefix();
    std::error_code ec;
    if (rule->glob.isLiteral() && isAtOrBelow(path, start))
      note(out, path, kindOf(fs::symlink_status(path, ec).type()));
  }
  auto matches = [&](const std::string& path) {
    return std::any_of(here.begin(), here.end(), [&](auto* r) { return r->glob.matches(path); });
  };
  auto worthEntering = [&](const std::string& path) {
    return std::any_of(here.begin(), here.end(),
                       [&](auto* r) { return r->glob.couldMatchBelow(path); });
  };
  std::deque<std::string> dirs;
  if (worthEntering(start)) dirs.push_back(start);
  for (; !dirs.empty(); dirs.pop_front()) {
    std::error_code ec;
    for (fs::directory_iterator it(dirs.front(), fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::directory_iterator(); it.increment(ec)) {
      if (budget == 0 || (cancel && cancel->load(std::memory_order_relaxed))) {
        out.truncated = true;
        return;
      }
      --budget;
      std::string path = it->path().string();
      std::error_code gone;
      const auto type = ownType(*it, gone);
      if (gone) continue;
      if (matches(path))
        note(out, std::move(path), kindOf(type));
      else if (type == fs::file_type::directory && !other_starts.contains(path) &&
               worthEntering(path))
        dirs.push_back(std::move(path));
    }
  }
}

}  // namespace

bool isAtOrBelow(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path == dir || (path.starts_with(dir) && path[dir.size()] == '/');
}

int setMountAttributes(const char* path, unsigned flags, uint64_t set, uint64_t clr) {
  mount_attr attr{};
  attr.attr_set = set;
  attr.attr_clr = clr;
  return static_cast<int>(::syscall(SYS_mount_setattr, AT_FDCWD, path, flags, &attr, sizeof attr));
}

ProtectedNames findProtectedNames(const std::vector<std::string>& writable_dirs,
                                  const std::string& cwd,
                                  const std::vector<policy::PathRule>& protect, size_t budget,
                                  const std::atomic<bool>* cancel) {
  ProtectedNames out;
  const std::vector<std::string> starts = walkStarts(writable_dirs, cwd);
  const std::set<std::string> other_starts(starts.begin(), starts.end());
  for (const auto& start : starts) {
    walkFrom(start, other_starts, protect, budget, cancel, out);
    if (out.truncated) break;
  }
  std::sort(out.paths.begin(), out.paths.end());
  out.paths.erase(std::unique(out.paths.begin(), out.paths.end()), out.paths.end());
  return out;
}

int enterOwnMountNamespace(const char** failed) {
  auto fail = [&](const char* step) {
    *failed = step;
    return -errno;
  };
  if (::unshare(CLONE_NEWNS) != 0) return fail("unshare the mount namespace");
  // The host's later mounts still show here; nothing done here goes back.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0)
    return fail("make the mounts slaves of the host's");
  return 0;
}

int bindReadOnly(const char* path, const char** failed) {
  if (::mount(path, path, nullptr, MS_BIND | MS_REC, nullptr) != 0) {
    if (errno == ENOENT) return 0;  // gone since the walk: nothing there to write
    *failed = "bind a protected name onto itself";
    return -errno;
  }
  constexpr uint64_t kReadOnly = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  if (setMountAttributes(path, AT_RECURSIVE, kReadOnly, 0) != 0) {
    *failed = "make a protected name read-only";
    return -errno;
  }
  return 0;
}

}  // namespace sv::tracer
