// Redactor matching and the UTF-8-safe cut; see redact.h.
#include "supervisor/audit/redact.h"

namespace sv::supervisor {

bool Redactor::matches(std::string_view value) const {
  for (const auto& p : patterns_) {
    // A string pattern has no `/`, so matching it as one path component is a
    // whole-string glob in which `*` also crosses `/`.
    if (p.is_path ? p.glob.matches(value) : policy::Glob::matchComponent(p.pattern, value))
      return true;
  }
  return false;
}

size_t utf8Prefix(std::string_view s, size_t max) {
  if (s.size() <= max) return s.size();
  // s[n] is the first byte left out: while it continues a sequence, that
  // sequence straddles the cut, so leave out its lead byte too (at most 3
  // steps back; bytes that are not UTF-8 anyway are cut where they fall).
  size_t n = max;
  while (n > 0 && max - n < 3 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return n;
}

}  // namespace sv::supervisor
