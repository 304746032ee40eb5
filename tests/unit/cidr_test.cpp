// CIDR parsing and matching: v4, v6, v4-mapped v6, host bits, bad input.
#include <gtest/gtest.h>

#include "policy/cidr.h"

namespace sv::policy {
namespace {

Ip6 ip(const char* s) {
  auto v = parseIp(s);
  EXPECT_TRUE(v) << s;
  return v.value_or(Ip6{});
}

TEST(Cidr, ParseAndContains) {
  struct Case {
    const char* cidr;
    const char* addr;
    bool in;
  };
  const Case cases[] = {
      {"10.0.0.0/8", "10.1.2.3", true},
      {"10.0.0.0/8", "11.0.0.1", false},
      {"10.0.0.0/8", "::ffff:10.9.9.9", true},  // mapped v6 judged like v4
      {"192.0.2.1", "192.0.2.1", true},
      {"192.0.2.1", "192.0.2.2", false},
      {"0.0.0.0/0", "203.0.113.7", true},
      {"0.0.0.0/0", "2001:db8::1", false},  // v4 /0 is the mapped range only
      {"198.51.100.0/22", "198.51.103.255", true},
      {"198.51.100.0/22", "198.51.104.0", false},
      {"2001:db8::/32", "2001:db8:1::5", true},
      {"2001:db8::/32", "2001:db9::5", false},
      {"::1", "::1", true},
      {"::1", "::2", false},
      {"::/0", "10.0.0.1", true},
      {"fd00::/8", "fdff::1", true},
  };
  for (const auto& c : cases) {
    std::string err;
    auto cidr = Cidr::parse(c.cidr, &err);
    ASSERT_TRUE(cidr) << c.cidr << ": " << err;
    EXPECT_EQ(cidr->contains(ip(c.addr)), c.in) << c.cidr << " ∋ " << c.addr;
  }
}

TEST(Cidr, Errors) {
  const char* bad[] = {"10.0.0.1/8",   "10.0.0.0/33", "10.0.0.0/-1", "2001:db8::1/32",
                       "::/129",       "300.0.0.0",   "10.0.0/8",    "abc",
                       "10.0.0.0/",    "10.0.0.0/8x", "",            "1.2.3.4.5"};
  for (const char* b : bad) {
    std::string err;
    EXPECT_FALSE(Cidr::parse(b, &err)) << b;
    EXPECT_FALSE(err.empty()) << b;
  }
  std::string err;
  Cidr::parse("10.0.0.1/8", &err);
  EXPECT_NE(err.find("host bits"), std::string::npos) << err;
  EXPECT_NE(err.find("10.0.0.0/8"), std::string::npos) << err;
}

TEST(Cidr, ToStringAndMapping) {
  std::string err;
  EXPECT_EQ(Cidr::parse("10.0.0.0/8", &err)->toString(), "10.0.0.0/8");
  EXPECT_EQ(Cidr::parse("2001:db8::/32", &err)->toString(), "2001:db8::/32");
  auto c = Cidr::parse("127.0.0.0/8", &err);
  EXPECT_EQ(c->prefix_len, 104);
  EXPECT_TRUE(c->v4);
  EXPECT_EQ(mapV4({127, 0, 0, 1}), ip("127.0.0.1"));
  EXPECT_EQ(ipToString(ip("::ffff:1.2.3.4")), "1.2.3.4");
  EXPECT_EQ(ipToString(ip("2001:db8::1")), "2001:db8::1");
}

}  // namespace
}  // namespace sv::policy
