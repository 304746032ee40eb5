// Physical paths (symlinks resolved) of many names that share directories.
//
// realpath(3) resolves each component with a readlink of its own: five for
// ~/.cargo/bin/cargo -> rustup, again for each of the directory's fifteen
// links. The home rules ask for every symlink of each $PATH directory under
// $HOME (policy/home_rules.h) at every start, so each name's physical form
// is remembered here: one readlink per name the first time, none after.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace sv::supervisor {

class RealPaths {
 public:
  // The physical form of `path` (absolute), as realpath(3) gives it;
  // nullopt where it does not resolve (missing, a loop, not a directory).
  std::optional<std::string> of(const std::string& path);

 private:
  std::optional<std::string> walk(std::string from, std::string_view rest, int& budget);
  std::optional<std::string> nameIn(const std::string& dir, std::string_view name, int& budget);
  std::map<std::string, std::optional<std::string>> known_;  // "<physical dir>/<name>"
};

}  // namespace sv::supervisor
