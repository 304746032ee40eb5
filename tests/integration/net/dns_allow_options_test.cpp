// Which host names of which plan the DNS proxy learns, from a compiled policy
// (no kernel, no root): every plan with domain entries is named with its own
// hosts, so DnsAllow can add an answer to exactly the plans naming the host
// (per-plan allow/expiry itself: sv_dns_allow_test, against the kernel).
#include <gtest/gtest.h>

#include <string>

#include "policy/compile.h"
#include "supervisor/net/dns_allow.h"
#include "../../unit/policy_test_util.h"

namespace sv::supervisor {
namespace {

using policy::NetHost;

policy::CompiledPolicy compiled(const std::string& text) {
  auto p = policy::test_util::mustLoad(text, "none");
  EXPECT_TRUE(p);
  return p ? policy::compile(*p) : policy::CompiledPolicy{};
}

// Profile git lists a name of its own over a loopback-only base: the only
// domain entry of the policy, yet the proxy is on and learns it for git.
TEST(DnsAllowOptions, ProfileOnlyHostIsLearnedForThatProfile) {
  auto c = compiled(R"({"network": {"mode": "localhost"},
    "profiles": {
      "git": {"network": {"mode": "allowlist",
                          "allow": [{"to": "github.com:22", "id": "git-remote"}]}},
      "plain": {"filesystem": {"readableRoots": ["/usr"]}}}})");
  EXPECT_TRUE(c.network.hosts.empty());
  ASSERT_TRUE(anyHosts(c.network, c.profile_network));

  tracer::NetFilterOptions net;
  addDnsProxyOptions(c.network, c.profile_network, net);
  EXPECT_TRUE(net.dns_proxy);

  DnsAllowOptions o = dnsAllowOptionsFor(c.network, c.profile_network);
  EXPECT_TRUE(o.hosts.empty());
  ASSERT_EQ(o.profile_hosts.size(), 1u);  // plain has no host: no entry
  ASSERT_EQ(o.profile_hosts.count("git"), 1u);
  EXPECT_EQ(o.profile_hosts["git"], (std::vector<NetHost>{{"github.com", 22, 22, "git-remote"}}));
}

// A base name is in every plan that admits destinations (a profile's plan
// holds the base entries), each with the base's rule id; a profile in mode
// none gets none.
TEST(DnsAllowOptions, BaseHostIsInEveryPlanThatAdmitsDestinations) {
  auto c = compiled(R"({"network": {"mode": "allowlist",
                                   "allow": [{"to": "pypi.org:443", "id": "pypi"}]},
    "profiles": {
      "git": {"network": {"allow": [{"to": "github.com:22", "id": "git-remote"},
                                    {"to": "gitlab.com:22", "id": "git-lab"}]}},
      "offline": {"network": {"mode": "none"}}}})");
  tracer::NetFilterOptions net;
  addDnsProxyOptions(c.network, c.profile_network, net);
  EXPECT_TRUE(net.dns_proxy);

  DnsAllowOptions o = dnsAllowOptionsFor(c.network, c.profile_network);
  EXPECT_EQ(o.hosts, (std::vector<NetHost>{{"pypi.org", 443, 443, "pypi"}}));
  EXPECT_EQ(o.profile_hosts.count("offline"), 0u);
  ASSERT_EQ(o.profile_hosts.count("git"), 1u);
  EXPECT_EQ(o.profile_hosts["git"], (std::vector<NetHost>{{"github.com", 22, 22, "git-remote"},
                                                          {"gitlab.com", 22, 22, "git-lab"},
                                                          {"pypi.org", 443, 443, "pypi"}}));
}

TEST(DnsAllowOptions, NoHostNoProxy) {
  auto c = compiled(R"({"network": {"mode": "allowlist", "allow": [{"to": "10.0.0.0/8:443"}]},
    "profiles": {"git": {"network": {"allow": [{"to": "192.0.2.1:22"}]}}}})");
  EXPECT_FALSE(anyHosts(c.network, c.profile_network));
  tracer::NetFilterOptions net;
  addDnsProxyOptions(c.network, c.profile_network, net);
  EXPECT_FALSE(net.dns_proxy);
}

}  // namespace
}  // namespace sv::supervisor
