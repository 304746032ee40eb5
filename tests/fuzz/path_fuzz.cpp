// libFuzzer entry for the lexical path normaliser (policy/path.h), which
// both the policy loader and the supervisor's fast path rely on to compare
// a syscall's path with the rules. The input is a cwd and a path separated by
// the first NUL byte. Properties for every input:
//  - the result is absolute and normal: no empty, "." or ".." component and
//    no trailing '/' (except "/" itself);
//  - normalising the result again changes nothing, whatever the cwd;
//  - isUnder(result, "/") holds, and isUnder(result, result) holds.
//  - pathInRoot(result, any normal root) is normal.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "policy/path.h"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

bool isNormal(std::string_view p) {
  if (p.empty() || p[0] != '/') return false;
  if (p == "/") return true;
  if (p.back() == '/') return false;
  size_t i = 1;
  while (i <= p.size()) {
    size_t j = p.find('/', i);
    if (j == std::string_view::npos) j = p.size();
    std::string_view comp = p.substr(i, j - i);
    if (comp.empty() || comp == "." || comp == "..") return false;
    i = j + 1;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t nul = input.find('\0');
  std::string_view cwd =
      nul == std::string_view::npos ? std::string_view("/ws") : input.substr(0, nul);
  std::string_view path = nul == std::string_view::npos ? input : input.substr(nul + 1);

  std::string out = sv::policy::normalizePath(cwd, path);
  check(isNormal(out));
  check(sv::policy::normalizePath("/elsewhere", out) == out);
  check(sv::policy::isUnder(out, "/"));
  check(sv::policy::isUnder(out, out));
  // A normal path seen from any normal root stays normal.
  check(isNormal(sv::policy::pathInRoot(out, sv::policy::normalizePath("/", cwd))));
  return 0;
}
