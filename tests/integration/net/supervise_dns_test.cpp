// Domain entries through the real binary: `supervise` runs python3 in a
// network namespace whose resolv.conf names a dnsmasq on a test host, under
// a policy that allows `allowed.test:PORT` only. The named host connects;
// other.test resolves too, but its address is refused with EPERM; each
// attempt is one audit event with its rule id.
//
// Topology: dns_test_host.h. supervise enters the client namespace with
// nsenter --net; a private mount namespace (unshare -m) binds a resolv.conf
// naming the test host over /etc/resolv.conf for both supervise (its proxy's
// resolvers) and the command (glibc). Not `ip netns exec`: it remounts /sys
// for the namespace, and the cgroup2 mount under it disappears.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "dns_test_host.h"

namespace {

using nlohmann::json;
using sv::testnet::kPort;
using sv::testnet::readAll;
namespace fs = std::filesystem;

class SuperviseDns : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = sv::testnet::missingTool({"/usr/bin/python3", "unshare", "nsenter"}); !why.empty())
      GTEST_SKIP() << why;
    if (std::string why = host_.up("sve2d"); !why.empty()) GTEST_SKIP() << why;
    dir_ = fs::temp_directory_path() / ("sv-dns-e2e-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "resolv.conf") << "nameserver " << sv::testnet::kResolver << "\n";
  }

  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  sv::testnet::DnsTestHost host_;
  fs::path dir_;
};

TEST_F(SuperviseDns, AllowedNameConnectsOtherNameIsRefused) {
  const std::string policy = (dir_ / "policy.json").string();
  std::ofstream(policy) << R"({"network": {"mode": "allowlist", "allow": [)"
                        << R"({"to": "allowed.test:)" << kPort << R"(", "id": "allowed-host"}]}})";
  const std::string script = (dir_ / "try.py").string();
  std::ofstream(script) << "import socket\n"
                           "def attempt(name):\n"
                           "    try:\n"
                           "        addr = socket.gethostbyname(name)\n"
                           "    except OSError as e:\n"
                           "        print(name, 'resolve-failed', e); return\n"
                           "    s = socket.socket(); s.settimeout(3)\n"
                           "    try:\n"
                           "        s.connect((addr, " << kPort << ")); print(name, addr, 'ok')\n"
                           "    except OSError as e:\n"
                           "        print(name, addr, 'errno', e.errno)\n"
                           "attempt('allowed.test')\n"
                           "attempt('other.test')\n";
  const std::string audit = (dir_ / "audit.jsonl").string();
  const std::string out = (dir_ / "out.txt").string(), err = (dir_ / "err.txt").string();
  std::string cmd = "cd " + dir_.string() + " && unshare -m sh -c 'mount --bind " +
                    (dir_ / "resolv.conf").string() + " /etc/resolv.conf && exec nsenter --net=" + host_.clientNs() +
                    " " SV_SUPERVISE_BIN " --audit-file " + audit + " -p " + policy +
                    " -- /usr/bin/python3 " + script + "' >" + out + " 2>" + err;
  int rc = std::system(cmd.c_str());
  const std::string stdout_text = readAll(out), stderr_text = readAll(err);
  ASSERT_EQ(rc, 0) << cmd << "\nstdout:\n" << stdout_text << "\nstderr:\n" << stderr_text;
  EXPECT_EQ(stdout_text,
            "allowed.test 198.51.100.2 ok\nother.test 198.51.100.3 errno 1\n")
      << stderr_text;

  int allowed = 0, refused = 0;
  std::ifstream in(audit);
  std::string line;
  while (std::getline(in, line)) {
    json e = json::parse(line, nullptr, false);
    if (e.is_discarded() || e.value("category", "") != "network") continue;
    const json& n = e["network"];
    if (n.value("port", 0) != kPort) continue;
    if (n.value("ip", "") == "198.51.100.2") {
      ++allowed;
      EXPECT_EQ(e.value("decision", ""), "allow") << line;
      EXPECT_EQ(e["rule"].value("id", ""), "allowed-host") << line;
    } else if (n.value("ip", "") == "198.51.100.3") {
      ++refused;
      EXPECT_EQ(e.value("decision", ""), "deny") << line;
      EXPECT_EQ(e.value("errno", ""), "EPERM") << line;
    }
  }
  EXPECT_EQ(allowed, 1) << readAll(audit);
  EXPECT_EQ(refused, 1) << readAll(audit);
}

}  // namespace
