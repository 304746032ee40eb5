// DnsAllow: the DNS proxy behind domain entries; see dns_allow.h.
//
// Every socket is non-blocking and read until EAGAIN, so one readiness
// callback drains all queued datagrams. Nothing here throws across the loop:
// failures drop the one datagram (the tree's resolver retries or times out).
#include "supervisor/net/dns_allow.h"

#include <arpa/inet.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "shared/net_abi.h"
#include "supervisor/net/dns_message.h"

namespace sv::supervisor {
namespace {

constexpr uint16_t kDnsPort = 53;
// Larger than any EDNS0 UDP payload a client advertises in practice.
constexpr size_t kMaxDatagram = 65535;

bool isV4(const policy::Ip6& ip) {
  static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(ip.data(), kPrefix, 12) == 0;
}

socklen_t toSockaddr(const policy::Ip6& ip, uint16_t port, sockaddr_storage* ss) {
  *ss = {};
  if (isV4(ip)) {
    auto* a = reinterpret_cast<sockaddr_in*>(ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    std::memcpy(&a->sin_addr, &ip[12], 4);
    return sizeof(*a);
  }
  auto* a = reinterpret_cast<sockaddr_in6*>(ss);
  a->sin6_family = AF_INET6;
  a->sin6_port = htons(port);
  std::memcpy(&a->sin6_addr, ip.data(), 16);
  return sizeof(*a);
}

// The proxy's address for a resolver of the same family (see redirectDns).
policy::Ip6 loopbackFor(const policy::Ip6& resolver) {
  return *policy::parseIp(isV4(resolver) ? "127.0.0.1" : "::1");
}

Result<UniqueFd> udpSocket(const policy::Ip6& ip, uint16_t port, bool connect_to) {
  sockaddr_storage ss;
  socklen_t len = toSockaddr(ip, port, &ss);
  UniqueFd fd(::socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) return errnoError("dns proxy: socket");
  if (ss.ss_family == AF_INET6) {
    int one = 1;
    ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  }
  int rc = connect_to ? ::connect(fd.get(), reinterpret_cast<sockaddr*>(&ss), len)
                      : ::bind(fd.get(), reinterpret_cast<sockaddr*>(&ss), len);
  if (rc != 0)
    return errnoError(std::string("dns proxy: ") + (connect_to ? "connect " : "bind ") +
                      policy::ipToString(ip));
  return fd;
}

Result<uint16_t> localPort(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0)
    return errnoError("dns proxy: getsockname");
  return ntohs(ss.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&ss)->sin_port
                                       : reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
}

}  // namespace

std::vector<policy::Ip6> readResolvConf(const std::string& path) {
  std::vector<policy::Ip6> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string key, value;
    if (!(words >> key >> value) || key != "nameserver") continue;
    auto ip = policy::parseIp(value);
    if (ip && std::find(out.begin(), out.end(), *ip) == out.end()) out.push_back(*ip);
  }
  return out;
}

bool anyHosts(const policy::NetworkPlan& base,
              const std::map<std::string, policy::NetworkPlan>& profiles) {
  if (!base.hosts.empty()) return true;
  for (const auto& [_, plan] : profiles)
    if (!plan.hosts.empty()) return true;
  return false;
}

void addDnsProxyOptions(const policy::NetworkPlan& base,
                        const std::map<std::string, policy::NetworkPlan>& profiles,
                        tracer::NetFilterOptions& options) {
  if (!anyHosts(base, profiles)) return;
  options.dns_proxy = true;
}

DnsAllowOptions dnsAllowOptionsFor(const policy::NetworkPlan& base,
                                   const std::map<std::string, policy::NetworkPlan>& profiles) {
  DnsAllowOptions options;
  options.hosts = base.hosts;
  for (const auto& [name, plan] : profiles)
    if (!plan.hosts.empty()) options.profile_hosts[name] = plan.hosts;
  options.resolvers = readResolvConf();
  return options;
}

DnsAllow::DnsAllow(tracer::NetFilter& net, DnsAllowOptions options)
    : net_(net), options_(std::move(options)) {
  uint32_t seed = 0;
  if (::getrandom(&seed, sizeof seed, 0) != sizeof seed) seed = static_cast<uint32_t>(::getpid());
  rng_.seed(seed);
}

Result<std::unique_ptr<DnsAllow>> DnsAllow::start(tracer::NetFilter& net, DnsAllowOptions options) {
  std::unique_ptr<DnsAllow> self(new DnsAllow(net, std::move(options)));
  auto addRules = [&](const std::string& profile, const std::vector<policy::NetHost>& hosts) {
    auto plan = net.planIndex(profile);
    if (!plan) return Status(plan.error());
    for (const auto& h : hosts)
      self->rules_.push_back(
          {h.name, h.port_lo, h.port_hi, net.addRuleId(h.rule_id), h.rule_id, *plan, profile});
    return Status();
  };
  SV_TRY(addRules("", self->options_.hosts));
  for (const auto& [profile, hosts] : self->options_.profile_hosts)
    SV_TRY(addRules(profile, hosts));
  const uint32_t proxy_rule = net.addRuleId(kDnsProxyRuleId);
  for (const auto& ip : self->options_.resolvers) {
    Resolver r;
    r.ip = ip;
    const policy::Ip6 proxy_ip = loopbackFor(ip);
    auto proxy = udpSocket(proxy_ip, 0, false);
    if (!proxy) return proxy.error();
    auto upstream = udpSocket(ip, kDnsPort, true);
    if (!upstream) return upstream.error();
    auto proxy_port = localPort(proxy->get());
    if (!proxy_port) return proxy_port.error();
    r.proxy = std::move(*proxy);
    r.upstream = std::move(*upstream);
    SV_TRY(net.redirectDns(ip, kDnsPort, proxy_ip, *proxy_port, proxy_rule));
    self->resolvers_.push_back(std::move(r));
  }
  return self;
}

