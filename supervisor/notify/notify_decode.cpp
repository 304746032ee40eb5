// decodeCall(): see notify_decode.h. One case per syscall, in the order of
// the seccomp plan's tables (tracer/seccomp/seccomp_filter.cpp).
#include "supervisor/notify/notify_decode.h"

#include <sys/stat.h>
#include <sys/syscall.h>

namespace sv::supervisor {
namespace {

#ifndef SYS_fchmodat2
constexpr long kSysFchmodat2 = 452;
#else
constexpr long kSysFchmodat2 = SYS_fchmodat2;
#endif

// An `int` argument is the low half of its register (the kernel ignores the rest).
int asInt(uint64_t arg) { return static_cast<int>(static_cast<uint32_t>(arg)); }
unsigned asUint(uint64_t arg) { return static_cast<uint32_t>(arg); }

DecodedCall make(CallKind kind, const char* name) {
  DecodedCall d;
  d.kind = kind;
  d.name = name;
  return d;
}

DecodedCall open(const char* name, int dirfd, uint64_t path, int flags, unsigned mode) {
  DecodedCall d = make(CallKind::Open, name);
  d.dirfd = dirfd;
  d.path = path;
  d.flags = flags;
  d.mode = mode;
  return d;
}

DecodedCall pathCall(CallKind kind, const char* name, int dirfd, uint64_t path, int flags = 0) {
  DecodedCall d = make(kind, name);
  d.dirfd = dirfd;
  d.path = path;
  d.flags = flags;
  return d;
}

DecodedCall twoPaths(CallKind kind, const char* name, int dirfd, uint64_t path, int dirfd2,
                     uint64_t path2, int flags) {
  DecodedCall d = pathCall(kind, name, dirfd, path, flags);
  d.dirfd2 = dirfd2;
  d.path2 = path2;
  return d;
}

DecodedCall create(const char* name, int dirfd, uint64_t path, unsigned mode, uint64_t dev,
                   int file_type) {
  DecodedCall d = pathCall(CallKind::Create, name, dirfd, path);
  d.mode = mode;
  d.dev = dev;
  d.file_type = file_type;
  return d;
}

DecodedCall chmod(const char* name, int dirfd, uint64_t path, unsigned mode, int flags) {
  DecodedCall d = pathCall(CallKind::Chmod, name, dirfd, path, flags);
  d.mode = mode;
  return d;
}

DecodedCall chown(const char* name, int dirfd, uint64_t path, uint64_t uid, uint64_t gid,
                  int flags) {
  DecodedCall d = pathCall(CallKind::Chown, name, dirfd, path, flags);
  d.uid = static_cast<uid_t>(asUint(uid));
  d.gid = static_cast<gid_t>(asUint(gid));
  return d;
}

DecodedCall utimes(const char* name, int dirfd, uint64_t path, uint64_t times, int kind,
                   int flags) {
  DecodedCall d = pathCall(CallKind::Utimes, name, dirfd, path, flags);
  d.times = times;
  d.times_kind = kind;
  return d;
}

DecodedCall xattr(const char* name, int fd, uint64_t path, uint64_t attr, uint64_t value,
                  uint64_t size, int flags, bool follow, bool remove) {
  DecodedCall d = pathCall(CallKind::Xattr, name, fd, path, flags);
  d.arg = attr;
  d.value = value;
  d.size = static_cast<size_t>(size);
  d.follow = follow;
  d.remove = remove;
  return d;
}

DecodedCall exec(const char* name, int dirfd, uint64_t path, uint64_t argv, int flags) {
  DecodedCall d = pathCall(CallKind::Exec, name, dirfd, path, flags);
  d.arg = argv;
  return d;
}

}  // namespace

DecodedCall decodeCall(const seccomp_data& data) {
  const auto& a = data.args;
  constexpr int kCwd = AT_FDCWD;
  switch (data.nr) {
    case SYS_open: return open("open", kCwd, a[0], asInt(a[1]), asUint(a[2]));
    case SYS_openat: return open("openat", asInt(a[0]), a[1], asInt(a[2]), asUint(a[3]));
    case SYS_creat: return open("creat", kCwd, a[0], O_CREAT | O_WRONLY | O_TRUNC, asUint(a[1]));
    case SYS_openat2: {
      DecodedCall d = pathCall(CallKind::Openat2, "openat2", asInt(a[0]), a[1]);
      d.arg = a[2];
      d.size = static_cast<size_t>(a[3]);
      return d;
    }
    case SYS_mkdir: return create("mkdir", kCwd, a[0], asUint(a[1]), 0, S_IFDIR);
    case SYS_mkdirat: return create("mkdirat", asInt(a[0]), a[1], asUint(a[2]), 0, S_IFDIR);
    case SYS_mknod: return create("mknod", kCwd, a[0], asUint(a[1]), a[2], S_IFREG);
    case SYS_mknodat: return create("mknodat", asInt(a[0]), a[1], asUint(a[2]), a[3], S_IFREG);
    case SYS_unlink: return pathCall(CallKind::Remove, "unlink", kCwd, a[0]);
    case SYS_unlinkat: return pathCall(CallKind::Remove, "unlinkat", asInt(a[0]), a[1], asInt(a[2]));
    case SYS_rmdir: return pathCall(CallKind::Remove, "rmdir", kCwd, a[0], AT_REMOVEDIR);
    case SYS_rename: return twoPaths(CallKind::Rename, "rename", kCwd, a[0], kCwd, a[1], 0);
    case SYS_renameat:
      return twoPaths(CallKind::Rename, "renameat", asInt(a[0]), a[1], asInt(a[2]), a[3], 0);
    case SYS_renameat2:
      return twoPaths(CallKind::Rename, "renameat2", asInt(a[0]), a[1], asInt(a[2]), a[3],
                      asInt(a[4]));
    case SYS_link: return twoPaths(CallKind::Link, "link", kCwd, a[0], kCwd, a[1], 0);
    case SYS_linkat:
      return twoPaths(CallKind::Link, "linkat", asInt(a[0]), a[1], asInt(a[2]), a[3], asInt(a[4]));
    case SYS_symlink: return twoPaths(CallKind::Symlink, "symlink", kCwd, a[0], kCwd, a[1], 0);
    case SYS_symlinkat:
      return twoPaths(CallKind::Symlink, "symlinkat", kCwd, a[0], asInt(a[1]), a[2], 0);
    case SYS_truncate: {
      DecodedCall d = pathCall(CallKind::Truncate, "truncate", kCwd, a[0]);
      d.length = static_cast<off_t>(a[1]);
      return d;
    }
    case SYS_chmod: return chmod("chmod", kCwd, a[0], asUint(a[1]), 0);
    case SYS_fchmodat: return chmod("fchmodat", asInt(a[0]), a[1], asUint(a[2]), 0);
    case kSysFchmodat2: return chmod("fchmodat2", asInt(a[0]), a[1], asUint(a[2]), asInt(a[3]));
    case SYS_fchmod: return chmod("fchmod", asInt(a[0]), 0, asUint(a[1]), 0);
    case SYS_chown: return chown("chown", kCwd, a[0], a[1], a[2], 0);
    case SYS_lchown: return chown("lchown", kCwd, a[0], a[1], a[2], AT_SYMLINK_NOFOLLOW);
    case SYS_fchownat: return chown("fchownat", asInt(a[0]), a[1], a[2], a[3], asInt(a[4]));
    case SYS_fchown: return chown("fchown", asInt(a[0]), 0, a[1], a[2], 0);
    case SYS_utime: return utimes("utime", kCwd, a[0], a[1], 0, 0);
    case SYS_utimes: return utimes("utimes", kCwd, a[0], a[1], 1, 0);
    case SYS_futimesat: return utimes("futimesat", asInt(a[0]), a[1], a[2], 1, 0);
    case SYS_utimensat: return utimes("utimensat", asInt(a[0]), a[1], a[2], 2, asInt(a[3]));
    case SYS_setxattr:
      return xattr("setxattr", kCwd, a[0], a[1], a[2], a[3], asInt(a[4]), true, false);
    case SYS_lsetxattr:
      return xattr("lsetxattr", kCwd, a[0], a[1], a[2], a[3], asInt(a[4]), false, false);
    case SYS_fsetxattr:
      return xattr("fsetxattr", asInt(a[0]), 0, a[1], a[2], a[3], asInt(a[4]), true, false);
    case SYS_removexattr: return xattr("removexattr", kCwd, a[0], a[1], 0, 0, 0, true, true);
    case SYS_lremovexattr: return xattr("lremovexattr", kCwd, a[0], a[1], 0, 0, 0, false, true);
    case SYS_fremovexattr:
      return xattr("fremovexattr", asInt(a[0]), 0, a[1], 0, 0, 0, true, true);
    case SYS_execve: return exec("execve", kCwd, a[0], a[1], 0);
    case SYS_execveat: return exec("execveat", asInt(a[0]), a[1], a[2], asInt(a[4]));
    case SYS_socket:
    case SYS_socketpair: {
      DecodedCall d = make(CallKind::Socket, data.nr == SYS_socket ? "socket" : "socketpair");
      d.family = asInt(a[0]);
      d.sock_type = asInt(a[1]);
      d.protocol = asInt(a[2]);
      return d;
    }
    case SYS_umask: {
      DecodedCall d = make(CallKind::Umask, "umask");
      d.mode = asUint(a[0]);
      return d;
    }
    default: return {};
  }
}

}  // namespace sv::supervisor
