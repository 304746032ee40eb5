// Real-attempt feature probes.
#include "tracer/probe.h"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "common/unique_fd.h"
#include "tracer/cgroup.h"
#include "tracer/kernel_abi.h"
#include "tracer/landlock.h"
#include "tracer/notify.h"

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

void probeCgroup(HostFeatures& f) {
  if (testDisabled("cgroup")) {
    f.notes.push_back(std::string("cgroup: ") + kDisabledByTest);
    return;
  }
  auto mount = findCgroup2Mount();
  if (!mount) {
    f.notes.push_back("cgroup: " + mount.error().message());
    return;
  }
  f.cgroup2_mount = *mount;
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
  probeLandlock(f);
  if (testDisabled("cgroup")) {
    f.notes.push_back(std::string("cgroup: ") + kDisabledByTest);
  } else if (auto mount = findCgroup2Mount(); !mount) {
    f.notes.push_back("cgroup: " + mount.error().message());
  } else {
    f.cgroup2_mount = *mount;
    f.cgroup_writable = true;  // proven (or not) by creating the session's cgroup
  }
  if (testDisabled("bpf")) f.notes.push_back(std::string("bpf: ") + kDisabledByTest);
  return f;
}

HostFeatures probeHost() {
  HostFeatures f;
  probeSeccomp(f);
  probeLandlock(f);
  probeCgroup(f);
  if (testDisabled("bpf")) f.notes.push_back(std::string("bpf: ") + kDisabledByTest);
  return f;
}

}  // namespace sv::tracer
