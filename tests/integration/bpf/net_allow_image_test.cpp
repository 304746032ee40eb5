// The allowlist image NetFilter writes into the LPM trie, without a kernel:
// masking, rule indexes, folding of less specific blocks into more specific
// ones, and the E2BIG limit.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>

#include "shared/net_abi.h"
#include "tracer/bpf/net_filter.h"

namespace sv::tracer {
namespace {

policy::Ip6 v4(const char* text) {
  policy::Ip6 out{};
  out[10] = out[11] = 0xff;
  inet_pton(AF_INET, text, &out[12]);
  return out;
}

policy::NetEntry entry(const char* addr, int prefix_len, uint16_t lo, uint16_t hi,
                       const char* rule) {
  policy::NetEntry e;
  e.cidr.addr = v4(addr);
  e.cidr.prefix_len = prefix_len;
  e.cidr.v4 = true;
  e.port_lo = lo;
  e.port_hi = hi;
  e.rule_id = rule;
  return e;
}

TEST(NetAllowImage, FoldsLessSpecificBlocksIntoMoreSpecificOnes) {
  policy::NetworkPlan plan;
  plan.mode = policy::NetworkMode::Allowlist;
  plan.entries = {entry("10.0.0.0", 96 + 8, 443, 443, "wide"),
                  entry("10.1.0.0", 96 + 16, 80, 80, "narrow"),
                  entry("192.168.0.0", 96 + 16, 22, 22, "other"),
                  entry("10.1.0.0", 96 + 16, 80, 80, "narrow")};  // duplicate
  auto image = buildNetAllowImage(plan);
  ASSERT_TRUE(image.ok()) << image.error().message();
  ASSERT_EQ(image->rule_ids, (std::vector<std::string>{"wide", "narrow", "other"}));
  ASSERT_EQ(image->entries.size(), 3u);
  const auto& wide = image->entries[0];
  EXPECT_EQ(wide.addr, v4("10.0.0.0"));
  EXPECT_EQ(wide.prefix_len, 104);
  EXPECT_EQ(wide.ranges, (std::vector<NetPortRange>{{443, 443, 0}}));
  const auto& narrow = image->entries[1];
  EXPECT_EQ(narrow.addr, v4("10.1.0.0"));
  EXPECT_EQ(narrow.ranges, (std::vector<NetPortRange>{{80, 80, 1}, {443, 443, 0}}));
  EXPECT_EQ(image->entries[2].ranges, (std::vector<NetPortRange>{{22, 22, 2}}));
}

TEST(NetAllowImage, MasksHostBits) {
  policy::NetworkPlan plan;
  plan.mode = policy::NetworkMode::Allowlist;
  plan.entries = {entry("10.1.2.3", 96 + 8, 1, 2, "r")};
  auto image = buildNetAllowImage(plan);
  ASSERT_TRUE(image.ok());
  EXPECT_EQ(image->entries[0].addr, v4("10.0.0.0"));
}

TEST(NetAllowImage, TooManyRangesForOneBlockIsAnError) {
  policy::NetworkPlan plan;
  plan.mode = policy::NetworkMode::Allowlist;
  for (int i = 0; i <= SV_NET_MAX_PORT_RANGES; ++i)
    plan.entries.push_back(entry("10.0.0.0", 96 + 8, 1000 + i, 1000 + i, "r"));
  auto image = buildNetAllowImage(plan);
  ASSERT_FALSE(image.ok());
  EXPECT_EQ(image.error().code, E2BIG);
}

TEST(NetAllowImage, RejectsInvertedPortRange) {
  policy::NetworkPlan plan;
  plan.entries = {entry("10.0.0.0", 96 + 8, 9, 1, "r")};
  auto image = buildNetAllowImage(plan);
  ASSERT_FALSE(image.ok());
  EXPECT_EQ(image.error().code, EINVAL);
}

}  // namespace
}  // namespace sv::tracer
