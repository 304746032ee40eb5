// printDenial(): the one stderr line of a denial, with the id of its audit
// event when one was written (supervisor/audit/denial_line.h).
#include "supervisor/audit/denial_line.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace sv::supervisor {
namespace {

// What printDenial writes to fd 2, read back through a pipe.
template <typename Fn>
std::string stderrOf(Fn fn) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const int saved = ::dup(2);
  ::dup2(fds[1], 2);
  fn();
  ::dup2(saved, 2);
  ::close(saved);
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, size_t(n));
  ::close(fds[0]);
  return out;
}

TEST(DenialLine, NamesItsAuditEvent) {
  EXPECT_EQ(stderrOf([] {
              printDenial("denied", "write to", ".env", "deny-write-env", "secrets",
                          {"3f2a9c1b5e6d7a8b9c0d1e2f3a4b5c6d", 12});
            }),
            "supervise: denied write to .env (rule deny-write-env: secrets) [event 3f2a9c1b:12]\n");
  // No event written (seq 0): the line as before.
  EXPECT_EQ(stderrOf([] { printDenial("would deny", "connect to", "10.0.0.1:443", "r", ""); }),
            "supervise: would deny connect to 10.0.0.1:443 (rule r)\n");
}

}  // namespace
}  // namespace sv::supervisor
