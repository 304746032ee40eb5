// Domain entries end to end below the CLI: tracer::NetFilter with the DNS
// redirection and supervisor::DnsAllow as the proxy, against dnsmasq on a
// test host. A forked child in the session cgroup asks the resolver itself
// (raw DNS over UDP, connected and unconnected) and connects right after the
// answer: the allowed name's address must already be allowed (no retry, no
// sleep), another name's address is refused with EPERM.
//
// Topology: dns_test_host.h. The child and the proxy sockets are in the
// client namespace C (the test thread stays there while a test runs, as
// supervise would).
#include "supervisor/dns_allow.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "supervisor/dns_message.h"
#include "../bpf/net_event_util.h"
#include "dns_test_host.h"

namespace sv::supervisor {
namespace {

using policy::Ip6;
using testnet::enterNetns;
using testnet::kAllowedIp;
using testnet::kOtherIp;
using testnet::kPort;
using testnet::kResolver;
using tracer::NetEvent;

Ip6 ip(const char* text) { return *policy::parseIp(text); }

sockaddr_in addr4(const char* text, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, text, &a.sin_addr);
  return a;
}

// ---- what the child does ---------------------------------------------------

// Asks the resolver for `name` (A) and returns the first address, or errno
// (negated) / -1000 when no answer or a wrong source address came back.
// `connected` uses connect()+send()/recv() (glibc's way), else sendto/recvfrom.
struct Lookup {
  int err = 0;
  std::optional<Ip6> address;
  bool source_ok = false;  // the reply looked as if the resolver sent it
};

Lookup lookup(const std::string& name, bool connected) {
  Lookup out;
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return {errno};
  timeval tv{3, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in server = addr4(kResolver, 53);
  auto query = dns::buildQuery(0x4242, name, dns::kTypeA);
  if (connected) {
    if (connect(fd, reinterpret_cast<sockaddr*>(&server), sizeof server) != 0 ||
        send(fd, query->data(), query->size(), 0) < 0) {
      out.err = errno;
      close(fd);
      return out;
    }
    sockaddr_in peer{};
    socklen_t len = sizeof peer;
    getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len);
    out.source_ok = peer.sin_addr.s_addr == server.sin_addr.s_addr && peer.sin_port == htons(53);
  } else if (sendto(fd, query->data(), query->size(), 0, reinterpret_cast<sockaddr*>(&server),
                    sizeof server) < 0) {
    out.err = errno;
    close(fd);
    return out;
  }
  uint8_t buf[1500];
  sockaddr_in from{};
  socklen_t from_len = sizeof from;
  ssize_t n = recvfrom(fd, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &from_len);
  close(fd);
  if (n < 0) return {errno};
  bool from_ok = from.sin_addr.s_addr == server.sin_addr.s_addr && from.sin_port == htons(53);
  out.source_ok = connected ? out.source_ok && from_ok : from_ok;
  auto msg = dns::parse(std::span<const uint8_t>(buf, static_cast<size_t>(n)));
  if (!msg || msg->id != 0x4242 || msg->addresses.empty()) return {-1000};
  out.address = msg->addresses[0].ip;
  return out;
}

int tcpConnect(const Ip6& to, uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  std::memcpy(&a.sin_addr, &to[12], 4);
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int rc = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 ? 0 : errno;
  close(fd);
  return rc;
}

// ---- fixture ---------------------------------------------------------------

class DnsAllowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = host_.up("svd"); !why.empty()) GTEST_SKIP() << why;
    auto parent = tracer::currentCgroup2Dir();
    if (!parent.ok()) GTEST_SKIP() << "needs cgroup2: " << parent.error().message();
    std::string detail;
    auto probe = tracer::probeCgroupSockAddr(&detail);
    if (!probe.ok() || !*probe) GTEST_SKIP() << "needs cgroup sock_addr BPF: " << detail;
    own_netns_ = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(own_netns_, 0);
    ASSERT_TRUE(enterNetns(host_.clientNs()));
    waitForResolver();

    auto cg = tracer::ScratchCgroup::create(*parent, "sv-dnstest");
    ASSERT_TRUE(cg.ok()) << cg.error().message();
    cg_.emplace(std::move(*cg));
  }

  void TearDown() override {
    dns_.reset();
    filter_.reset();
    cg_.reset();
    if (own_netns_ >= 0) {
      setns(own_netns_, CLONE_NEWNET);
      close(own_netns_);
    }
  }

  // dnsmasq daemonizes before it answers; ask until it does (from C, unsupervised).
  void waitForResolver() {
    for (int i = 0; i < 50; ++i) {
      if (lookup("allowed.test", false).address) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    FAIL() << "dnsmasq on the test host does not answer";
  }

  void load(std::vector<policy::NetHost> hosts) {
    policy::NetworkPlan plan;
    plan.mode = policy::NetworkMode::Allowlist;
    plan.hosts = hosts;
    tracer::NetFilterOptions options;
    options.dns_proxy = true;
    options.port_ranges_reserve = 2;
    auto f = tracer::NetFilter::load(plan, cg_->fd(), options);
    ASSERT_TRUE(f.ok()) << f.error().message();
    filter_.emplace(std::move(*f));
    DnsAllowOptions dns_options;
    dns_options.hosts = hosts;
    dns_options.resolvers = {ip(kResolver)};
    auto d = DnsAllow::start(*filter_, dns_options);
    ASSERT_TRUE(d.ok()) << d.error().message();
    dns_ = std::move(*d);
  }

  // Runs the proxy's loop until `done` or the timeout.
  template <typename Done>
  void pump(Done done, std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    auto until = std::chrono::steady_clock::now() + timeout;
    std::vector<pollfd> fds;
    for (int fd : dns_->fds()) fds.push_back({fd, POLLIN, 0});
    while (!done() && std::chrono::steady_clock::now() < until) {
      if (poll(fds.data(), fds.size(), 10) <= 0) continue;
      for (auto& p : fds)
        if (p.revents) dns_->onReadable(p.fd);
    }
  }

  // Forks a child into the cgroup that runs `attempts`, serving its DNS
  // queries meanwhile; returns the child's results.
  template <typename Fn>
  std::vector<int> runChild(Fn attempts) {
    int pipefd[2];
    EXPECT_EQ(pipe2(pipefd, O_CLOEXEC), 0);
    pid_t pid = fork();
    if (pid == 0) {
      close(pipefd[0]);
      if (!cg_->addProcess(getpid()).ok()) _exit(93);
      std::vector<int> results = attempts();
      ssize_t n = write(pipefd[1], results.data(), results.size() * sizeof(int));
      _exit(n == static_cast<ssize_t>(results.size() * sizeof(int)) ? 0 : 94);
    }
    close(pipefd[1]);
    int status = 0;
    bool reaped = false;
    pump([&] {
      reaped = waitpid(pid, &status, WNOHANG) == pid;
      return reaped;
    }, std::chrono::milliseconds(20000));
    if (!reaped) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    }
    std::vector<int> results;
    int v;
    while (read(pipefd[0], &v, sizeof v) == sizeof v) results.push_back(v);
    close(pipefd[0]);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
    child_pid_ = pid;
    return results;
  }

  std::vector<NetEvent> childEvents() { return tracer::testing::eventsOf(*filter_, child_pid_); }

  static int count(const std::vector<NetEvent>& evs, uint8_t op, const Ip6& addr, uint16_t port) {
    int n = 0;
    for (const auto& e : evs) n += e.op == op && e.addr == addr && e.port == port;
    return n;
  }
  static const NetEvent* find(const std::vector<NetEvent>& evs, uint8_t op, const Ip6& addr,
                              uint16_t port) {
    return tracer::testing::findEvent(evs, op, addr, port);
  }

  int own_netns_ = -1;
  testnet::DnsTestHost host_;  // declared first: torn down last
  std::optional<tracer::ScratchCgroup> cg_;
  std::optional<tracer::NetFilter> filter_;
  std::unique_ptr<DnsAllow> dns_;
  pid_t child_pid_ = -1;
};

