// printDenial(): see denial_line.h.
#include "supervisor/audit/denial_line.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace sv::supervisor {

void printDenial(std::string_view action, std::string_view verb, std::string_view target,
                 std::string_view rule_id, std::string_view reason, EventRef event) {
  char buf[8192];
  size_t len = 0;
  auto add = [&](std::string_view s) {
    const size_t n = std::min(s.size(), sizeof buf - 1 - len);  // room for the '\n'
    std::memcpy(buf + len, s.data(), n);
    len += n;
  };
  add("supervise: ");
  add(action);
  add(" ");
  add(verb);
  add(" ");
  add(target);
  add(" (rule ");
  add(rule_id);
  if (!reason.empty()) {
    add(": ");
    add(reason);
  }
  add(")");
  if (event.seq && !event.session_id.empty()) {
    char seq[24];
    const auto end = std::to_chars(seq, seq + sizeof seq, event.seq).ptr;
    add(" [event ");
    add(event.session_id.substr(0, kEventRefSessionDigits));
    add(":");
    add(std::string_view(seq, size_t(end - seq)));
    add("]");
  }
  buf[len++] = '\n';
  ssize_t unused = ::write(STDERR_FILENO, buf, len);
  (void)unused;
}

std::string_view relativeToWorkspace(std::string_view path, std::string_view workspace) {
  if (!workspace.empty() && path.size() > workspace.size() && path.starts_with(workspace) &&
      path[workspace.size()] == '/')
    path.remove_prefix(workspace.size() + 1);
  return path;
}

}  // namespace sv::supervisor
