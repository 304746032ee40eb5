// Result<T>: the error type for everything that touches the kernel.
//
// An Error carries the errno the kernel gave and a short context ("openat2
// /proc/42/cwd"), so a failure deep in a backend reaches the operator as one
// readable line. C++20 has no std::expected; this is the minimal subset we use.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <variant>

namespace sv {

struct Error {
  int code = 0;         // errno value, or 0 when the failure is not from the kernel
  std::string context;  // what was being attempted

  std::string message() const {
    if (code == 0) return context;
    return context + ": " + std::strerror(code);
  }
};

// Builds an Error from the current errno.
inline Error errnoError(std::string context) { return Error{errno, std::move(context)}; }

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error error) : v_(std::move(error)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Result<void>: success or an Error.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

using Status = Result<void>;

}  // namespace sv

// Propagates an error from an expression returning Result<...>.
#define SV_TRY(expr)                                   \
  do {                                                 \
    auto&& sv_try_result_ = (expr);                    \
    if (!sv_try_result_.ok()) return sv_try_result_.error(); \
  } while (0)

// Impossible states abort loudly instead of limping on.
#define SV_CHECK(cond)                                                          \
  do {                                                                          \
    if (!(cond)) {                                                              \
      ::sv::detail::checkFailed(#cond, __FILE__, __LINE__);                     \
    }                                                                           \
  } while (0)

namespace sv::detail {
[[noreturn]] inline void checkFailed(const char* cond, const char* file, int line) {
  std::fprintf(stderr, "supervise: internal check failed: %s (%s:%d)\n", cond, file, line);
  std::abort();
}
}  // namespace sv::detail