const std::vector<policy::NetHost> kAllowed = {{"allowed.test", kPort, kPort, "net.allowed"}};

TEST_F(DnsAllowTest, AnsweredAddressIsAllowedBeforeTheAnswerArrives) {
  load(kAllowed);
  auto r = runChild([] {
    Lookup a = lookup("allowed.test", /*connected=*/false);
    // Straight after the answer: no sleep, no retry.
    int allowed = a.address ? tcpConnect(*a.address, kPort) : -2000;
    int other_port = a.address ? tcpConnect(*a.address, kPort + 1) : -2000;
    Lookup o = lookup("other.test", /*connected=*/true);
    int other = o.address ? tcpConnect(*o.address, kPort) : -2000;
    return std::vector<int>{a.err,         a.source_ok, a.address == ip(kAllowedIp),
                            allowed,       other_port,  o.err,
                            o.source_ok,   o.address == ip(kOtherIp), other};
  });
  ASSERT_EQ(r.size(), 9u);
  EXPECT_EQ(r[0], 0) << strerror(r[0]);
  EXPECT_EQ(r[1], 1) << "recvfrom must show the resolver, not the proxy";
  EXPECT_EQ(r[2], 1);
  EXPECT_EQ(r[3], 0) << strerror(r[3]);
  EXPECT_EQ(r[4], EPERM) << strerror(r[4]);
  EXPECT_EQ(r[5], 0) << strerror(r[5]);
  EXPECT_EQ(r[6], 1) << "getpeername/recvfrom must show the resolver";
  EXPECT_EQ(r[7], 1);
  EXPECT_EQ(r[8], EPERM) << strerror(r[8]);

  auto evs = childEvents();
  // Each attempt once, with its rule.
  EXPECT_EQ(count(evs, tracer::kNetOpConnect, ip(kAllowedIp), kPort), 1);
  const NetEvent* e = find(evs, tracer::kNetOpConnect, ip(kAllowedIp), kPort);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->decision, tracer::kNetAllow);
  EXPECT_EQ(filter_->ruleIdAt(e->rule_index), "net.allowed");
  EXPECT_EQ(count(evs, tracer::kNetOpConnect, ip(kOtherIp), kPort), 1);
  e = find(evs, tracer::kNetOpConnect, ip(kOtherIp), kPort);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->decision, tracer::kNetDeny);
  EXPECT_EQ(e->rule_index, tracer::kNetRuleNone);
  // The queries: an unconnected sendto and a UDP connect, both redirected.
  e = find(evs, tracer::kNetOpSendmsg, ip(kResolver), 53);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->decision, tracer::kNetAllow);
  EXPECT_EQ(e->reason, tracer::kNetReasonDnsProxy);
  EXPECT_EQ(filter_->ruleIdAt(e->rule_index), kDnsProxyRuleId);
  e = find(evs, tracer::kNetOpConnect, ip(kResolver), 53);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->reason, tracer::kNetReasonDnsProxy);
  EXPECT_EQ(dns_->allowedCount(), 1u);
}

