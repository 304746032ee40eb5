// syscallName(): see syscall_name.h.
#include "supervisor/audit/syscall_name.h"

#include <seccomp.h>

#include <cstdlib>
#include <memory>
#include <vector>

namespace sv::supervisor {
namespace {

std::string resolve(uint32_t arch, int nr) {
  const std::unique_ptr<char, decltype(&std::free)> name(
      seccomp_syscall_resolve_num_arch(arch, nr), &std::free);
  return name ? name.get() : "";
}

// The native table, built once: events name a syscall each (libseccomp's
// lookup allocates).
constexpr int kNativeTableSize = 512;

}  // namespace

std::string syscallName(uint32_t arch, int64_t nr) {
  if (nr < 0 || nr > INT32_MAX) return "";
  if (arch == kNativeAuditArch && nr < kNativeTableSize) {
    static const std::vector<std::string> native = [] {
      std::vector<std::string> table(kNativeTableSize);
      for (int i = 0; i < kNativeTableSize; ++i) table[i] = resolve(kNativeAuditArch, i);
      return table;
    }();
    return native[static_cast<size_t>(nr)];
  }
  return resolve(arch, static_cast<int>(nr));
}

}  // namespace sv::supervisor
