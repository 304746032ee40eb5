// libseccomp → raw BPF export (parent) and raw installation (child).
#include "tracer/seccomp/seccomp_filter.h"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <memory>
#include <string>

#include "common/unique_fd.h"
#include "common/kernel_abi.h"

namespace sv::tracer {
namespace {

struct CtxDeleter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};
using SeccompCtx = std::unique_ptr<void, CtxDeleter>;

struct Sys {
  const char* name;
  int nr;  // x86_64 number: we only ever filter the native ABI
};

// Syscalls a sandboxed tree never needs. EPERM is what a container runtime
// returns for them too, so tools already handle it.
constexpr Sys kDenied[] = {
    {"io_uring_setup", __NR_io_uring_setup},
    {"io_uring_enter", __NR_io_uring_enter},
    {"io_uring_register", __NR_io_uring_register},
    {"bpf", __NR_bpf},
    {"perf_event_open", __NR_perf_event_open},
    {"kexec_load", __NR_kexec_load},
    {"kexec_file_load", __NR_kexec_file_load},
    {"init_module", __NR_init_module},
    {"finit_module", __NR_finit_module},
    {"delete_module", __NR_delete_module},
    {"mount", __NR_mount},
    {"umount2", __NR_umount2},
    {"pivot_root", __NR_pivot_root},
    {"move_mount", __NR_move_mount},
    {"open_tree", __NR_open_tree},
    {"fsopen", __NR_fsopen},
    {"fsconfig", __NR_fsconfig},
    {"fsmount", __NR_fsmount},
    {"fspick", __NR_fspick},
    {"mount_setattr", __NR_mount_setattr},
    {"ptrace", __NR_ptrace},
    {"process_vm_writev", __NR_process_vm_writev},
    {"keyctl", __NR_keyctl},
    {"add_key", __NR_add_key},
    {"request_key", __NR_request_key},
    {"name_to_handle_at", __NR_name_to_handle_at},
    {"open_by_handle_at", __NR_open_by_handle_at},
    {"userfaultfd", __NR_userfaultfd},
    {"setns", __NR_setns},
    {"swapon", __NR_swapon},
    {"swapoff", __NR_swapoff},
    {"reboot", __NR_reboot},
    {"settimeofday", __NR_settimeofday},
    {"clock_settime", __NR_clock_settime},
    {"clock_adjtime", __NR_clock_adjtime},
    // adjtimex stays allowed: read-only use (modes == 0) is common and the
    // modes field lives in memory the filter cannot read. Setting the clock
    // needs CAP_SYS_TIME, which the tree does not keep.
    {"sethostname", __NR_sethostname},
    {"setdomainname", __NR_setdomainname},
    {"acct", __NR_acct},
    {"quotactl", __NR_quotactl},
    {"quotactl_fd", __NR_quotactl_fd},
    {"lookup_dcookie", __NR_lookup_dcookie},
    {"iopl", __NR_iopl},
    {"ioperm", __NR_ioperm},
    {"syslog", __NR_syslog},
    {"vhangup", __NR_vhangup},
    {"nfsservctl", __NR_nfsservctl},
    {"uselib", __NR_uselib},
};

// Path-mutating syscalls the supervisor decides (plan.notify_write_opens).
constexpr Sys kNotifyMutating[] = {
    {"creat", __NR_creat},
    {"openat2", __NR_openat2},  // flags live in struct open_how: always notify
    {"symlink", __NR_symlink},
    {"symlinkat", __NR_symlinkat},
    {"unlink", __NR_unlink},
    {"unlinkat", __NR_unlinkat},
    {"mkdir", __NR_mkdir},
    {"mkdirat", __NR_mkdirat},
    {"mknod", __NR_mknod},
    {"mknodat", __NR_mknodat},
    {"rmdir", __NR_rmdir},
    {"truncate", __NR_truncate},
    {"chmod", __NR_chmod},
    {"fchmodat", __NR_fchmodat},
    {"fchmodat2", abi::kNrFchmodat2},  // libseccomp 2.5.4 does not know it
    {"chown", __NR_chown},
    {"lchown", __NR_lchown},
    {"fchownat", __NR_fchownat},
    // The fd forms too: a read-only fd of a protected file must not change
    // its mode, owner or xattrs (Landlock has no right covering them).
    {"fchmod", __NR_fchmod},
    {"fchown", __NR_fchown},
};

// Watched, not decided: the handler records the tree's umasks (notifiesUmask).
// A rare call (tar x, install); each costs one notification.
constexpr Sys kUmask{"umask", __NR_umask};

// Renames, hard links and attribute changes, also notified alone
// (plan.notify_links_renames_and_attrs) when a BPF LSM decides the rest. A
// rename of a directory renames every path below it, and path_rename judges
// only the two names (BPF cannot walk the tree), so the notify handler
// judges the moved tree under both names (NotifyHandler::handleRename). The
// LSM hooks of the others see a dentry without its path (the source of a
// link; the file of utimes and xattr calls), so they cannot match path rules.
constexpr Sys kNotifyRenamesLinksAndAttrs[] = {
    {"rename", __NR_rename},
    {"renameat", __NR_renameat},
    {"renameat2", __NR_renameat2},
    {"link", __NR_link},
    {"linkat", __NR_linkat},
    {"utime", __NR_utime},
    {"utimes", __NR_utimes},
    {"futimesat", __NR_futimesat},
    {"utimensat", __NR_utimensat},
    {"fsetxattr", __NR_fsetxattr},
    {"fremovexattr", __NR_fremovexattr},
    {"setxattr", __NR_setxattr},
    {"lsetxattr", __NR_lsetxattr},
    {"removexattr", __NR_removexattr},
    {"lremovexattr", __NR_lremovexattr},
};

Status addRule(scmp_filter_ctx ctx, uint32_t action, const Sys& sys, unsigned count = 0,
               const scmp_arg_cmp* args = nullptr) {
  int rc = seccomp_rule_add_array(ctx, action, sys.nr, count, args);
  if (rc < 0) return Error{-rc, std::string("seccomp_rule_add ") + sys.name};
  return {};
}

// O_PATH opens stay in the kernel on every plan: an O_PATH fd reads and
// writes nothing (the kernel drops every other flag, O_CREAT and O_TRUNC
// included), and each use of it that could (a reopen through
// /proc/self/fd, openat below it, execveat) is a call of its own, judged by
// the path it reaches. The LSM file_open hook and Landlock skip O_PATH for
// the same reason, so every backend agrees; and user-notify could not answer
// one anyway (ADDFD does not take O_PATH files). O_TMPFILE beside O_PATH
// still creates a file, so it is notified. Flags are a register: the kernel
// acts on exactly what the filter saw.
constexpr uint32_t kOPath = O_PATH;
// The kernel's __O_TMPFILE bit alone (glibc's O_TMPFILE adds O_DIRECTORY).
constexpr uint32_t kTmpfileBit = O_TMPFILE & ~uint32_t{O_DIRECTORY};

// open(path, flags) / openat(dfd, path, flags) that are not O_PATH handles.
// 32-bit compares: flags is an int and the upper register half is not defined.
Status addNonHandleOpen(scmp_filter_ctx ctx, const Sys& sys, unsigned flags_arg) {
  scmp_arg_cmp no_opath = SCMP_CMP32(flags_arg, SCMP_CMP_MASKED_EQ, kOPath, 0);
  SV_TRY(addRule(ctx, SCMP_ACT_NOTIFY, sys, 1, &no_opath));
  scmp_arg_cmp tmpfile = SCMP_CMP32(flags_arg, SCMP_CMP_MASKED_EQ, kTmpfileBit, kTmpfileBit);
  return addRule(ctx, SCMP_ACT_NOTIFY, sys, 1, &tmpfile);
}

// ... of those, the ones whose flags carry write intent (O_TMPFILE always
// includes O_WRONLY or O_RDWR). One masked compare per rule: "bit set and
// O_PATH clear" is (flags & (bit | O_PATH)) == bit.
Status addWriteIntentOpen(scmp_filter_ctx ctx, const Sys& sys, unsigned flags_arg) {
  for (uint32_t bit :
       {uint32_t{O_WRONLY}, uint32_t{O_RDWR}, uint32_t{O_CREAT}, uint32_t{O_TRUNC}}) {
    scmp_arg_cmp cmp = SCMP_CMP32(flags_arg, SCMP_CMP_MASKED_EQ, bit | kOPath, bit);
    SV_TRY(addRule(ctx, SCMP_ACT_NOTIFY, sys, 1, &cmp));
  }
  scmp_arg_cmp tmpfile = SCMP_CMP32(flags_arg, SCMP_CMP_MASKED_EQ, kTmpfileBit, kTmpfileBit);
  return addRule(ctx, SCMP_ACT_NOTIFY, sys, 1, &tmpfile);
}

// socket(family, type, protocol) / socketpair(family, ...): notify every
// family outside policy::kAllowedSocketFamilies, and AF_NETLINK with a
// protocol outside kAllowedNetlinkProtocols. The arguments are registers, so
// the handler decides on exactly what the kernel will use. libseccomp allows
// one comparison per argument and rule: the refused families are covered by
// aligned power-of-two blocks (MASKED_EQ) below 64 and one GE 64 for the
// rest (a negative int is >= 64 as an unsigned 32-bit value).
Status addSocketFamilyRules(scmp_filter_ctx ctx, const Sys& sys, bool netlink_protocol) {
  constexpr uint32_t kLimit = 64;
  auto allowed = [](uint32_t f) {
    for (int a : policy::kAllowedSocketFamilies)
      if (static_cast<uint32_t>(a) == f) return true;
    return false;
  };
  uint32_t f = 0;
  while (f < kLimit) {
    if (allowed(f)) {
      ++f;
      continue;
    }
    // The largest aligned block from f that holds no allowed family.
    uint32_t size = 1;
    while (f % (size * 2) == 0 && f + size * 2 <= kLimit) {
      bool clean = true;
      for (uint32_t g = f; g < f + size * 2; ++g) clean = clean && !allowed(g);
      if (!clean) break;
      size *= 2;
    }
    scmp_arg_cmp cmp = SCMP_CMP32(0, SCMP_CMP_MASKED_EQ, ~(size - 1), f);
    SV_TRY(addRule(ctx, SCMP_ACT_NOTIFY, sys, 1, &cmp));
    f += size;
  }
  scmp_arg_cmp rest = SCMP_CMP32(0, SCMP_CMP_GE, kLimit);
  SV_TRY(addRule(ctx, SCMP_ACT_NOTIFY, sys, 1, &rest));
  if (netlink_protocol) {
    static_assert(std::size(policy::kAllowedNetlinkProtocols) == 1);
    scmp_arg_cmp nl[] = {
        SCMP_CMP32(0, SCMP_CMP_EQ, policy::kFamilyNetlink),
        SCMP_CMP32(2, SCMP_CMP_NE, static_cast<uint32_t>(policy::kAllowedNetlinkProtocols[0]))};
    SV_TRY(addRule(ctx, SCMP_ACT_NOTIFY, sys, 2, nl));
  }
  return {};
}

Result<std::vector<sock_filter>> exportBpf(scmp_filter_ctx ctx) {
  UniqueFd mem(static_cast<int>(syscall(SYS_memfd_create, "sv-seccomp", MFD_CLOEXEC)));
  if (!mem) return errnoError("memfd_create");
  int rc = seccomp_export_bpf(ctx, mem.get());
  if (rc < 0) return Error{-rc, "seccomp_export_bpf"};
  struct stat st {};
  if (fstat(mem.get(), &st) != 0) return errnoError("fstat seccomp memfd");
  if (st.st_size <= 0 || st.st_size % sizeof(sock_filter) != 0) {
    return Error{EINVAL, "seccomp_export_bpf: unexpected program size"};
  }
  std::vector<sock_filter> prog(st.st_size / sizeof(sock_filter));
  size_t want = prog.size() * sizeof(sock_filter);
  size_t got = 0;
  auto* bytes = reinterpret_cast<char*>(prog.data());
  while (got < want) {
    ssize_t n = pread(mem.get(), bytes + got, want - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return errnoError("read seccomp memfd");
    got += static_cast<size_t>(n);
  }
  return prog;
}

// Prepends our own arch/x32 check to libseccomp's program. libseccomp 2.5.4
// already does both (pinned by the integration tests), but the guarantee must
// not depend on a library version: a foreign ABI bypasses every per-number
// rule. Prepending cannot disturb the program's jumps (they are relative).
std::vector<sock_filter> withArchGuard(std::vector<sock_filter> prog) {
  constexpr uint32_t kX32SyscallBit = 0x40000000;
  const sock_filter guard[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 2),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, kX32SyscallBit, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
  };
  prog.insert(prog.begin(), std::begin(guard), std::end(guard));
  return prog;
}

}  // namespace