TEST_F(DnsAllowTest, AllowedAddressExpiresAfterItsTtl) {
  load(kAllowed);
  std::vector<DnsAllow::Learned> learned;
  dns_->setOnLearned([&](const DnsAllow::Learned& l) { learned.push_back(l); });
  auto r = runChild([] {
    Lookup a = lookup("allowed.test", true);
    return std::vector<int>{a.address ? tcpConnect(*a.address, kPort) : -2000};
  });
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0], 0) << strerror(r[0]);
  ASSERT_EQ(learned.size(), 1u);
  EXPECT_EQ(learned[0].name, "allowed.test");
  EXPECT_EQ(learned[0].ip, ip(kAllowedIp));
  EXPECT_EQ(learned[0].rule_id, "net.allowed");
  EXPECT_TRUE(learned[0].status.ok());

  // dnsmasq answered with TTL 0; the 60 s floor keeps it until then.
  dns_->expire(DnsAllow::Clock::now() + std::chrono::seconds(30));
  EXPECT_EQ(dns_->allowedCount(), 1u);
  dns_->expire(DnsAllow::Clock::now() + std::chrono::seconds(61));
  EXPECT_EQ(dns_->allowedCount(), 0u);
  r = runChild([] { return std::vector<int>{tcpConnect(ip(kAllowedIp), kPort)}; });
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0], EPERM) << strerror(r[0]);
}

TEST_F(DnsAllowTest, ResolveNowAllowsBeforeTheTreeAsks) {
  load(kAllowed);
  dns_->resolveNow();
  pump([&] { return dns_->allowedCount() > 0; });
  ASSERT_EQ(dns_->allowedCount(), 1u);
  auto r = runChild([] {
    return std::vector<int>{tcpConnect(ip(kAllowedIp), kPort), tcpConnect(ip(kOtherIp), kPort)};
  });
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], 0) << strerror(r[0]);
  EXPECT_EQ(r[1], EPERM) << strerror(r[1]);
}

TEST_F(DnsAllowTest, NonDnsDatagramsToTheResolverAreNotForwarded) {
  load(kAllowed);
  auto r = runChild([] {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    timeval tv{0, 500000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in server = addr4(kResolver, 53);
    const char junk[] = "not a dns message at all";
    int sent = sendto(fd, junk, sizeof junk, 0, reinterpret_cast<sockaddr*>(&server),
                      sizeof server) < 0 ? errno : 0;
    char buf[512];
    int got = recv(fd, buf, sizeof buf, 0) < 0 ? errno : 0;
    close(fd);
    return std::vector<int>{sent, got};
  });
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], 0) << strerror(r[0]);  // accepted by the proxy...
  EXPECT_EQ(r[1], EAGAIN) << strerror(r[1]);  // ...and dropped: no reply at all
}

}  // namespace
}  // namespace sv::supervisor
