// Real-attempt feature probes.
#include "tracer/probe.h"

#include <fcntl.h>
#include <sched.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "common/read_file.h"
#include "common/unique_fd.h"
#include "tracer/cgroup.h"
#include "common/kernel_abi.h"
#include "tracer/landlock.h"
#include "tracer/seccomp/notify.h"

namespace sv::tracer {
namespace {

// Result bits the probe child reports through a pipe.
constexpr uint8_t kNotifyOk = 1 << 0;
constexpr uint8_t kAddFdOk = 1 << 1;
constexpr uint8_t kSyncWakeOk = 1 << 2;

// A syscall number nothing uses, so the probe filter never fires.
constexpr uint32_t kProbeNr = 1023;

struct ProbeReport {
  uint8_t bits = 0;
  int32_t install_errno = 0;
};

// Child side: only raw syscalls (we may have been forked from a threaded parent).
[[noreturn]] void seccompProbeChild(int out_fd) {
  ProbeReport report;
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kProbeNr, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(std::size(filter)), filter};
  long fd = -1;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    report.install_errno = errno;
  } else {
    fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    if (fd < 0) report.install_errno = errno;
  }
  if (fd >= 0) {
    report.bits |= kNotifyOk;
    if (notifyAddFdSendSupported(static_cast<int>(fd))) report.bits |= kAddFdOk;
    if (ioctl(static_cast<int>(fd), abi::kSeccompIoctlNotifSetFlags,
              abi::kSeccompUserNotifFdSyncWakeUp) == 0) {
      report.bits |= kSyncWakeOk;
    }
  }
  ssize_t n = write(out_fd, &report, sizeof(report));
  _exit(n == sizeof(report) ? 0 : 1);
}

void probeSeccomp(HostFeatures& f) {
  if (testDisabled("seccomp-notify")) {
    f.notes.push_back(std::string("seccomp-notify: ") + kDisabledByTest);
    return;
  }
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    f.notes.push_back(std::string("seccomp-notify: probe pipe failed: ") + std::strerror(errno));
    return;
  }
  UniqueFd rd(pipefd[0]), wr(pipefd[1]);
  pid_t pid = fork();
  if (pid < 0) {
    f.notes.push_back(std::string("seccomp-notify: probe fork failed: ") + std::strerror(errno));
    return;
  }
  if (pid == 0) seccompProbeChild(wr.get());
  wr.reset();
  ProbeReport report;
  ssize_t n;
  do {
    n = read(rd.get(), &report, sizeof(report));
  } while (n < 0 && errno == EINTR);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (n != sizeof(report)) {
    f.notes.push_back("seccomp-notify: probe child died without reporting");
    return;
  }
  f.seccomp_notify = report.bits & kNotifyOk;
  f.notify_addfd = report.bits & kAddFdOk;
  f.notify_sync_wakeup = report.bits & kSyncWakeOk;
  if (!f.seccomp_notify) {
    f.notes.push_back(std::string("seccomp-notify: filter with NEW_LISTENER failed: ") +
                      std::strerror(report.install_errno));
  } else {
    if (!f.notify_addfd) f.notes.push_back("seccomp-notify: ADDFD with SEND unsupported");
    if (!f.notify_sync_wakeup) f.notes.push_back("seccomp-notify: SYNC_WAKE_UP unsupported");
  }
}

void probeLandlock(HostFeatures& f) {
  if (testDisabled("landlock")) {
    f.notes.push_back(std::string("landlock: ") + kDisabledByTest);
    return;
  }
  f.landlock_abi = landlockAbi();
  if (f.landlock_abi == 0) {
    f.notes.push_back("landlock: unavailable (landlock_create_ruleset VERSION failed)");
    return;
  }
  // A version answer is not a working ruleset: build and discard an empty one.
  policy::LandlockPlan empty;
  auto rs = buildLandlockRuleset(empty, f.landlock_abi);
  if (!rs) {
    f.notes.push_back("landlock: ABI " + std::to_string(f.landlock_abi) +
                      " reported but ruleset creation failed: " + rs.error().message());
    f.landlock_abi = 0;
  }
}

