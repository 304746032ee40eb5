// Redactor and EventText: what an audit event shows of the strings the
// supervised command controls (paths and argv).
//
// Redactor holds the policy's audit.redact patterns. EventText applies them
// to one event and then the limits of limits.h: a value a pattern matches is
// shown as "[REDACTED]" (whole: a directory or a prefix can be the secret
// too), and a longer one is cut on a UTF-8 boundary. Every encoder (native,
// OCSF, ECS) writes paths and argv through an EventText, so derived fields
// (`_b64`, a base name, a joined command line) never see more than the field
// itself. Both only look and return views: no allocation per event.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "policy/model.h"
#include "supervisor/audit/limits.h"

namespace sv::supervisor {

inline constexpr std::string_view kRedacted = "[REDACTED]";

class Redactor {
 public:
  Redactor() = default;
  explicit Redactor(std::vector<policy::RedactPattern> patterns) : patterns_(std::move(patterns)) {}

  // True when some pattern matches `value` (a path or an argv element): a
  // path pattern when value is an absolute path under it, a string pattern
  // when it matches the whole value.
  bool matches(std::string_view value) const;
  bool empty() const { return patterns_.empty(); }

 private:
  std::vector<policy::RedactPattern> patterns_;
};

// The length of the longest prefix of `s` of at most `max` bytes that does not
// end inside a UTF-8 sequence.
size_t utf8Prefix(std::string_view s, size_t max);

class EventText {
 public:
  explicit EventText(const Redactor& redactor) : redactor_(redactor) {}

  // A path as the event shows it.
  std::string_view path(std::string_view value) { return shown(value, kAuditMaxPathBytes); }

  // Calls f(element) for each argv element the event shows: redacted, each cut
  // to kAuditMaxArgBytes, at most kAuditMaxArgs of them and kAuditMaxArgvBytes
  // in all.
  template <typename F>
  void forEachArg(const std::vector<std::string>& argv, F&& f) {
    size_t budget = kAuditMaxArgvBytes;
    for (size_t i = 0; i < argv.size(); ++i) {
      if (i == kAuditMaxArgs || budget == 0) {
        truncated_ = true;
        return;
      }
      const std::string_view arg = shown(argv[i], std::min(kAuditMaxArgBytes, budget));
      budget -= arg.size();
      f(arg);
    }
  }

  // Whether anything was cut so far (the event's `truncated`).
  bool truncated() const { return truncated_; }

 private:
  std::string_view shown(std::string_view value, size_t max) {
    if (!redactor_.empty() && redactor_.matches(value)) return kRedacted;
    if (value.size() <= max) return value;
    truncated_ = true;
    return value.substr(0, utf8Prefix(value, max));
  }

  const Redactor& redactor_;
  bool truncated_ = false;
};

}  // namespace sv::supervisor
