// Counts global operator new calls, for the tests that prove a hot path
// allocation-free (Engine::decide, the notify fast path, audit emit).
//
// Replacement allocation functions may not be inline, so this header defines
// them: include it in exactly ONE .cpp of a test binary. Count with
//   sv::testing::AllocationCount count;  ...  EXPECT_EQ(count.stop(), 0);
#pragma once

#include <atomic>
#include <cstdlib>
#include <new>

namespace sv::testing {
inline std::atomic<bool> g_counting{false};
inline std::atomic<long> g_allocations{0};

// Counts from construction until stop() (or destruction).
class AllocationCount {
 public:
  AllocationCount() {
    g_allocations = 0;
    g_counting = true;
  }
  ~AllocationCount() { g_counting = false; }
  long stop() {
    g_counting = false;
    return g_allocations.load();
  }
};
}  // namespace sv::testing

// The replacement pair below is malloc/free on purpose; gcc cannot see that.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t n) {
  if (sv::testing::g_counting.load(std::memory_order_relaxed))
    sv::testing::g_allocations.fetch_add(1);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// The nothrow form too (std::stable_sort's buffer uses it): otherwise the
// library's (or a sanitizer's) allocator pairs with the free() below.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  if (sv::testing::g_counting.load(std::memory_order_relaxed))
    sv::testing::g_allocations.fetch_add(1);
  return std::malloc(n ? n : 1);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
