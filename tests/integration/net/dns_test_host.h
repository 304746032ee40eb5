// DnsTestHost: the test network of the domain-entry tests, created and torn
// down by the test itself (no default route: nothing leaves the machine).
//
//   netns H ("test host"): 198.51.100.1/24 with dnsmasq on :53 answering
//            allowed.test -> 198.51.100.2 and other.test -> 198.51.100.3
//            (both addresses on H too), and a TCP listener on kPort
//            (its backlog completes connects without accept()).
//   netns C ("client"):    198.51.100.10/24, where supervised commands run.
//
// dnsmasq answers --address names with TTL 0 (its --local-ttl default), so
// the proxy's minimum TTL is what keeps an answered address allowed.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>

namespace sv::testnet {

inline constexpr char kResolver[] = "198.51.100.1";
inline constexpr char kAllowedIp[] = "198.51.100.2";
inline constexpr char kOtherIp[] = "198.51.100.3";
inline constexpr uint16_t kPort = 8443;

inline int sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

// A GTEST_SKIP reason naming the first of `tools` not in PATH, or "".
inline std::string missingTool(std::initializer_list<const char*> tools) {
  for (const char* tool : tools)
    if (sh(std::string("command -v ") + tool) != 0)
      return std::string("needs ") + tool + ": not in PATH";
  return "";
}

// A whole file ("" when it cannot be read): a supervised run's output or audit.
inline std::string readAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline bool enterNetns(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = setns(fd, CLONE_NEWNET) == 0;
  close(fd);
  return ok;
}

class DnsTestHost {
 public:
  // Why the host cannot run here (a GTEST_SKIP reason), or "" once it runs.
  // `prefix` keeps the namespaces of concurrently running test binaries apart.
  std::string up(const std::string& prefix) {
    if (geteuid() != 0) return "needs root: euid " + std::to_string(geteuid());
    if (sh("command -v dnsmasq") != 0)
      return "needs dnsmasq (Debian dnsmasq-base; tools/setup installs it): not in PATH";
    const std::string tag = std::to_string(getpid());
    h_ = prefix + "-h-" + tag;
    c_ = prefix + "-c-" + tag;
    const std::string hv = prefix + "h" + tag, cv = prefix + "c" + tag;
    pid_file_ = "/tmp/" + prefix + "-dnsmasq-" + tag + ".pid";
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
      if (sh(step) != 0) return "needs network namespaces + veth: '" + step + "' failed";
    }
    const std::string dnsmasq = "ip netns exec " + h_ +
                                " dnsmasq --conf-file=/dev/null --no-resolv --no-hosts"
                                " --listen-address=198.51.100.1 --bind-interfaces --user=nobody"
                                " --group=nogroup --pid-file=" + pid_file_ +
                                " --address=/allowed.test/198.51.100.2"
                                " --address=/other.test/198.51.100.3";
    if (sh(dnsmasq) != 0) return "dnsmasq did not start: " + dnsmasq;
    dnsmasq_ = true;
    // The listener is created inside H; the caller's thread returns to its netns.
    int own = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (own < 0 || !enterNetns(hostNs())) return "cannot enter " + hostNs();
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in any{};
    any.sin_family = AF_INET;
    any.sin_port = htons(kPort);
    bool bound = bind(listener_, reinterpret_cast<sockaddr*>(&any), sizeof any) == 0 &&
                 listen(listener_, 64) == 0;
    bool back = setns(own, CLONE_NEWNET) == 0;
    close(own);
    if (!bound || !back) return "test host listener on :" + std::to_string(kPort) + " failed";
    return "";
  }

  ~DnsTestHost() {
    if (listener_ >= 0) close(listener_);
    if (dnsmasq_) sh("kill $(cat " + pid_file_ + ")");
    std::remove(pid_file_.c_str());
    if (made_) {
      sh("ip netns del " + h_);  // takes the veth pair with it
      sh("ip netns del " + c_);
    }
  }

  std::string hostNs() const { return "/run/netns/" + h_; }
  std::string clientNs() const { return "/run/netns/" + c_; }

 private:
  std::string h_, c_, pid_file_;
  bool made_ = false, dnsmasq_ = false;
  int listener_ = -1;
};

}  // namespace sv::testnet
