#include "supervisor/notify/target_umask.h"

#include "supervisor/proc/process_info.h"

namespace sv::supervisor {

mode_t TargetUmask::of(pid_t tid) const {
  if (uniform_.load(std::memory_order_acquire)) return start_;
  // 022 when the thread is gone: nothing will be created for it.
  return static_cast<mode_t>(readStatusNumber(tid, "Umask", 8, 022));
}

}  // namespace sv::supervisor
