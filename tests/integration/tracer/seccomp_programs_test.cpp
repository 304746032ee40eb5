// The filters compiled into supervise are the ones buildSeccompFilter()
// makes now, for every plan, and a plan's index names that plan.
#include "tracer/seccomp/seccomp_programs.h"

#include <gtest/gtest.h>

#include <cstring>

#include "tracer/seccomp/seccomp_filter.h"

namespace sv::tracer {
namespace {

TEST(SeccompPrograms, IndexNamesEachPlanOnce) {
  for (size_t i = 0; i < kSeccompPlanCount; ++i) EXPECT_EQ(seccompPlanIndex(seccompPlanAt(i)), i);
  policy::SeccompPlan plan;
  plan.notify_write_opens = false;
  plan.allow_user_namespaces = true;
  EXPECT_EQ(seccompPlanAt(seccompPlanIndex(plan)).allow_user_namespaces, true);
  EXPECT_EQ(seccompPlanAt(seccompPlanIndex(plan)).notify_write_opens, false);
}

TEST(SeccompPrograms, MatchTheBuilder) {
  for (size_t i = 0; i < kSeccompPlanCount; ++i) {
    const policy::SeccompPlan plan = seccompPlanAt(i);
    auto built = buildSeccompFilter(plan);
    ASSERT_TRUE(built) << built.error().message();
    const std::vector<sock_filter> prebuilt = prebuiltSeccompFilter(plan);
    ASSERT_EQ(prebuilt.size(), built->size()) << "plan " << i;
    EXPECT_EQ(std::memcmp(prebuilt.data(), built->data(), prebuilt.size() * sizeof(sock_filter)), 0)
        << "plan " << i;
  }
}

}  // namespace
}  // namespace sv::tracer
