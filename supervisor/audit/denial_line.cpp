// printDenial(): see denial_line.h.
#include "supervisor/audit/denial_line.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace sv::supervisor {

void printDenial(std::string_view action, std::string_view verb, std::string_view target,
                 std::string_view rule_id, std::string_view reason) {
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
