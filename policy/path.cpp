// Lexical path normalisation (see path.h).
#include "policy/path.h"

#include <vector>

namespace sv::policy {

std::string normalizePath(std::string_view cwd, std::string_view p) {
  std::string joined;
  if (p.empty() || p.front() != '/') {
    joined.reserve(cwd.size() + 1 + p.size());
    joined.append(cwd);
    joined.push_back('/');
  }
  joined.append(p);

  std::vector<std::string_view> parts;
  std::string_view rest = joined;
  while (!rest.empty()) {
    size_t slash = rest.find('/');
    std::string_view comp = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
    if (comp.empty() || comp == ".") continue;
    if (comp == "..") {
      if (!parts.empty()) parts.pop_back();  // `..` at the root stays at the root
      continue;
    }
    parts.push_back(comp);
  }
  if (parts.empty()) return "/";
  std::string out;
  for (auto c : parts) {
    out.push_back('/');
    out.append(c);
  }
  return out;
}

bool isUnder(std::string_view path, std::string_view root) {
  if (root == "/") return !path.empty() && path.front() == '/';
  if (path.size() < root.size() || path.compare(0, root.size(), root) != 0) return false;
  return path.size() == root.size() || path[root.size()] == '/';
}

}  // namespace sv::policy
