// compile() goldens: the kernel images of each preset (and one policy with
// profiles and exec rules) are pinned in tests/unit/golden/*.txt.
// Regenerate after an intended change with SV_UPDATE_GOLDEN=1 and review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "policy/compile.h"
#include "policy/load.h"
#include "tests/unit/policy_test_util.h"

namespace sv::policy {
namespace {

using test_util::mustLoad;

void checkGolden(const std::string& name, const std::string& actual) {
  std::string path = std::string(SV_GOLDEN_DIR) + "/" + name + ".txt";
  if (const char* u = std::getenv("SV_UPDATE_GOLDEN"); u && *u == '1') {
    std::ofstream(path) << actual;
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing golden " << path << " (run with SV_UPDATE_GOLDEN=1)";
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(actual, ss.str()) << "golden " << path << " differs";
}

TEST(Compile, PresetGoldens) {
  for (const char* preset : {"code-sandbox", "audit-only", "strict"}) {
    auto p = mustLoad("", preset);
    ASSERT_TRUE(p);
    checkGolden(preset, toText(compile(*p)));
  }
}

TEST(Compile, ProfilesAndExecGolden) {
  auto p = mustLoad(R"({
    "filesystem": {"readableRoots": ["/opt/data"], "denyRead": [".ssh/**"]},
    "exec": {"allow": ["/usr/bin/**", "./tools/*"],
             "switch": [{"match": "/usr/bin/git", "profile": "git"}]},
    "network": {"mode": "allowlist", "allow": ["10.0.0.0/8:443", "github.com:22",
                "[2001:db8::1]:443", "198.51.100.0/24:8000-8100"]},
    "profiles": {"git": {"network": {"allow": ["gitlab.com:22", "192.0.2.1"]},
                         "exec": {"allow": ["/usr/lib/git-core/**"]},
                         "filesystem": {"writableRoots": ["~/.ssh"]}}}
  })", "code-sandbox");
  ASSERT_TRUE(p);
  checkGolden("profiles", toText(compile(*p)));
}

TEST(Compile, Deterministic) {
  auto p = mustLoad("", "code-sandbox");
  EXPECT_EQ(toText(compile(*p)), toText(compile(*p)));
}

TEST(Compile, SeccompPlan) {
  EXPECT_FALSE(compile(*mustLoad("", "code-sandbox")).seccomp.notify_read_opens);
  EXPECT_TRUE(compile(*mustLoad(R"({"filesystem": {"denyRead": ["x"]}})", "code-sandbox"))
                  .seccomp.notify_read_opens);
  EXPECT_TRUE(compile(*mustLoad(R"({"profiles": {"p": {"filesystem": {"denyRead": ["x"]}}}})",
                                "code-sandbox"))
                  .seccomp.notify_read_opens);
  EXPECT_TRUE(compile(*mustLoad("", "code-sandbox")).seccomp.notify_write_opens);
  // audit.level deny still records every exec decision: execs stay notified
  // without any exec rule.
  EXPECT_TRUE(compile(*mustLoad(R"({"audit": {"level": "deny"}})", "code-sandbox"))
                  .seccomp.notify_exec);
  // audit.level all is the full file-access trail: read opens are notified
  // (and recorded) without any denyRead glob; decisions leaves them to Landlock.
  EXPECT_TRUE(compile(*mustLoad(R"({"audit": {"level": "all"}})", "code-sandbox"))
                  .seccomp.notify_read_opens);
  EXPECT_FALSE(compile(*mustLoad(R"({"audit": {"level": "decisions"}})", "code-sandbox"))
                   .seccomp.notify_read_opens);
  // Address families: notified unless every plan is network.mode all.
  EXPECT_TRUE(compile(*mustLoad("", "code-sandbox")).seccomp.notify_socket_families);
  EXPECT_TRUE(compile(*mustLoad("", "strict")).seccomp.notify_socket_families);
  EXPECT_FALSE(compile(*mustLoad(R"({"network": {"mode": "all"}})", "code-sandbox"))
                   .seccomp.notify_socket_families);
  EXPECT_TRUE(compile(*mustLoad(R"({"network": {"mode": "all"},
      "profiles": {"p": {"network": {"mode": "localhost"}}}})", "code-sandbox"))
                  .seccomp.notify_socket_families);
}

TEST(Compile, LocalhostAddsLoopback) {
  CompiledPolicy c = compile(*mustLoad("", "code-sandbox"));
  ASSERT_EQ(c.network.entries.size(), 2u);  // sorted by address: ::1 first
  EXPECT_TRUE(c.network.entries[0].cidr.contains(*parseIp("::1")));
  EXPECT_TRUE(c.network.entries[1].cidr.contains(*parseIp("127.0.0.1")));
  EXPECT_TRUE(c.network.entries[1].cidr.contains(*parseIp("::ffff:127.9.9.9")));
  EXPECT_EQ(c.network.entries[0].rule_id, "network-loopback");
}

// The floor behind the BPF LSM: every destination any profile allows, under
// the widest mode; nothing when every plan allows nothing.
TEST(Compile, NetworkFloorIsTheUnionOfEveryPlan) {
  CompiledPolicy c = compile(*mustLoad(
      R"({"network": {"mode": "localhost"},
          "profiles": {"git": {"network": {"mode": "allowlist", "allow": ["192.0.2.7:22"]}},
                       "off": {"network": {"mode": "none"}}}})",
      "code-sandbox"));
  NetworkPlan floor = networkFloor(c);
  EXPECT_EQ(floor.mode, NetworkMode::Allowlist);
  auto has = [&](const char* ip, uint16_t port) {
    for (const NetEntry& e : floor.entries)
      if (e.cidr.contains(*parseIp(ip)) && port >= e.port_lo && port <= e.port_hi) return true;
    return false;
  };
  EXPECT_TRUE(has("127.0.0.1", 80));   // the base's loopback
  EXPECT_TRUE(has("192.0.2.7", 22));   // git's remote
  EXPECT_FALSE(has("192.0.2.7", 23));
  EXPECT_FALSE(has("198.51.100.1", 22));
  for (size_t i = 0; i < floor.entries.size(); ++i)  // no duplicates
    for (size_t j = i + 1; j < floor.entries.size(); ++j) EXPECT_FALSE(floor.entries[i] == floor.entries[j]);

  CompiledPolicy none = compile(*mustLoad(R"({"network": {"mode": "none"}})", "code-sandbox"));
  EXPECT_EQ(networkFloor(none).mode, NetworkMode::None);
  CompiledPolicy all = compile(*mustLoad(
      R"({"network": {"mode": "none"}, "profiles": {"web": {"network": {"mode": "all"}}}})",
      "code-sandbox"));
  EXPECT_EQ(networkFloor(all).mode, NetworkMode::All);
}

}  // namespace
}  // namespace sv::policy
