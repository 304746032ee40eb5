// isDynamicLoader, loaderProgramOf; see loader_exec.h.
#include "supervisor/notify/loader_exec.h"

#include <array>

namespace sv::supervisor {

bool isDynamicLoader(std::string_view real_path) {
  const size_t slash = real_path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? real_path : real_path.substr(slash + 1);
  if (name == "ld.so" || name.starts_with("ld.so.")) return true;
  if (name.starts_with("ld64.so.")) return true;
  return name.starts_with("ld-") && name.find(".so") != std::string_view::npos;
}

LoaderProgram loaderProgramOf(const std::vector<std::string>& argv) {
  // glibc 2.36 rtld.c and musl ldso/dynlink.c: options before the program.
  constexpr std::array<std::string_view, 7> kWithValue = {
      "--library-path", "--inhibit-rpath", "--audit",           "--preload",
      "--argv0",        "--glibc-hwcaps-prefix", "--glibc-hwcaps-mask"};
  constexpr std::array<std::string_view, 7> kAlone = {
      "--list", "--verify", "--inhibit-cache", "--help", "--version", "--list-tunables",
      "--list-diagnostics"};
  LoaderProgram out;
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.empty() || a[0] != '-') {
      if (a.find('/') == std::string::npos) {
        out.error = "the loader would search its library path for \"" + a +
                    "\": name the program by a path (./" + a + ")";
        return out;
      }
      out.index = i;
      return out;
    }
    bool known = false;
    for (std::string_view o : kWithValue)
      if (a == o) {
        known = true;
        ++i;  // its value
      }
    for (std::string_view o : kAlone) known = known || a == o;
    if (!known) {
      out.error = "the loader's option " + a + " is not understood here: run the program directly";
      return out;
    }
  }
  return out;  // no program: the loader only prints (--help, --version, --list-*)
}

}  // namespace sv::supervisor
