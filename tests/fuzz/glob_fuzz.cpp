// libFuzzer entry for the glob compiler and matcher. The input is a pattern
// and a path separated by the first NUL byte (no NUL: the input is both).
// Neither compile() nor matches() may crash, hang or read out of bounds, and
// a few properties must hold for every pattern that compiles:
//  - a literal pattern matches exactly its own (normal) path;
//  - a prefix glob matches whatever the plain glob matches, and everything
//    below a path it matches;
//  - checkSyntax() accepts every pattern compile() accepts.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "policy/glob.h"
#include "policy/path.h"

namespace {

// `what` names the property in the crash's stack trace (it is an argument).
[[gnu::noinline]] void check(bool ok, const char* what) {
  if (!ok) {
    asm volatile("" : : "r"(what));
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t nul = input.find('\0');
  std::string_view pattern = input.substr(0, nul);
  std::string path =
      sv::policy::normalizePath("/", nul == std::string_view::npos ? input : input.substr(nul + 1));

  std::string error;
  int column = -1;
  sv::policy::Glob glob, prefix;
  bool ok = sv::policy::Glob::compile(pattern, &glob, &error, &column);
  bool ok_prefix = sv::policy::Glob::compile(pattern, &prefix, &error, &column, /*prefix=*/true);
  check(ok == ok_prefix, "prefix compile agrees");
  (void)sv::policy::Glob::matchComponent(pattern, path);
  if (!ok) return 0;

  std::string syntax_error;
  int syntax_column = -1;
  check(sv::policy::Glob::checkSyntax(pattern, &syntax_error, &syntax_column),
        "checkSyntax accepts what compile accepts");
  (void)glob.literalPrefix();

  bool m = glob.matches(path);
  bool mp = prefix.matches(path);
  check(!m || mp, "prefix glob matches what the glob matches");
  if (mp) check(prefix.matches(path == "/" ? "/x" : path + "/x"), "prefix covers children");
  // (A backslash escapes the next character, so such a pattern is not its own text.)
  if (glob.isLiteral() && glob.pattern().find('\\') == std::string::npos) {
    const std::string self = sv::policy::normalizePath("/", glob.pattern());
    if (self == glob.pattern()) check(glob.matches(self), "a literal matches itself");
  }
  return 0;
}
