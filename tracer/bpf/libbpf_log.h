// What every BPF loader here (net_filter, lsm_filter, proc_tracker) needs
// from libbpf besides its skeleton: RAII deleters for links and ring buffers,
// and ScopedLibbpfLog, which routes libbpf's warnings during a load (the
// verifier log on failure) into the loader's string for its error message.
//
// libbpf prints through one process-wide callback, and loaders run on
// different threads at once (the process tracker loads while the network
// filter does). So there is one callback, installed once and never swapped
// back, with a thread-local sink: concurrent loads cannot steal or drop each
// other's messages. Outside a scope, messages go where libbpf's previous
// callback sent them.
#pragma once

#include <bpf/libbpf.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <string>

namespace sv::tracer {

struct BpfLinkDeleter {
  void operator()(bpf_link* l) const { bpf_link__destroy(l); }
};
struct RingBufferDeleter {
  void operator()(ring_buffer* r) const { ring_buffer__free(r); }
};

namespace libbpf_log_detail {
inline thread_local std::string* tl_sink = nullptr;
inline libbpf_print_fn_t previous = nullptr;

inline int print(enum libbpf_print_level level, const char* fmt, va_list args) {
  if (tl_sink == nullptr) return previous ? previous(level, fmt, args) : 0;
  if (level == LIBBPF_DEBUG) return 0;
  // Whole messages: the verifier log arrives as one, and its tail is the reason.
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  if (n <= 0) return 0;
  std::string msg(static_cast<size_t>(n) + 1, '\0');
  std::vsnprintf(msg.data(), msg.size(), fmt, args);
  msg.pop_back();
  tl_sink->append(msg);
  return 0;
}
}  // namespace libbpf_log_detail

class ScopedLibbpfLog {
 public:
  explicit ScopedLibbpfLog(std::string* sink) : prev_sink_(libbpf_log_detail::tl_sink) {
    static std::once_flag installed;
    std::call_once(installed,
                   [] { libbpf_log_detail::previous = libbpf_set_print(libbpf_log_detail::print); });
    libbpf_log_detail::tl_sink = sink;
  }
  ~ScopedLibbpfLog() { libbpf_log_detail::tl_sink = prev_sink_; }
  ScopedLibbpfLog(const ScopedLibbpfLog&) = delete;
  ScopedLibbpfLog& operator=(const ScopedLibbpfLog&) = delete;

 private:
  std::string* prev_sink_;
};

}  // namespace sv::tracer
