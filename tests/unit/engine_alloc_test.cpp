// decide() is on the user-notify hot path and must not allocate: count every
// global operator new while it runs.
#include <gtest/gtest.h>

#include <cstdlib>

#include "policy/engine.h"
#include "tests/common/count_allocations.h"
#include "policy/load.h"
#include "policy/path.h"

using sv::testing::g_allocations;
using sv::testing::g_counting;

namespace sv::policy {
namespace {

TEST(EngineAlloc, DecideDoesNotAllocate) {
  LoadRequest r;
  r.files.push_back({"p.json", R"({
    "filesystem": {"denyRead": [".ssh/**"], "readableRoots": ["/data"]},
    "exec": {"deny": ["/usr/bin/ssh"], "switch": [{"match": "/usr/bin/git", "profile": "git"}]},
    "network": {"allow": ["10.0.0.0/8:443", "github.com:22"]},
    "profiles": {"git": {"exec": {"allow": ["/usr/bin/ssh"]}, "network": {"allow": ["gitlab.com:22"]}}}
  })"});
  r.workspace = "/ws";
  r.home = "/home/u";
  LoadResult res = load(r);
  ASSERT_TRUE(res.ok());
  Engine engine(res.policy);
  ResolvedHosts resolved;
  resolved.add("github.com", *parseIp("140.82.112.3"));
  Request reqs[8];
  reqs[0] = {Operation::Read, "/ws/a/.ssh/id_rsa"};
  reqs[1] = {Operation::Read, "/home/u/nothing/here/at/all"};
  reqs[2] = {Operation::Write, "/ws/pkg/.env.production"};
  reqs[3] = {Operation::Write, "/etc/passwd"};
  reqs[4] = {Operation::Exec, "/usr/bin/ssh", "git"};
  reqs[5] = {Operation::Exec, "/home/u/bin/x"};
  reqs[6].op = Operation::Connect;
  reqs[6].ip = *parseIp("140.82.112.3");
  reqs[6].port = 22;
  reqs[6].resolved_hosts = &resolved;
  reqs[7].op = Operation::Connect;
  reqs[7].ip = *parseIp("203.0.113.9");
  reqs[7].port = 80;
  reqs[7].profile = "git";
  g_allocations = 0;
  g_counting = true;
  int denies = 0;
  for (const auto& q : reqs) {
    denies += engine.decide(q).verdict == Verdict::Deny;
    (void)engine.profileAfterExec("", "/usr/bin/git");
  }
  g_counting = false;
  EXPECT_EQ(g_allocations.load(), 0);
  EXPECT_EQ(denies, 6);
}

// The supervisor normalises every path it reads from a target into one
// reused buffer: once that buffer is big enough, no allocation.
TEST(EngineAlloc, NormalizePathIntoReusesTheBuffer) {
  std::string out;
  out.reserve(4096);
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"/ws/sub", "../a//b/./.env"}, {"/", "../../x"}, {"/ws", "/etc/../etc/passwd"},
      {"/ws", "."}, {"/a/b", "c/d/../../.."}};
  const char* expected[] = {"/ws/a/b/.env", "/x", "/etc/passwd", "/ws", "/a"};
  g_allocations = 0;
  g_counting = true;
  for (size_t i = 0; i < std::size(cases); ++i) {
    normalizePathInto(cases[i].first, cases[i].second, out);
    if (out != expected[i]) break;
  }
  g_counting = false;
  EXPECT_EQ(g_allocations.load(), 0);
  for (size_t i = 0; i < std::size(cases); ++i) {
    normalizePathInto(cases[i].first, cases[i].second, out);
    EXPECT_EQ(out, expected[i]) << cases[i].first << " + " << cases[i].second;
    EXPECT_EQ(normalizePath(cases[i].first, cases[i].second), expected[i]);
  }
}

}  // namespace
}  // namespace sv::policy
