// What the observed side reads of a trail besides its decisions (observed.h).
#include "tests/differential/observed.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace sv::differential {
namespace {

TEST(ReadAuditTrail, CountsTheLossesTheTrailNames) {
  char path[] = "/tmp/sv-observed-test-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path)
      << R"({"category":"file","operation":"open","decision":"deny","enforced_by":"bpf-lsm",)"
         R"("rule":{"id":"deny-write-env"},"file":{"path":"/ws/.env"}})" "\n"
      << R"({"category":"session","operation":"dropped","dropped":{"count":4}})" "\n"
      << R"({"category":"session","operation":"end","session":{"counters":{"unrecorded":7}}})"
         "\n";
  auto trail = readAuditTrail(path);
  ::unlink(path);
  ASSERT_TRUE(trail) << trail.error().message();
  ASSERT_EQ(trail->decisions.size(), 1u);
  EXPECT_EQ(trail->decisions[0].subject, "/ws/.env");
  EXPECT_EQ(trail->dropped, 4u);
  EXPECT_EQ(trail->unrecorded, 7u);
}

}  // namespace
}  // namespace sv::differential