std::vector<int> DnsAllow::fds() const {
  std::vector<int> out;
  for (const auto& r : resolvers_) {
    out.push_back(r.proxy.get());
    out.push_back(r.upstream.get());
  }
  return out;
}

void DnsAllow::onReadable(int fd) {
  for (size_t i = 0; i < resolvers_.size(); ++i) {
    if (resolvers_[i].proxy.get() == fd) onQuery(i);
    if (resolvers_[i].upstream.get() == fd) onAnswer(i);
  }
}

bool DnsAllow::forward(size_t resolver, std::vector<uint8_t>& query, Pending pending) {
  if (pending_.size() >= 4096) expire(Clock::now());
  if (pending_.size() >= 4096) return false;  // a flood: drop rather than grow
  uint16_t id;
  do {
    id = static_cast<uint16_t>(rng_());
  } while (pending_.count(id));
  dns::writeId(query, id);
  if (::send(resolvers_[resolver].upstream.get(), query.data(), query.size(), 0) < 0) return false;
  pending.resolver = resolver;
  pending.deadline = Clock::now() + options_.query_timeout;
  pending_.emplace(id, std::move(pending));
  return true;
}

void DnsAllow::onQuery(size_t resolver) {
  std::vector<uint8_t> buf(kMaxDatagram);
  while (true) {
    Pending p;
    p.client_len = sizeof p.client;
    ssize_t n = ::recvfrom(resolvers_[resolver].proxy.get(), buf.data(), buf.size(), 0,
                           reinterpret_cast<sockaddr*>(&p.client), &p.client_len);
    if (n < 0) return;  // EAGAIN: drained
    std::vector<uint8_t> query(buf.begin(), buf.begin() + n);
    // Only well-formed queries travel on: the redirection must not turn the
    // resolver into a channel for arbitrary datagrams.
    auto msg = dns::parse(query);
    if (!msg || msg->response) continue;
    p.client_id = msg->id;
    p.qname = msg->qname;
    forward(resolver, query, std::move(p));
  }
}

void DnsAllow::onAnswer(size_t resolver) {
  std::vector<uint8_t> buf(kMaxDatagram);
  while (true) {
    // A connected socket: the kernel accepts datagrams from the resolver only.
    ssize_t n = ::recv(resolvers_[resolver].upstream.get(), buf.data(), buf.size(), 0);
    if (n < 0) return;
    std::vector<uint8_t> answer(buf.begin(), buf.begin() + n);
    auto it = pending_.find(dns::readId(answer));
    if (it == pending_.end() || it->second.resolver != resolver) continue;
    Pending p = std::move(it->second);
    pending_.erase(it);
    // Allow first, answer second: see the ordering note in dns_allow.h.
    learn(p.qname, answer, Clock::now());
    if (p.client.ss_family == 0) continue;  // our own query
    dns::writeId(answer, p.client_id);
    (void)::sendto(resolvers_[resolver].proxy.get(), answer.data(), answer.size(), 0,
                   reinterpret_cast<sockaddr*>(&p.client), p.client_len);
  }
}

void DnsAllow::learn(const std::string& qname, const std::vector<uint8_t>& answer,
                     Clock::time_point now) {
  auto msg = dns::parse(answer);
  // An answer to another question than the one asked allows nothing.
  if (!msg || !msg->response || msg->qname != qname || msg->addresses.empty()) return;
  // Each plan naming the host gets the address with its own ports and rule;
  // no other plan does.
  for (const auto& rule : rules_) {
    if (rule.name != qname) continue;
    for (const auto& a : msg->addresses) {
      Learned learned{qname, a.ip, a.ttl, rule.rule_id, rule.plan, rule.profile, {}};
      learned.status = net_.allow(rule.plan, a.ip, rule.port_lo, rule.port_hi, rule.rule_index);
      if (learned.status) {
        auto ttl = std::max<std::chrono::seconds>(std::chrono::seconds(a.ttl), options_.min_ttl);
        auto& until = expiry_[{rule.plan, a.ip, rule.port_lo, rule.port_hi, rule.rule_index}];
        until = std::max(until, now + ttl);
      }
      if (on_learned_) on_learned_(learned);
    }
  }
}

void DnsAllow::expire(Clock::time_point now) {
  for (auto it = pending_.begin(); it != pending_.end();)
    it = it->second.deadline <= now ? pending_.erase(it) : std::next(it);
  for (auto it = expiry_.begin(); it != expiry_.end();) {
    if (it->second > now) {
      ++it;
      continue;
    }
    const auto& [plan, ip, lo, hi, rule] = it->first;
    (void)net_.revoke(plan, ip, lo, hi, rule);
    it = expiry_.erase(it);
  }
}

size_t DnsAllow::allowedCount(uint32_t plan) const {
  return static_cast<size_t>(std::count_if(expiry_.begin(), expiry_.end(), [plan](const auto& e) {
    return std::get<0>(e.first) == plan;
  }));
}

void DnsAllow::resolveNow() {
  if (resolvers_.empty()) return;
  std::vector<std::string> names;
  for (const auto& r : rules_)
    if (std::find(names.begin(), names.end(), r.name) == names.end()) names.push_back(r.name);
  for (const auto& name : names) {
    for (uint16_t type : {dns::kTypeA, dns::kTypeAaaa}) {
      auto query = dns::buildQuery(0, name, type);
      if (!query) continue;
      Pending p;
      p.qname = name;
      forward(0, *query, std::move(p));
    }
  }
}

}  // namespace sv::supervisor
