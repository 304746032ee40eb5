#include "supervisor/notify/target_umask.h"

#include <cstdio>
#include <string_view>

#include "common/proc_status.h"
#include "common/read_file.h"

namespace sv::supervisor {

mode_t TargetUmask::of(pid_t tid) const {
  if (uniform_.load(std::memory_order_acquire)) return start_;
  constexpr mode_t kFallback = 022;  // the thread is gone: nothing will be created for it
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/status", tid);
  char buf[2048];
  const ssize_t n = readFilePrefix(path, buf, sizeof buf);
  if (n < 0) return kFallback;
  return procStatusNumber<mode_t>(std::string_view(buf, size_t(n)), "Umask", 0, 8)
      .value_or(kFallback);
}

}  // namespace sv::supervisor
