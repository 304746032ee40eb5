// Lexical path normalisation (see path.h).
#include "policy/path.h"


namespace sv::policy {

namespace {

// Appends the components of `s` to `out` (a normal absolute path or ""),
// folding ".", "" and "..". A component never holds '/', so ".." cuts `out`
// back to its last '/': the root stays the root.
void appendComponents(std::string_view s, std::string& out) {
  while (!s.empty()) {
    const size_t slash = s.find('/');
    const std::string_view comp = s.substr(0, slash);
    s = slash == std::string_view::npos ? std::string_view{} : s.substr(slash + 1);
    if (comp.empty() || comp == ".") continue;
    if (comp == "..") {
      const size_t last = out.rfind('/');
      if (last != std::string::npos) out.resize(last);
      continue;
    }
    out.push_back('/');
    out.append(comp);
  }
}

}  // namespace

void normalizePathInto(std::string_view cwd, std::string_view p, std::string& out) {
  out.clear();
  if (p.empty() || p.front() != '/') appendComponents(cwd, out);
  appendComponents(p, out);
  if (out.empty()) out.push_back('/');
}

std::string normalizePath(std::string_view cwd, std::string_view p) {
  std::string out;
  out.reserve(cwd.size() + p.size() + 2);
  normalizePathInto(cwd, p, out);
  return out;
}

bool isUnder(std::string_view path, std::string_view root) {
  if (root == "/") return !path.empty() && path.front() == '/';
  if (path.size() < root.size() || path.compare(0, root.size(), root) != 0) return false;
  return path.size() == root.size() || path[root.size()] == '/';
}

std::string_view pathInRoot(std::string_view path, std::string_view process_root) {
  if (process_root.empty() || process_root == "/" || !isUnder(path, process_root)) return path;
  path.remove_prefix(process_root.size());
  return path.empty() ? std::string_view("/") : path;
}

void takePathInRoot(std::string& path, std::string_view process_root) {
  const std::string_view in_root = pathInRoot(path, process_root);
  if (in_root.size() != path.size()) path = std::string(in_root);
}

}  // namespace sv::policy
