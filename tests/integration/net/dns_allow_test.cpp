// Domain entries end to end below the CLI: tracer::NetFilter with the DNS
// redirection and supervisor::DnsAllow as the proxy, against dnsmasq on a
// test host. A forked child in the session cgroup asks the resolver itself
// (raw DNS over UDP, connected and unconnected) and connects right after the
// answer: the allowed name's address must already be allowed (no retry, no
// sleep), another name's address is refused with EPERM. With per-profile
// plans, children in a profile's cgroup (a child cgroup bound to the plan, as
// the session's profile-<name>) show that a name only the profile lists is
// learned into that plan alone.
//
// Topology: dns_test_host.h. The child and the proxy sockets are in the
// client namespace C (the test thread stays there while a test runs, as
// supervise would).
#include "supervisor/net/dns_allow.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "supervisor/net/dns_message.h"
#include "tracer/bpf/bpf_probes.h"
#include "tracer/cgroup.h"
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
    auto parent = tracer::ownCgroupPath();
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
    profile_cgs_.clear();  // children before their parent
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
    load(plan, {});
  }

  // The base plan and profiles' plans, wired as the session does: one
  // NetFilter, a child cgroup per profile bound to its plan, DnsAllow with
  // every plan's hosts (dnsAllowOptionsFor, resolvers replaced by the test's).
  void load(const policy::NetworkPlan& base,
            const std::map<std::string, policy::NetworkPlan>& profiles) {
    tracer::NetFilterOptions options;
    addDnsProxyOptions(base, profiles, options);
    ASSERT_TRUE(options.dns_proxy);
    auto f = tracer::NetFilter::load(base, profiles, cg_->fd(), options);
    ASSERT_TRUE(f.ok()) << f.error().message();
    filter_.emplace(std::move(*f));
    for (const auto& [name, _] : profiles) {
      auto child = tracer::ScratchCgroup::create(cg_->path(), "profile-" + name);
      ASSERT_TRUE(child.ok()) << child.error().message();
      auto id = tracer::cgroupId(child->path());
      ASSERT_TRUE(id.ok()) << id.error().message();
      ASSERT_TRUE(filter_->bindCgroup(*id, name).ok());
      profile_cgs_.emplace(name, std::move(*child));
    }
    DnsAllowOptions dns_options = dnsAllowOptionsFor(base, profiles);
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

  // Forks a child into the cgroup (of `profile`, "" = the session's) that
  // runs `attempts`, serving its DNS queries meanwhile; returns its results.
  template <typename Fn>
  std::vector<int> runChild(Fn attempts, const std::string& profile = "") {
    const tracer::ScratchCgroup& cg = profile.empty() ? *cg_ : profile_cgs_.at(profile);
    int pipefd[2];
    EXPECT_EQ(pipe2(pipefd, O_CLOEXEC), 0);
    pid_t pid = fork();
    if (pid == 0) {
      close(pipefd[0]);
      if (!cg.addProcess(getpid()).ok()) _exit(93);
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
  std::map<std::string, tracer::ScratchCgroup> profile_cgs_;
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

// A profile's plan (what compile() makes of profile `git` allowing
// other.test:PORT over a base allowing allowed.test:PORT): its own host
// first, then the base's.
policy::NetworkPlan allowlistOf(std::vector<policy::NetHost> hosts) {
  policy::NetworkPlan plan;
  plan.mode = policy::NetworkMode::Allowlist;
  plan.hosts = std::move(hosts);
  std::sort(plan.hosts.begin(), plan.hosts.end());
  return plan;
}
const policy::NetHost kGitOther{"other.test", kPort, kPort, "git.other"};

// A name only profile git lists: learned into git's plan alone (with git's
// rule id), so git's process connects and the base's and another profile's
// are refused with EPERM, even after git learned it. A base name is learned
// into every plan that holds it. Expiry withdraws each plan's entry.
TEST_F(DnsAllowTest, ProfileOnlyNameIsAllowedInThatProfilesPlanAlone) {
  const auto base = allowlistOf(kAllowed);
  load(base, {{"git", allowlistOf({kGitOther, kAllowed[0]})}, {"plain", allowlistOf(kAllowed)}});
  const uint32_t git = *filter_->planIndex("git"), plain = *filter_->planIndex("plain");
  std::vector<DnsAllow::Learned> learned;
  dns_->setOnLearned([&](const DnsAllow::Learned& l) { learned.push_back(l); });

  auto g = runChild([] {
    Lookup o = lookup("other.test", false);
    Lookup a = lookup("allowed.test", true);
    return std::vector<int>{o.address == ip(kOtherIp),
                            o.address ? tcpConnect(*o.address, kPort) : -2000,
                            a.address ? tcpConnect(*a.address, kPort) : -2000};
  }, "git");
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0], 1);
  EXPECT_EQ(g[1], 0) << "git's own name: " << strerror(g[1]);
  EXPECT_EQ(g[2], 0) << "the base's name in git: " << strerror(g[2]);
  auto evs = childEvents();
  const NetEvent* e = find(evs, tracer::kNetOpConnect, ip(kOtherIp), kPort);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->decision, tracer::kNetAllow);
  EXPECT_EQ(e->plan, git);
  EXPECT_EQ(filter_->planProfile(e->plan), "git");
  EXPECT_EQ(filter_->ruleIdAt(e->rule_index), "git.other");

  // other.test is learned (into git), yet the base and plain stay refused;
  // the base may still resolve it (its plan has domain entries, so its DNS
  // goes through the proxy) but not connect.
  auto b = runChild([] {
    Lookup o = lookup("other.test", false);
    Lookup a = lookup("allowed.test", false);
    return std::vector<int>{tcpConnect(ip(kOtherIp), kPort), o.address == ip(kOtherIp),
                            a.address ? tcpConnect(*a.address, kPort) : -2000};
  });
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0], EPERM) << "git's name from the base: " << strerror(b[0]);
  EXPECT_EQ(b[1], 1);
  EXPECT_EQ(b[2], 0) << "the base's own name: " << strerror(b[2]);
  evs = childEvents();
  e = find(evs, tracer::kNetOpConnect, ip(kOtherIp), kPort);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->decision, tracer::kNetDeny);
  EXPECT_EQ(e->plan, tracer::kNetPlanBase);
  e = find(evs, tracer::kNetOpConnect, ip(kAllowedIp), kPort);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(filter_->ruleIdAt(e->rule_index), "net.allowed");

  auto p = runChild([] { return std::vector<int>{tcpConnect(ip(kOtherIp), kPort)}; }, "plain");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0], EPERM) << "git's name from profile plain: " << strerror(p[0]);

  // Bookkeeping: other.test in git only; allowed.test in all three plans.
  EXPECT_EQ(dns_->allowedCount(tracer::kNetPlanBase), 1u);
  EXPECT_EQ(dns_->allowedCount(git), 2u);
  EXPECT_EQ(dns_->allowedCount(plain), 1u);
  int other_learned = 0;
  for (const auto& l : learned) {
    EXPECT_TRUE(l.status.ok()) << l.name << ": " << l.status.error().message();
    if (l.name != "other.test") continue;
    ++other_learned;
    EXPECT_EQ(l.plan, git);
    EXPECT_EQ(l.profile, "git");
    EXPECT_EQ(l.rule_id, "git.other");
  }
  EXPECT_GE(other_learned, 1);  // once per answer (git's and the base's query)

  // Expiry withdraws the entry from each plan it was added to.
  dns_->expire(DnsAllow::Clock::now() + std::chrono::seconds(61));
  EXPECT_EQ(dns_->allowedCount(), 0u);
  g = runChild([] {
    return std::vector<int>{tcpConnect(ip(kOtherIp), kPort), tcpConnect(ip(kAllowedIp), kPort)};
  }, "git");
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0], EPERM) << strerror(g[0]);
  EXPECT_EQ(g[1], EPERM) << strerror(g[1]);
}

