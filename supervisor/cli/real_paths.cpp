// RealPaths (real_paths.h).
#include "supervisor/cli/real_paths.h"

#include <unistd.h>

#include <cerrno>

#include "policy/path.h"

namespace sv::supervisor {
namespace {

// Names one resolution may read: realpath(3) fails with ELOOP after 40
// links; a deeper path is no home toolchain either.
constexpr int kBudget = 256;

}  // namespace

std::optional<std::string> RealPaths::of(const std::string& path) {
  if (path.empty() || path.front() != '/') return std::nullopt;
  int budget = kBudget;
  return walk("/", path, budget);
}

// `rest` from the physical directory `from`, one name at a time, as the
// kernel walks it: `..` is the parent of where the walk is, not of what
// was written.
std::optional<std::string> RealPaths::walk(std::string from, std::string_view rest, int& budget) {
  std::string at = std::move(from);
  for (size_t i = 0; i < rest.size();) {
    size_t end = rest.find('/', i);
    if (end == std::string_view::npos) end = rest.size();
    const std::string_view name = rest.substr(i, end - i);
    i = end + 1;
    if (name.empty() || name == ".") continue;
    if (name == "..") {
      at = policy::normalizePath(at, "..");  // the root's ".." is the root
      continue;
    }
    auto next = nameIn(at, name, budget);
    if (!next) return std::nullopt;
    at = std::move(*next);
  }
  return at;
}

// The physical form of `name` in the physical directory `dir`.
std::optional<std::string> RealPaths::nameIn(const std::string& dir, std::string_view name,
                                             int& budget) {
  std::string here = (dir == "/" ? "" : dir) + "/";
  here += name;
  if (auto it = known_.find(here); it != known_.end()) return it->second;
  if (--budget < 0) return std::nullopt;
  std::optional<std::string> out;
  char target[4096];
  const ssize_t n = ::readlink(here.c_str(), target, sizeof target);
  if (n > 0 && size_t(n) < sizeof target)
    out = walk(target[0] == '/' ? "/" : dir, std::string_view(target, size_t(n)), budget);
  else if (n < 0 && errno == EINVAL)  // there, and no link
    out = here;
  known_.emplace(std::move(here), out);
  return out;
}

}  // namespace sv::supervisor
