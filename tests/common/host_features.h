// missingSessionFeature(): why this host cannot run a supervised session in a
// test, or "" when it can (missingCgroup2(): the cgroup2 part of it). Tests
// that run the real binary skip with this text (GTEST_SKIP) so a skip always
// names the missing piece.
#pragma once

#include <linux/landlock.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <string_view>

#include "tests/common/run_command.h"

namespace sv::test {

// Why a session could find no cgroup2 here, or "": one is mounted, or the
// kernel has one for supervise to mount where none is (tracer/cgroup.h,
// cgroup2Mount(): the same mountinfo lookup, without mounting anything).
inline std::string missingCgroup2() {
  if (slurp("/proc/self/mountinfo").find(" - cgroup2 ") != std::string::npos) return "";
  if (slurp("/proc/filesystems").find("\tcgroup2\n") != std::string::npos) return "";
  return "needs cgroup v2: no cgroup2 mount in /proc/self/mountinfo, none in /proc/filesystems";
}

// The kernel's Landlock ABI, or 0 where it has none (not built, or not in lsm=).
inline long landlockAbi() {
  const long abi =
      ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi > 0 ? abi : 0;
}

// Whether sessions run without Landlock: the kernel has none, or the test
// turned it off (the /mountns variants: SUPERVISE_TEST_DISABLE=landlock);
// the floor is then a private mount namespace (docs/enforcement.md).
inline bool withoutLandlock() {
  const char* disabled = std::getenv("SUPERVISE_TEST_DISABLE");
  return landlockAbi() == 0 ||
         (disabled && std::string_view(disabled).find("landlock") != std::string_view::npos);
}

// Who answers the seccomp filter's stops, as events name it in enforced_by:
// the tracer under the /ptrace variants (SUPERVISE_BACKEND=ptrace), else
// user-notify.
inline std::string seccompStopDecider() {
  const char* backend = std::getenv("SUPERVISE_BACKEND");
  return backend && std::string_view(backend) == "ptrace" ? "ptrace" : "seccomp";
}

// min_landlock_abi 0: the suite runs without Landlock too (as root the
// session's floor is then a private mount namespace, docs/enforcement.md).
inline std::string missingSessionFeature(const std::string& supervise, long min_landlock_abi = 1) {
  if (::geteuid() != 0) return "needs root: euid " + std::to_string(::geteuid());
  const long abi = landlockAbi();
  if (abi < min_landlock_abi)
    return "needs Landlock ABI >= " + std::to_string(min_landlock_abi) + ": got " +
           std::to_string(abi);
  if (std::string why = missingCgroup2(); !why.empty()) return why;
  if (slurp("/proc/sys/kernel/seccomp/actions_avail").find("user_notif") == std::string::npos)
    return "needs seccomp user-notify: not in actions_avail";
  if (::access(supervise.c_str(), X_OK) != 0) return "needs " + supervise;
  return "";
}

// Whether `int 0x80` runs i386 system calls on this host at all, tried in a
// child without any filter. Where it does not (IA32 emulation off, e.g.
// ia32_emulation=0, or a paravirtualised guest that does not deliver the
// gate: the PVM guests of this project's CI) the instruction raises SIGSEGV
// before any syscall entry, so there is nothing for seccomp to stop.
inline bool int80RunsSyscalls() {
  const pid_t pid = ::fork();
  if (pid == 0) {
    long ret = 20;  // i386 getpid
    asm volatile("int $0x80" : "+a"(ret) : : "memory");
    ::_exit(ret == ::getpid() ? 0 : 1);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace sv::test