// A plan without domain entries (here the base, loopback only) is not
// redirected: its UDP to the resolver is judged like any datagram (EPERM),
// and it cannot send to the proxy socket on loopback either (the proxy
// would be a DNS path its policy lacks). The profile's DNS is proxied.
TEST_F(DnsAllowTest, PlanWithoutHostsGetsNoDnsThroughTheProxy) {
  policy::NetworkPlan base;
  base.mode = policy::NetworkMode::Localhost;
  std::string err;
  base.entries = {{*policy::Cidr::parse("127.0.0.0/8", &err), 0, 65535, "loopback"}};
  load(base, {{"git", allowlistOf({kGitOther})}});
  sockaddr_in proxy{};
  socklen_t len = sizeof proxy;
  ASSERT_EQ(getsockname(dns_->fds()[0], reinterpret_cast<sockaddr*>(&proxy), &len), 0);
  ASSERT_EQ(proxy.sin_family, AF_INET);
  const uint16_t proxy_port = ntohs(proxy.sin_port);

  auto b = runChild([proxy_port] {
    Lookup via_resolver = lookup("other.test", false);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    auto query = dns::buildQuery(0x4243, "other.test", dns::kTypeA);
    auto sendTo = [&](const char* to) {
      sockaddr_in a = addr4(to, proxy_port);
      return sendto(fd, query->data(), query->size(), 0, reinterpret_cast<sockaddr*>(&a),
                    sizeof a) < 0 ? errno : 0;
    };
    int direct = sendTo("127.0.0.1");
    int unspec = sendTo("0.0.0.0");  // reaches loopback too
    sockaddr_in a = addr4("127.0.0.1", proxy_port);
    int connected = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 ? 0 : errno;
    close(fd);
    return std::vector<int>{via_resolver.err, direct, unspec, connected,
                            tcpConnect(ip(kOtherIp), kPort)};
  });
  ASSERT_EQ(b.size(), 5u);
  EXPECT_EQ(b[0], EPERM) << "the base's query to the resolver: " << strerror(b[0]);
  EXPECT_EQ(b[1], EPERM) << "the base's datagram straight to the proxy: " << strerror(b[1]);
  EXPECT_EQ(b[2], EPERM) << "...to 0.0.0.0:proxy: " << strerror(b[2]);
  EXPECT_EQ(b[3], EPERM) << "UDP connect to the proxy: " << strerror(b[3]);
  EXPECT_EQ(b[4], EPERM) << strerror(b[4]);
  auto evs = childEvents();
  const NetEvent* e = find(evs, tracer::kNetOpSendmsg, ip(kResolver), 53);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->decision, tracer::kNetDeny);
  EXPECT_NE(e->reason, tracer::kNetReasonDnsProxy);
  e = find(evs, tracer::kNetOpSendmsg, ip("127.0.0.1"), proxy_port);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->decision, tracer::kNetDeny);
  EXPECT_EQ(e->reason, tracer::kNetReasonDnsProxy);

  auto g = runChild([] {
    Lookup o = lookup("other.test", true);
    return std::vector<int>{o.err, o.source_ok, o.address ? tcpConnect(*o.address, kPort) : -2000};
  }, "git");
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0], 0) << strerror(g[0]);
  EXPECT_EQ(g[1], 1);
  EXPECT_EQ(g[2], 0) << strerror(g[2]);
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
