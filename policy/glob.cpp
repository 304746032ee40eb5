// Glob compilation and matching (see glob.h for the semantics).
#include "policy/glob.h"

namespace sv::policy {
namespace {

bool hasWildcard(std::string_view comp) {
  for (char c : comp) {
    if (c == '*' || c == '?' || c == '[' || c == '\\') return true;
  }
  return false;
}

// Parses a bracket expression starting at pat[i] == '['. On success returns the
// index just past `]` and, when `c` is given, whether the class matches *c.
// Returns npos for an unterminated or empty class.
size_t parseClass(std::string_view pat, size_t i, const char* c, bool* matched) {
  size_t j = i + 1;
  bool negate = false;
  if (j < pat.size() && (pat[j] == '!' || pat[j] == '^')) {
    negate = true;
    ++j;
  }
  bool any = false;
  bool first = true;
  bool hit = false;
  while (j < pat.size()) {
    char lo = pat[j];
    if (lo == ']' && !first) {
      if (!any) return std::string_view::npos;
      if (matched) *matched = (hit != negate);
      return j + 1;
    }
    first = false;
    if (lo == '\\' && j + 1 < pat.size()) lo = pat[++j];
    if (lo == '/') return std::string_view::npos;
    char hi = lo;
    if (j + 2 < pat.size() && pat[j + 1] == '-' && pat[j + 2] != ']') {
      hi = pat[j + 2];
      j += 2;
      if (hi == '\\' && j + 1 < pat.size()) hi = pat[++j];
    }
    any = true;
    if (c && static_cast<unsigned char>(*c) >= static_cast<unsigned char>(lo) &&
        static_cast<unsigned char>(*c) <= static_cast<unsigned char>(hi)) {
      hit = true;
    }
    ++j;
  }
  return std::string_view::npos;
}

// Advances over one path component; `pos` is the offset of a component start
// in `rest` or npos at the end.
std::string_view componentAt(std::string_view path, size_t pos) {
  size_t slash = path.find('/', pos);
  return path.substr(pos, slash == std::string_view::npos ? std::string_view::npos : slash - pos);
}
size_t nextComponent(std::string_view path, size_t pos) {
  size_t slash = path.find('/', pos);
  return slash == std::string_view::npos ? std::string_view::npos : slash + 1;
}

}  // namespace

bool Glob::checkSyntax(std::string_view pattern, std::string* error, int* error_column) {
  size_t comp_start = 0;
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c == '/') {
      comp_start = i + 1;
      continue;
    }
    if (c == '\\') {
      if (i + 1 >= pattern.size()) {
        if (error) *error = "trailing backslash";
        if (error_column) *error_column = static_cast<int>(i);
        return false;
      }
      ++i;
      continue;
    }
    if (c == '[') {
      size_t end = parseClass(pattern, i, nullptr, nullptr);
      if (end == std::string_view::npos) {
        if (error) *error = "unterminated or empty character class";
        if (error_column) *error_column = static_cast<int>(i);
        return false;
      }
      i = end - 1;
      continue;
    }
    if (c == '*' && i + 1 < pattern.size() && pattern[i + 1] == '*') {
      size_t end = i + 2;
      bool whole = i == comp_start && (end == pattern.size() || pattern[end] == '/');
      if (!whole) {
        if (error) *error = "`**` must be a whole path component (use `*` inside a name)";
        if (error_column) *error_column = static_cast<int>(i);
        return false;
      }
      i = end - 1;
    }
  }
  return true;
}