std::vector<int> notifiedSyscalls(const policy::SeccompPlan& plan) {
  std::vector<int> nrs;
  auto add = [&nrs](std::initializer_list<Sys> list) {
    for (const Sys& sys : list) nrs.push_back(sys.nr);
  };
  if (plan.notify_read_opens || plan.notify_write_opens)
    add({{"open", __NR_open}, {"openat", __NR_openat}, {"openat2", __NR_openat2}});
  if (plan.notify_write_opens)
    for (const Sys& sys : kNotifyMutating) nrs.push_back(sys.nr);
  if (notifiesUmask(plan)) nrs.push_back(kUmask.nr);
  if (plan.notify_write_opens || plan.notify_links_renames_and_attrs)
    for (const Sys& sys : kNotifyRenamesLinksAndAttrs) nrs.push_back(sys.nr);
  if (plan.notify_exec) add({{"execve", __NR_execve}, {"execveat", __NR_execveat}});
  if (plan.notify_socket_families)
    add({{"socket", __NR_socket}, {"socketpair", __NR_socketpair}});
  std::sort(nrs.begin(), nrs.end());
  nrs.erase(std::unique(nrs.begin(), nrs.end()), nrs.end());
  return nrs;
}

// A context with the native ABI only (others are killed) and the syscalls
// every plan refuses: the common head of both filters.
Result<SeccompCtx> refusalContext(const policy::SeccompPlan& plan) {
  SeccompCtx ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return Error{ENOMEM, "seccomp_init"};
  scmp_filter_ctx c = ctx.get();

  // seccomp_init() adds only the native arch; anything else (i386 via int
  // 0x80) hits the bad-arch action. libseccomp also sends x32 numbers
  // (nr >= 0x40000000) under AUDIT_ARCH_X86_64 to the bad-arch action when the
  // x32 arch is not in the filter (verified by SeccompFilterTest.
  // LibseccompAloneKillsX32); withArchGuard() repeats both checks regardless.
  int rc = seccomp_attr_set(c, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  if (rc < 0) return Error{-rc, "seccomp_attr_set ACT_BADARCH"};

  // Binary-tree syscall dispatch: every syscall of the tree (read, write,
  // futex...) walks this filter, and a linear chain of ~90 entries costs ~90
  // comparisons for the common ALLOW case. Best effort: older libseccomp lacks it.
  (void)seccomp_attr_set(c, SCMP_FLTATR_CTL_OPTIMIZE, 2);

  for (const Sys& sys : kDenied) SV_TRY(addRule(c, SCMP_ACT_ERRNO(EPERM), sys));

  if (!plan.allow_user_namespaces) {
    scmp_arg_cmp newuser = SCMP_A0_64(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER);
    SV_TRY(addRule(c, SCMP_ACT_ERRNO(EPERM), Sys{"unshare", __NR_unshare}, 1, &newuser));
    SV_TRY(addRule(c, SCMP_ACT_ERRNO(EPERM), Sys{"clone", __NR_clone}, 1, &newuser));
  }

  // personality(): only PER_LINUX (0) and the query value 0xffffffff. Other
  // personas (READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE, ...) weaken the process.
  // libseccomp 2.5 allows one comparison per argument and rule, so "x != 0 &&
  // x != ~0" is written as a union: any value other than all-zeros/all-ones
  // has some bit i that is 0 while bit i+1 (cyclically) is 1.
  for (unsigned i = 0; i < 32; ++i) {
    uint32_t lo = 1U << i, hi = 1U << ((i + 1) % 32);
    scmp_arg_cmp cmp = SCMP_A0_32(SCMP_CMP_MASKED_EQ, lo | hi, hi);
    SV_TRY(addRule(c, SCMP_ACT_ERRNO(EPERM), Sys{"personality", __NR_personality}, 1, &cmp));
  }

  return ctx;
}

Result<std::vector<sock_filter>> buildSeccompFilter(const policy::SeccompPlan& plan) {
  auto ctx = refusalContext(plan);
  if (!ctx) return ctx.error();
  scmp_filter_ctx c = ctx->get();
  // ENOSYS, not EPERM: glibc (and others) fall back to clone() on ENOSYS, whose
  // flags are a register the filter can inspect.
  SV_TRY(addRule(c, SCMP_ACT_ERRNO(ENOSYS), Sys{"clone3", __NR_clone3}));

  const Sys kOpen{"open", __NR_open};
  const Sys kOpenat{"openat", __NR_openat};
  if (plan.notify_read_opens) {
    SV_TRY(addNonHandleOpen(c, kOpen, 1));
    SV_TRY(addNonHandleOpen(c, kOpenat, 2));
  } else if (plan.notify_write_opens) {
    SV_TRY(addWriteIntentOpen(c, kOpen, 1));
    SV_TRY(addWriteIntentOpen(c, kOpenat, 2));
  }
  if (plan.notify_write_opens) {
    for (const Sys& sys : kNotifyMutating) SV_TRY(addRule(c, SCMP_ACT_NOTIFY, sys));
  } else if (plan.notify_read_opens) {
    SV_TRY(addRule(c, SCMP_ACT_NOTIFY, Sys{"openat2", __NR_openat2}));
  }
  if (plan.notify_write_opens || plan.notify_links_renames_and_attrs) {
    for (const Sys& sys : kNotifyRenamesLinksAndAttrs) SV_TRY(addRule(c, SCMP_ACT_NOTIFY, sys));
  }
  if (notifiesUmask(plan)) SV_TRY(addRule(c, SCMP_ACT_NOTIFY, kUmask));
  if (plan.notify_exec) {
    SV_TRY(addRule(c, SCMP_ACT_NOTIFY, Sys{"execve", __NR_execve}));
    SV_TRY(addRule(c, SCMP_ACT_NOTIFY, Sys{"execveat", __NR_execveat}));
  }
  if (plan.notify_socket_families) {
    SV_TRY(addSocketFamilyRules(c, Sys{"socket", __NR_socket}, true));
    // socketpair(AF_NETLINK) fails in the kernel (EOPNOTSUPP) for every protocol.
    SV_TRY(addSocketFamilyRules(c, Sys{"socketpair", __NR_socketpair}, false));
  }
  auto prog = exportBpf(c);
  if (!prog) return prog.error();
  return withArchGuard(std::move(*prog));
}

Result<std::vector<sock_filter>> buildRefusalLogFilter(const policy::SeccompPlan& plan) {
  auto ctx = refusalContext(plan);
  if (!ctx) return ctx.error();
  auto prog = exportBpf(ctx->get());
  if (!prog) return prog.error();
  return withArchGuard(std::move(*prog));
}

int installSeccompLogFilter(const std::vector<sock_filter>& prog) {
  if (prog.empty() || prog.size() > BPF_MAXINSNS) return -EINVAL;
  sock_fprog fprog{};
  fprog.len = static_cast<unsigned short>(prog.size());
  fprog.filter = const_cast<sock_filter*>(prog.data());
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_LOG, &fprog) != 0)
    return -errno;
  return 0;
}

int installSeccompFilter(const std::vector<sock_filter>& prog) {
  if (prog.empty() || prog.size() > BPF_MAXINSNS) return -EINVAL;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -errno;
  sock_fprog fprog{};
  fprog.len = static_cast<unsigned short>(prog.size());
  fprog.filter = const_cast<sock_filter*>(prog.data());
  long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &fprog);
  if (fd < 0) return -errno;
  return static_cast<int>(fd);
}

}  // namespace sv::tracer