// The cgroup2 mount (mounted by supervise where none was); false with a note
// when there is none.
bool findCgroup2(HostFeatures& f) {
  if (testDisabled("cgroup")) {
    f.notes.push_back(std::string("cgroup: ") + kDisabledByTest);
    return false;
  }
  auto mount = cgroup2Mount();
  if (!mount) {
    f.notes.push_back("cgroup: " + mount.error().message());
    return false;
  }
  f.cgroup2_mount = mount->mount_point;
  f.cgroup2_by_supervise = mount->by_supervise;
  return true;
}

void probeCgroup(HostFeatures& f) {
  if (!findCgroup2(f)) return;
  auto cg = SessionCgroup::create("sv-probe-" + std::to_string(getpid()));
  if (!cg) {
    f.notes.push_back("cgroup: cannot create a session cgroup: " + cg.error().message());
    return;
  }
  f.cgroup_writable = true;
  // kill() on the empty cgroup writes cgroup.kill; its fallback would hide a
  // missing file, so test the file itself.
  UniqueFd kill_fd(open((cg->path() + "/cgroup.kill").c_str(), O_WRONLY | O_CLOEXEC));
  if (kill_fd && write(kill_fd.get(), "1", 1) == 1) {
    f.cgroup_kill = true;
  } else {
    f.notes.push_back(std::string("cgroup: cgroup.kill unavailable (") + std::strerror(errno) +
                      "), falling back to SIGKILL of each pid");
  }
}

}  // namespace

bool testDisabled(std::string_view feature) {
  const char* env = std::getenv("SUPERVISE_TEST_DISABLE");
  if (!env) return false;
  std::string_view list(env);
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item == feature) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

namespace {

// The ptrace backend's needs: the RET_TRACE action, and ptrace not switched
// off (Yama's ptrace_scope 3); that PTRACE_SEIZE works is proven by the
// session itself (TraceThread::start).
void probeTrace(HostFeatures& f) {
  if (testDisabled("ptrace")) {
    f.notes.push_back(std::string("ptrace: ") + kDisabledByTest);
    return;
  }
  uint32_t action = SECCOMP_RET_TRACE;
  if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) != 0) {
    f.notes.push_back(std::string("ptrace: SECCOMP_RET_TRACE unavailable: ") + std::strerror(errno));
    return;
  }
  char scope[8] = {};
  if (readFilePrefix("/proc/sys/kernel/yama/ptrace_scope", scope, sizeof scope) > 0 &&
      scope[0] == '3') {
    f.notes.push_back("ptrace: disabled by Yama (kernel.yama.ptrace_scope = 3)");
    return;
  }
  f.seccomp_trace = true;
}

}  // namespace

HostFeatures probeHostForSession() {
  HostFeatures f;
  if (testDisabled("seccomp-notify")) {
    f.notes.push_back(std::string("seccomp-notify: ") + kDisabledByTest);
  } else {
    uint32_t action = SECCOMP_RET_USER_NOTIF;
    f.seccomp_notify = syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
    if (!f.seccomp_notify) {
      f.notes.push_back(std::string("seccomp-notify: SECCOMP_RET_USER_NOTIF unavailable: ") +
                        std::strerror(errno));
    }
    // Confirmed on the session's listener (notifyAddFdSendSupported) before
    // the command's first notified syscall is answered.
    f.notify_addfd = f.seccomp_notify;
  }
  probeTrace(f);
  probeLandlock(f);
  // cgroup_writable: proven (or not) by creating the session's cgroup.
  f.cgroup_writable = findCgroup2(f);
  if (testDisabled("bpf")) f.notes.push_back(std::string("bpf: ") + kDisabledByTest);
  return f;
}