bool Glob::compile(std::string_view pattern, Glob* out, std::string* error, int* error_column,
                   bool prefix) {
  if (pattern.empty() || pattern.front() != '/') {
    if (error) *error = "glob must be absolute";
    if (error_column) *error_column = 0;
    return false;
  }
  if (!checkSyntax(pattern, error, error_column)) return false;
  Glob g;
  g.pattern_ = std::string(pattern);
  g.prefix_ = prefix || (pattern.size() > 1 && pattern.back() == '/');
  g.literal_prefix_.clear();
  bool in_literal = true;
  std::string_view rest = pattern.substr(1);
  while (!rest.empty()) {
    size_t slash = rest.find('/');
    std::string_view comp = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
    if (comp.empty()) continue;
    bool wild = hasWildcard(comp);
    if (wild) g.literal_ = false;
    if (in_literal && !wild) {
      g.literal_prefix_ += "/";
      g.literal_prefix_ += comp;
    } else {
      in_literal = false;
    }
    g.components_.emplace_back(comp);
  }
  if (g.literal_prefix_.empty()) g.literal_prefix_ = "/";
  // A prefix glob is the pattern followed by `/**`: same matcher, no special case.
  if (g.prefix_ && (g.components_.empty() || g.components_.back() != "**")) {
    g.components_.emplace_back("**");
  }
  *out = std::move(g);
  return true;
}

bool Glob::matchComponent(std::string_view pat, std::string_view name) {
  size_t p = 0, n = 0;
  size_t star_p = std::string_view::npos, star_n = 0;
  while (n < name.size()) {
    if (p < pat.size()) {
      char c = pat[p];
      if (c == '*') {
        star_p = p++;
        star_n = n;
        continue;
      }
      if (c == '?') {
        ++p;
        ++n;
        continue;
      }
      if (c == '[') {
        bool hit = false;
        size_t end = parseClass(pat, p, &name[n], &hit);
        if (end != std::string_view::npos && hit) {
          p = end;
          ++n;
          continue;
        }
        if (end == std::string_view::npos && name[n] == '[') {  // malformed: literal
          ++p;
          ++n;
          continue;
        }
      } else {
        char lit = c;
        size_t adv = 1;
        if (c == '\\' && p + 1 < pat.size()) {
          lit = pat[p + 1];
          adv = 2;
        }
        if (lit == name[n]) {
          p += adv;
          ++n;
          continue;
        }
      }
    }
    if (star_p != std::string_view::npos) {  // restart after the last `*`, one char later
      p = star_p + 1;
      n = ++star_n;
      continue;
    }
    return false;
  }
  while (p < pat.size() && pat[p] == '*') ++p;
  return p == pat.size();
}

bool Glob::matches(std::string_view path) const {
  if (path.empty() || path.front() != '/') return false;
  std::string_view body = path.substr(1);
  size_t pos = body.empty() ? std::string_view::npos : 0;
  size_t pi = 0;
  const size_t n = components_.size();
  size_t star_pi = std::string_view::npos, star_pos = 0;
  while (pos != std::string_view::npos) {
    if (pi < n && components_[pi] == "**") {
      star_pi = pi++;
      star_pos = pos;
      continue;
    }
    if (pi < n && matchComponent(components_[pi], componentAt(body, pos))) {
      ++pi;
      pos = nextComponent(body, pos);
      continue;
    }
    if (star_pi != std::string_view::npos) {  // `**` swallows one more component
      pi = star_pi + 1;
      star_pos = nextComponent(body, star_pos);
      pos = star_pos;
      if (pos == std::string_view::npos) break;
      continue;
    }
    return false;
  }
  while (pi < n && components_[pi] == "**") ++pi;
  return pi == n;
}

bool Glob::couldMatchBelow(std::string_view dir) const {
  if (dir.empty() || dir.front() != '/') return false;
  std::string_view body = dir.substr(1);
  size_t pi = 0;
  for (size_t pos = body.empty() ? std::string_view::npos : 0; pos != std::string_view::npos;
       pos = nextComponent(body, pos), ++pi) {
    if (pi == components_.size()) return false;
    if (components_[pi] == "**") return true;  // swallows the rest, and more below
    if (!matchComponent(components_[pi], componentAt(body, pos))) return false;
  }
  return pi < components_.size();  // a component is left for an entry below `dir`
}

std::string escapeGlob(std::string_view path) {
  std::string out;
  out.reserve(path.size());
  for (char c : path) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace sv::policy
