// decodeCall(): what a user-notify request asks for, from its raw registers.
//
// The seccomp filter sends the supervisor a syscall number and six untyped
// 64-bit arguments. This pure table says which operation that is and which
// argument is the directory fd, the path pointer, the flags..., with the
// kernel's own truncations (an `int` fd or flags argument is the low 32 bits
// of its register; the upper half is undefined). It reads no target memory:
// the pointers stay pointers, read later by the handler. Fuzzed with
// synthetic requests (tests/fuzz/notify_fuzz.cpp).
#pragma once

#include <fcntl.h>
#include <linux/seccomp.h>
#include <sys/types.h>

#include <cstdint>

namespace sv::supervisor {

enum class CallKind : uint8_t {
  Unsupported,  // not a syscall the handler emulates: answered ENOSYS
  Open,         // open, openat, creat
  Openat2,      // openat2: the flags live in struct open_how at `arg`
  Create,       // mkdir*, mknod*
  Remove,       // unlink*, rmdir
  Rename,       // rename*
  Link,         // link*
  Symlink,      // symlink*: `path` is the link's target text
  Truncate,
  Chmod,        // chmod, fchmodat*, fchmod (path 0: the fd itself)
  Chown,        // chown, lchown, fchownat, fchown (path 0: the fd itself)
  Utimes,       // utime, utimes, futimesat, utimensat
  Xattr,        // [lf]setxattr, [lf]removexattr
  Exec,         // execve, execveat
  Socket,       // socket, socketpair: family, type, protocol (registers only)
  Umask,        // umask: watched, not decided; the new mask in `mode`
};

struct DecodedCall {
  CallKind kind = CallKind::Unsupported;
  const char* name = "";  // for the audit event; "" when unsupported
  int dirfd = AT_FDCWD;   // the directory `path` is relative to, or the fd of an f*() call
  uint64_t path = 0;      // user address of the path; 0 for the fd forms
  int dirfd2 = AT_FDCWD;  // rename, link, symlink: the new name
  uint64_t path2 = 0;
  int flags = 0;      // open flags, AT_* flags, RENAME_* flags, xattr flags
  unsigned mode = 0;  // open/creat/mkdir/mknod/chmod mode
  int file_type = 0;  // Create: S_IFDIR or S_IFREG (mknod's own type is in `mode`)
  uint64_t dev = 0;   // Create: mknod's device
  off_t length = 0;   // Truncate
  uid_t uid = 0;      // Chown
  gid_t gid = 0;
  uint64_t times = 0;  // Utimes: user address of the times (0: now)
  int times_kind = 0;  // Utimes: 0 utimbuf, 1 timeval[2], 2 timespec[2]
  uint64_t arg = 0;    // Openat2: struct open_how; Exec: argv; Xattr: the name
  uint64_t value = 0;  // Xattr: the value
  size_t size = 0;     // Openat2: sizeof the how; Xattr: the value's size
  bool follow = true;  // Xattr: false for the l*() forms
  bool remove = false;  // Xattr: *removexattr
  int family = 0;       // Socket
  int sock_type = 0;    // Socket: with SOCK_NONBLOCK/SOCK_CLOEXEC as passed
  int protocol = 0;     // Socket
};

DecodedCall decodeCall(const seccomp_data& data);

}  // namespace sv::supervisor