HostFeatures probeHost() {
  HostFeatures f;
  probeSeccomp(f);
  probeTrace(f);
  probeLandlock(f);
  probeCgroup(f);
  if (testDisabled("bpf")) f.notes.push_back(std::string("bpf: ") + kDisabledByTest);
  return f;
}

// ---- doctor's host questions ----

namespace {

// Trailing newline and spaces removed (procfs and securityfs files).
std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

// "EPERM (Operation not permitted)": the errno name is what an operator greps
// for.
std::string errnoText(int err) {
  const char *name = ::strerrorname_np(err);
  return std::string(name ? name : std::to_string(err).c_str()) + " (" + std::strerror(err) + ")";
}

// securityfs is not mounted on every host. Mounting it on the host would
// change the operator's mount table, so a child mounts it in a private mount
// namespace, reads the file and reports through a pipe.
Result<std::string> readSecurityFile(const std::string &name) {
  const std::string path = "/sys/kernel/security/" + name;
  if (auto direct = readWholeFile(path)) return trimmed(std::move(*direct));
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return errnoError("pipe");
  UniqueFd rd(p[0]), wr(p[1]);
  pid_t pid = ::fork();
  if (pid < 0) return errnoError("fork");
  if (pid == 0) {
    // Raw syscalls only: the parent may have threads.
    int err = 0;
    char buf[4096];
    ssize_t n = 0;
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("securityfs", "/sys/kernel/security", "securityfs", 0, nullptr) != 0) {
      err = errno;
    } else {
      int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 || (n = ::read(fd, buf, sizeof buf)) < 0) {
        err = errno;
        n = 0;
      }
    }
    if (::write(wr.get(), &err, sizeof err) != sizeof err) _exit(1);
    if (n > 0 && ::write(wr.get(), buf, static_cast<size_t>(n)) != n) _exit(1);
    _exit(0);
  }
  wr.reset();
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(rd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (out.size() < sizeof(int)) return Error{0, "securityfs probe child died"};
  int err = 0;
  std::memcpy(&err, out.data(), sizeof err);
  if (err != 0) return Error{err, "read " + path + " (private securityfs mount)"};
  out.erase(0, sizeof err);
  return trimmed(std::move(out));
}

namespace {

// The LSM ids of include/uapi/linux/lsm.h.
const char *lsmName(uint64_t id) {
  switch (id) {
    case 100:
      return "capability";
    case 101:
      return "selinux";
    case 102:
      return "smack";
    case 103:
      return "tomoyo";
    case 104:
      return "apparmor";
    case 105:
      return "yama";
    case 106:
      return "loadpin";
    case 107:
      return "safesetid";
    case 108:
      return "lockdown";
    case 109:
      return "bpf";
    case 110:
      return "landlock";
    case 111:
      return "ima";
    case 112:
      return "evm";
    case 113:
      return "ipe";
    default:
      return nullptr;
  }
}

// Linux 6.8; new syscalls share one number on every architecture.
constexpr long kNrLsmListModules = 461;

}  // namespace

// Active LSMs: lsm_list_modules(2) where the kernel has it, else securityfs.
Result<std::vector<std::string>> activeLsms(std::string *how) {
  uint64_t ids[64];
  uint32_t size = sizeof ids;
  long n = ::syscall(kNrLsmListModules, ids, &size, 0);
  if (n >= 0) {
    *how = "lsm_list_modules(2)";
    std::vector<std::string> out;
    for (long i = 0; i < n; ++i) {
      const char *name = lsmName(ids[i]);
      out.push_back(name ? name : "lsm#" + std::to_string(ids[i]));
    }
    return out;
  }
  auto text = readSecurityFile("lsm");
  if (!text) return text.error();
  *how = "/sys/kernel/security/lsm";
  std::vector<std::string> out;
  std::stringstream ss(*text);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace sv::tracer
