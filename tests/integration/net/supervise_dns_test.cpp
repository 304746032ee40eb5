// Domain entries through the real binary: `supervise` runs python3 in a
// network namespace whose resolv.conf names a dnsmasq on a test host, under
// a policy that allows `allowed.test:PORT` only. The named host connects;
// other.test resolves too, but its address is refused with EPERM; each
// attempt is one audit event with its rule id.
//
// Topology (created here; no default route, nothing leaves the machine):
//   netns H: 198.51.100.1/24 (dnsmasq :53), .2 and .3 (TCP listener on kPort)
//   netns C: 198.51.100.10/24, entered with nsenter --net; a private mount
//            namespace (unshare -m) binds a resolv.conf naming 198.51.100.1
//            over /etc/resolv.conf for both supervise (its proxy's resolvers)
//            and the command (glibc). Not `ip netns exec`: it remounts /sys
//            for the namespace, and the cgroup2 mount under it disappears.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr int kPort = 8443;

int sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool enterNetns(int fd) { return setns(fd, CLONE_NEWNET) == 0; }

class SuperviseDns : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root: euid " << geteuid();
    if (sh("command -v dnsmasq") != 0)
      GTEST_SKIP() << "needs dnsmasq (Debian dnsmasq-base; tools/setup installs it): not in PATH";
    for (const char* tool : {"/usr/bin/python3", "unshare", "nsenter"})
      if (sh(std::string("command -v ") + tool) != 0) GTEST_SKIP() << "needs " << tool << ": not in PATH";
    std::string tag = std::to_string(getpid());
    h_ = "sve2d-h-" + tag;
    c_ = "sve2d-c-" + tag;
    dir_ = fs::temp_directory_path() / ("sv-dns-e2e-" + tag);
    fs::create_directories(dir_);
    std::string hv = "sveh" + tag, cv = "svec" + tag;
    made_ = true;
    for (const std::string& step : {
             "ip netns add " + h_, "ip netns add " + c_,
             "ip link add " + hv + " netns " + h_ + " type veth peer name " + cv + " netns " + c_,
             "ip -n " + h_ + " link set lo up", "ip -n " + c_ + " link set lo up",
             "ip -n " + h_ + " addr add 198.51.100.1/24 dev " + hv,
             "ip -n " + h_ + " addr add 198.51.100.2/32 dev " + hv,
             "ip -n " + h_ + " addr add 198.51.100.3/32 dev " + hv,
             "ip -n " + c_ + " addr add 198.51.100.10/24 dev " + cv,
             "ip -n " + h_ + " link set " + hv + " up", "ip -n " + c_ + " link set " + cv + " up"}) {
      if (sh(step) != 0) GTEST_SKIP() << "needs network namespaces + veth: '" << step << "' failed";
    }
    std::ofstream(dir_ / "resolv.conf") << "nameserver 198.51.100.1\n";
    pid_file_ = dir_ / "dnsmasq.pid";
    ASSERT_EQ(sh("ip netns exec " + h_ +
                 " dnsmasq --conf-file=/dev/null --no-resolv --no-hosts"
                 " --listen-address=198.51.100.1 --bind-interfaces --user=nobody --group=nogroup"
                 " --pid-file=" + pid_file_ +
                 " --address=/allowed.test/198.51.100.2 --address=/other.test/198.51.100.3"),
              0);
    dnsmasq_ = true;

    // The test host's listener: the backlog completes connects without accept().
    int own = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    int host = open(("/run/netns/" + h_).c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_TRUE(own >= 0 && host >= 0 && enterNetns(host));
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in any{};
    any.sin_family = AF_INET;
    any.sin_port = htons(kPort);
    int one = 1;
    setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    bool bound = bind(listener_, reinterpret_cast<sockaddr*>(&any), sizeof any) == 0 &&
                 listen(listener_, 64) == 0;
    EXPECT_TRUE(enterNetns(own));
    close(own);
    close(host);
    ASSERT_TRUE(bound);
  }

  void TearDown() override {
    if (listener_ >= 0) close(listener_);
    if (dnsmasq_) sh("kill $(cat " + pid_file_ + ")");
    if (made_) {
      sh("ip netns del " + h_);
      sh("ip netns del " + c_);
    }
    fs::remove_all(dir_);
  }

  std::string h_, c_, pid_file_;
  fs::path dir_;
  bool made_ = false, dnsmasq_ = false;
  int listener_ = -1;
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
                    (dir_ / "resolv.conf").string() + " /etc/resolv.conf && exec nsenter --net=/run/netns/" +
                    c_ + " " SV_SUPERVISE_BIN " --audit-file " + audit + " -p " + policy +
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
