// Capability dropping with raw syscalls (libcap is not async-signal-safe).
#include "tracer/capabilities.h"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>

namespace sv::tracer {
namespace {

// Index = capability number (include/uapi/linux/capability.h).
constexpr const char* kCapNames[] = {
    "chown",
    "dac_override",
    "dac_read_search",
    "fowner",
    "fsetid",
    "kill",
    "setgid",
    "setuid",
    "setpcap",
    "linux_immutable",
    "net_bind_service",
    "net_broadcast",
    "net_admin",
    "net_raw",
    "ipc_lock",
    "ipc_owner",
    "sys_module",
    "sys_rawio",
    "sys_chroot",
    "sys_ptrace",
    "sys_pacct",
    "sys_admin",
    "sys_boot",
    "sys_nice",
    "sys_resource",
    "sys_time",
    "sys_tty_config",
    "mknod",
    "lease",
    "audit_write",
    "audit_control",
    "setfcap",
    "mac_override",
    "mac_admin",
    "syslog",
    "wake_alarm",
    "block_suspend",
    "audit_read",
    "perfmon",
    "bpf",
    "checkpoint_restore",
};

}  // namespace

int dropCapabilities(uint64_t keep_mask) {
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    return -errno;
  }
  // Bounding set: PR_CAPBSET_DROP fails with EINVAL past the last capability
  // the kernel knows, which is our loop end (no /proc read in the child, and
  // one syscall per capability: each costs ~10 us on a PVM guest).
  bool have_setpcap = prctl(PR_CAPBSET_READ, CAP_SETPCAP, 0, 0, 0) == 1;
  for (int cap = 0; cap < 64; ++cap) {
    if (keep_mask & (uint64_t{1} << cap)) continue;
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
      if (errno == EINVAL) break;
      // EPERM without CAP_SETPCAP: an unprivileged process cannot gain caps
      // through exec anyway (no setuid under NO_NEW_PRIVS), so carry on.
      if (errno == EPERM && !have_setpcap) continue;
      return -errno;
    }
  }

  __user_cap_header_struct header{};
  header.version = _LINUX_CAPABILITY_VERSION_3;
  header.pid = 0;
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &header, data) != 0) return -errno;
  uint64_t permitted = data[0].permitted | (uint64_t{data[1].permitted} << 32);
  uint64_t keep = keep_mask & permitted;  // capset cannot add to permitted
  for (int i = 0; i < 2; ++i) {
    auto half = static_cast<uint32_t>(keep >> (32 * i));
    data[i].effective = half;
    data[i].permitted = half;
    data[i].inheritable = half;
  }
  if (syscall(SYS_capset, &header, data) != 0) return -errno;
  return 0;
}

Result<uint64_t> capabilityMask(const std::vector<std::string>& names) {
  uint64_t mask = 0;
  for (const auto& name : names) {
    std::string n;
    for (char ch : name)
      n.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
    if (n.rfind("cap_", 0) == 0) n = n.substr(4);
    bool found = false;
    for (size_t i = 0; i < std::size(kCapNames); ++i) {
      if (n == kCapNames[i]) {
        mask |= uint64_t{1} << i;
        found = true;
        break;
      }
    }
    if (!found) return Error{EINVAL, "unknown capability " + name};
  }
  return mask;
}

bool hasEffectiveCapability(int cap) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  return (data[cap / 32].effective >> (cap % 32)) & 1;
}

}  // namespace sv::tracer
