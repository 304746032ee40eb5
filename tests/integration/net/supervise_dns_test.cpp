// Domain entries through the real binary: `supervise` runs python3 in a
// network namespace whose resolv.conf names a dnsmasq on a test host, under
// a policy that allows `allowed.test:PORT` only. The named host connects;
// other.test resolves too, but its address is refused with EPERM; each
// attempt is one audit event with its rule id. With profiles: a name only
// profile `fetch` lists (entered by exec of fetch.py) connects from fetch's
// process and is refused (EPERM) from the base command, which runs on after
// fetch learned it; a base name keeps working in both.
//
// Topology: dns_test_host.h. supervise enters the client namespace with
// nsenter --net; a private mount namespace (unshare -m) binds a resolv.conf
// naming the test host over /etc/resolv.conf for both supervise (its proxy's
// resolvers) and the command (glibc). Not `ip netns exec`: it remounts /sys
// for the namespace, and the cgroup2 mount under it disappears.
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

  // Runs `supervise -- tree.py base` in the client netns with the test
  // host's resolv.conf, under `policy` (JSON); tree.py's output in *out.
  int runTree(const std::string& policy, std::string* out, std::string* err) {
    const std::string tree = R"(#!/usr/bin/python3
import os, socket, subprocess, sys
DIR = os.path.dirname(os.path.abspath(__file__))
def attempt(label, name, addr=None):
    if addr is None:
        try:
            addr = socket.gethostbyname(name)
        except OSError:
            print(label, name, "resolve-failed", flush=True); return
    s = socket.socket(); s.settimeout(3)
    try:
        s.connect((addr, )" + std::to_string(kPort) + R"()); r = "ok"
    except OSError as e:
        r = "errno %d" % e.errno
    s.close()
    print(label, name, addr, r, flush=True)
role = sys.argv[1]
if role == "base":
    attempt("base", "allowed.test")
    subprocess.run([DIR + "/fetch.py", "fetch"], check=True)
    attempt("base", "other.test")
    attempt("base", "other.test", ")" + std::string(sv::testnet::kOtherIp) + R"(")
else:
    attempt("fetch", "other.test")
    attempt("fetch", "allowed.test")
)";
    for (const char* name : {"tree.py", "fetch.py"}) {
      std::ofstream(dir_ / name) << tree;
      fs::permissions(dir_ / name, fs::perms::owner_all | fs::perms::group_read |
                                       fs::perms::group_exec | fs::perms::others_read |
                                       fs::perms::others_exec);
    }
    std::ofstream(dir_ / "policy.json") << policy;
    const std::string out_file = (dir_ / "out.txt").string();
    const std::string err_file = (dir_ / "err.txt").string();
    const std::string cmd = "cd " + dir_.string() + " && unshare -m sh -c 'mount --bind " +
                            (dir_ / "resolv.conf").string() +
                            " /etc/resolv.conf && exec nsenter --net=" + host_.clientNs() +
                            " " SV_SUPERVISE_BIN " --audit-file " + audit() + " -p " +
                            (dir_ / "policy.json").string() + " -- " + (dir_ / "tree.py").string() +
                            " base' >" + out_file + " 2>" + err_file;
    int rc = std::system(cmd.c_str());
    *out = readAll(out_file);
    *err = readAll(err_file);
    return rc;
  }

  // The policy's switch into profile fetch and fetch's network rules.
  std::string fetchProfile(const std::string& base_network) const {
    return R"({"network": )" + base_network + R"(,
  "exec": {"switch": [{"match": ")" + (dir_ / "fetch.py").string() + R"(", "profile": "fetch"}]},
  "profiles": {"fetch": {"network": {"mode": "allowlist", "allow": [
    {"to": "other.test:)" + std::to_string(kPort) + R"(", "id": "fetch-host"}]}}}})";
  }

  // (decision, rule id, process.profile) of each audited connect to ip:kPort.
  std::vector<std::vector<std::string>> connectsTo(const std::string& ip) const {
    std::vector<std::vector<std::string>> seen;
    for (const auto& c : sv::test::auditedConnects(audit(), ip, kPort))
      seen.push_back({c.decision, c.rule, c.profile});
    return seen;
  }

  std::string audit() const { return (dir_ / "audit.jsonl").string(); }

  sv::testnet::DnsTestHost host_;
  fs::path dir_;
};

using Seen = std::vector<std::vector<std::string>>;

// Base allows allowed.test, profile fetch also other.test: fetch connects to
// both; the base, after fetch learned other.test, resolves it (its own DNS is
// proxied) but is refused, by name and by address.
TEST_F(SuperviseDns, ProfileOnlyNameConnectsFromTheProfileOnly) {
  std::string out, err;
  ASSERT_EQ(runTree(fetchProfile(R"({"mode": "allowlist", "allow": [{"to": "allowed.test:)" +
                                 std::to_string(kPort) + R"(", "id": "allowed-host"}]})"),
                    &out, &err),
            0)
      << out << "\nstderr:\n" << err;
  EXPECT_EQ(out,
            "base allowed.test 198.51.100.2 ok\n"
            "fetch other.test 198.51.100.3 ok\n"
            "fetch allowed.test 198.51.100.2 ok\n"
            "base other.test 198.51.100.3 errno 1\n"
            "base other.test 198.51.100.3 errno 1\n")
      << err;
  EXPECT_EQ(err.find("allows nothing"), std::string::npos) << err;
  const std::string all = readAll(audit());
  EXPECT_EQ(connectsTo("198.51.100.3"), (Seen{{"allow", "fetch-host", "fetch"},
                                              {"deny", "default-deny-connect", ""},
                                              {"deny", "default-deny-connect", ""}}))
      << all;
  EXPECT_EQ(connectsTo("198.51.100.2"), (Seen{{"allow", "allowed-host", ""},
                                              {"allow", "allowed-host", "fetch"}}))
      << all;
}

// The profile's name is the policy's only domain entry, over a loopback-only
// base: the proxy still runs for fetch; the base is not redirected, so it
// cannot resolve through it, and its connect by address is refused.
TEST_F(SuperviseDns, ProfileNameOverALoopbackOnlyBase) {
  std::string out, err;
  ASSERT_EQ(runTree(fetchProfile(R"({"mode": "localhost"})"), &out, &err), 0)
      << out << "\nstderr:\n" << err;
  EXPECT_EQ(out,
            "base allowed.test resolve-failed\n"
            "fetch other.test 198.51.100.3 ok\n"
            "fetch allowed.test 198.51.100.2 errno 1\n"
            "base other.test resolve-failed\n"
            "base other.test 198.51.100.3 errno 1\n")
      << err;
  EXPECT_EQ(connectsTo("198.51.100.3"), (Seen{{"allow", "fetch-host", "fetch"},
                                              {"deny", "default-deny-connect", ""}}))
      << readAll(audit());
}

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

  const auto allowed = sv::test::auditedConnects(audit, sv::testnet::kAllowedIp, kPort);
  const auto refused = sv::test::auditedConnects(audit, sv::testnet::kOtherIp, kPort);
  ASSERT_EQ(allowed.size(), 1u) << readAll(audit);
  ASSERT_EQ(refused.size(), 1u) << readAll(audit);
  EXPECT_EQ(allowed[0].decision, "allow") << readAll(audit);
  EXPECT_EQ(allowed[0].rule, "allowed-host") << readAll(audit);
  EXPECT_EQ(refused[0].decision, "deny") << readAll(audit);
  EXPECT_EQ(refused[0].errno_name, "EPERM") << readAll(audit);
}

}  // namespace
