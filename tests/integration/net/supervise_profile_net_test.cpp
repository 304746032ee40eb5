// Per-profile network rules through the real binary: the base policy allows
// only loopback, profile `fetch` (entered by exec of fetch.py) also the test
// host 198.51.100.2:8443. In one supervised tree:
//
//   base     python3 probe.py          connect → EPERM (base plan)
//   fetch    exec fetch.py             socket made before the exec → connects
//                                      (judged by the plan of the caller)
//                                      a new socket → connects
//   child    python3 probe.py (fork+exec of a non-switching binary: stays in
//            `fetch`, inherits its cgroup) → connects
//   plain    exec plain.py (profile without network rules) → EPERM
//
// Each attempt is one audit event with the rule id of the deciding plan and
// the process's profile. Topology: dns_test_host.h (its dnsmasq is unused).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "dns_test_host.h"
#include "tests/common/audit_connects.h"

namespace {

using sv::testnet::kPort;
namespace fs = std::filesystem;

class SuperviseProfileNet : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = sv::testnet::missingTool({"/usr/bin/python3", "nsenter"}); !why.empty())
      GTEST_SKIP() << why;
    if (std::string why = host_.up("svpn"); !why.empty()) GTEST_SKIP() << why;
    dir_ = fs::temp_directory_path() / ("sv-profnet-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }

  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Runs `supervise -- /usr/bin/python3 probe.py base` in the client netns.
  int runTree(std::string* out, std::string* err) {
    const std::string probe = R"(#!/usr/bin/python3
import os, socket, subprocess, sys
DIR = os.path.dirname(os.path.abspath(__file__))
def attempt(label, s=None):
    s = s or socket.socket()
    s.settimeout(3)
    try:
        s.connect((")" + std::string(sv::testnet::kAllowedIp) + R"(", )" +
                              std::to_string(kPort) + R"()); r = "ok"
    except OSError as e:
        r = "errno %d" % e.errno
    print(label, r, flush=True)
    s.close()
role = sys.argv[1]
if role == "base":
    attempt("base")
    s = socket.socket()
    os.set_inheritable(s.fileno(), True)
    os.execv(DIR + "/fetch.py", [DIR + "/fetch.py", "fetch", str(s.fileno())])
elif role == "fetch":
    attempt("inherited", socket.socket(fileno=int(sys.argv[2])))
    attempt("fetch")
    subprocess.run(["/usr/bin/python3", DIR + "/probe.py", "child"], check=True)
    os.execv(DIR + "/plain.py", [DIR + "/plain.py", "plain"])
else:
    attempt(role)
)";
    for (const char* name : {"probe.py", "fetch.py", "plain.py"}) {
      std::ofstream(dir_ / name) << probe;
      fs::permissions(dir_ / name, fs::perms::owner_all | fs::perms::group_read |
                                       fs::perms::group_exec | fs::perms::others_read |
                                       fs::perms::others_exec);
    }
    std::ofstream(dir_ / "policy.json")
        << R"({"network": {"mode": "localhost"},
  "exec": {"switch": [{"match": ")" << (dir_ / "fetch.py").string() << R"(", "profile": "fetch"},
                      {"match": ")" << (dir_ / "plain.py").string() << R"(", "profile": "plain"}]},
  "profiles": {
    "fetch": {"network": {"mode": "allowlist",
                          "allow": [{"to": ")" << sv::testnet::kAllowedIp << ":" << kPort
        << R"(", "id": "test-host"}]}},
    "plain": {"filesystem": {"readableRoots": ["/usr"]}}}})";
    const std::string out_file = (dir_ / "out.txt").string(), err_file = (dir_ / "err.txt").string();
    const std::string cmd = "cd " + dir_.string() + " && nsenter --net=" + host_.clientNs() +
                            " " SV_SUPERVISE_BIN " --audit-file " + audit() + " -p " +
                            (dir_ / "policy.json").string() + " -- /usr/bin/python3 " +
                            (dir_ / "probe.py").string() + " base >" + out_file + " 2>" + err_file;
    int rc = std::system(cmd.c_str());
    *out = sv::testnet::readAll(out_file);
    *err = sv::testnet::readAll(err_file);
    return rc;
  }

  std::string audit() const { return (dir_ / "audit.jsonl").string(); }

  sv::testnet::DnsTestHost host_;
  fs::path dir_;
};

TEST_F(SuperviseProfileNet, OnlyTheProfilesProcessesReachTheTestHost) {
  std::string out, err;
  ASSERT_EQ(runTree(&out, &err), 0) << out << "\nstderr:\n" << err;
  EXPECT_EQ(out, "base errno 1\ninherited ok\nfetch ok\nchild ok\nplain errno 1\n") << err;
  EXPECT_EQ(err.find("not enforced per profile"), std::string::npos) << err;

  const auto seen = sv::test::auditedConnects(audit(), sv::testnet::kAllowedIp, kPort);
  const std::string all = sv::testnet::readAll(audit());
  ASSERT_EQ(seen.size(), 5u) << all;
  const std::vector<std::vector<std::string>> want = {
      {"deny", "default-deny-connect", ""},  // base
      {"allow", "test-host", "fetch"},       // socket made in base, connected in fetch
      {"allow", "test-host", "fetch"},       // fetch
      {"allow", "test-host", "fetch"},       // its child
      {"deny", "default-deny-connect", "plain"}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(seen[i].decision, want[i][0]) << i << "\n" << all;
    EXPECT_EQ(seen[i].rule, want[i][1]) << i << "\n" << all;
    EXPECT_EQ(seen[i].profile, want[i][2]) << i << "\n" << all;
  }
  // One process (exec keeps the pid) but for the child.
  EXPECT_EQ(seen[0].pid, seen[2].pid);
  EXPECT_EQ(seen[4].pid, seen[2].pid);
  EXPECT_NE(seen[3].pid, seen[2].pid);
}

// Teardown removes the profile cgroups with the session's: nothing named
// after this session is left under the supervisor's cgroup.
TEST_F(SuperviseProfileNet, SessionTeardownRemovesTheProfileCgroups) {
  std::string out, err;
  ASSERT_EQ(runTree(&out, &err), 0) << err;
  std::string own;
  std::ifstream cg("/proc/self/cgroup");
  for (std::string line; std::getline(cg, line);)
    if (line.rfind("0::", 0) == 0) own = line.substr(3);
  const fs::path parent = fs::path("/sys/fs/cgroup") / own.substr(1);
  ASSERT_TRUE(fs::exists(parent)) << parent;
  for (const auto& entry : fs::directory_iterator(parent)) {
    if (!entry.is_directory()) continue;
    EXPECT_FALSE(fs::exists(entry.path() / "profile-fetch")) << entry.path();
  }
}

}  // namespace
