// Glob: path patterns with `*`, `?`, `[...]` and `**`, matched against
// absolute, lexically normal paths.
//
// `*`, `?` and `[...]` never match `/`; `**` as a whole component matches zero
// or more components; a leading `.` is matched like any other character
// (dotfiles are not special: `.env*` must catch `.env.local`). A pattern that
// ends in `/`, or one compiled with `prefix` (roots, deny rules), matches the
// path itself and everything below it, like a gitignore entry naming a
// directory. `\x` matches `x` literally.
//
// Matching is iterative with a single restart point per level (components,
// then characters inside a component), so it runs in O(|pattern| * |path|)
// without recursion or backtracking blow-up, and it does not allocate.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sv::policy {

class Glob {
 public:
  // Compiles an absolute pattern. Returns false and sets *error (with a column,
  // 0-based, in *error_column) when the pattern is malformed (unterminated `[`,
  // `**` inside a component, empty class).
  static bool compile(std::string_view pattern, Glob* out, std::string* error,
                      int* error_column = nullptr, bool prefix = false);

  // Checks the syntax of a pattern (absolute or not) without compiling it.
  static bool checkSyntax(std::string_view pattern, std::string* error, int* error_column);

  // Matches one path component against one pattern component (no `/`).
  static bool matchComponent(std::string_view pattern, std::string_view name);

  // True when `path` (absolute, normal) matches. `prefix` globs (roots) also
  // match every path below them.
  bool matches(std::string_view path) const;

  // True when some path strictly below `dir` (absolute, normal) could match:
  // a walk for matches need not enter a directory for which this is false.
  bool couldMatchBelow(std::string_view dir) const;

  const std::string& pattern() const { return pattern_; }
  // The literal leading directory of the pattern ("/home/u/ws" for
  // "/home/u/ws/**/.env"): where a kernel-side ruleset must look.
  const std::string& literalPrefix() const { return literal_prefix_; }
  // True when the pattern has no wildcards (a plain path or root).
  bool isLiteral() const { return literal_; }
  bool isPrefix() const { return prefix_; }

 private:
  std::string pattern_;
  std::string literal_prefix_;
  bool literal_ = true;
  bool prefix_ = false;  // matches the path and everything below
  std::vector<std::string> components_;
};

// A literal path as a glob: every character the glob syntax gives a meaning
// is escaped.
std::string escapeGlob(std::string_view path);

}  // namespace sv::policy
