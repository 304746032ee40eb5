// DnsAllow: domain entries of network.allow ("github.com:22") enforced
// through the addresses the tree's own DNS answers give for them.
//
// How: the cgroup programs redirect the tree's UDP to each resolver of
// /etc/resolv.conf to a proxy socket of this class (on loopback), and show
// the resolver's address to the tree on recvmsg/getpeername (see
// tracer::NetFilter::redirectDns). The proxy forwards each well-formed query
// to the real resolver, parses the answer (dns_message.h) and, when the
// question is an allowed host name, adds every A/AAAA address the answer
// gives for it (directly or through CNAMEs) to the kernel allowlist with the
// host's ports and rule id, for the record's TTL (at least min_ttl). Each
// network plan (the base's, each profile's) is its own allowlist: an address
// is added to exactly the plans whose hosts name it, with that plan's ports
// and rule id, so a name only profile `git` lists opens nothing for the base
// or another profile (a profile's plan holds the base's hosts too). Only
// then is the answer passed to the tree: the connect that follows an answer
// always finds its addresses allowed, with no race to lose, because the
// tree cannot have the address before the map holds it.
//
// At start, resolveNow() asks the first resolver for every host (A and
// AAAA), so addresses a program learned elsewhere (a cache) work too while
// the answer's TTL lasts.
//
// Limits (docs/network.md): names resolved without the system resolvers
// (DNS over HTTPS/TLS, a resolver the tree names itself, hard-coded
// addresses) allow nothing; answers over TCP (truncated UDP answers) are
// not observed; an address shared by an allowed and another name (CDNs) is
// allowed for both.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "policy/cidr.h"
#include "policy/compile.h"
#include "tracer/bpf/net_filter.h"

namespace sv::supervisor {

// Rule id of the redirected queries' allow events.
inline constexpr char kDnsProxyRuleId[] = "network.dns-resolver";

// The nameserver addresses of a resolv.conf (port 53), in file order; lines
// that are not a literal address (e.g. fe80::1%eth0) are skipped.
std::vector<policy::Ip6> readResolvConf(const std::string& path = "/etc/resolv.conf");

struct DnsAllowOptions {
  std::vector<policy::NetHost> hosts;  // the base plan's
  // Each profile's plan's hosts (its own, then the base's, as compile()
  // puts them), by profile name; the NetFilter must hold a plan for each.
  std::map<std::string, std::vector<policy::NetHost>> profile_hosts;
  std::vector<policy::Ip6> resolvers;  // port 53 each
  // Programs cache answers beyond their TTL (and resolvers answer local
  // names with TTL 0): an address stays allowed at least this long.
  std::chrono::seconds min_ttl{60};
  // A query the resolver has not answered by then is forgotten.
  std::chrono::seconds query_timeout{10};
};

// Whether the base plan or any profile's has domain entries.
bool anyHosts(const policy::NetworkPlan& base,
              const std::map<std::string, policy::NetworkPlan>& profiles);

// What a session with domain entries in any plan needs from NetFilter::load:
// the redirection programs, and room for one port range per host name more
// in each allowlist entry (a learned address carries the ranges of the
// plan's hosts naming it).
void addDnsProxyOptions(const policy::NetworkPlan& base,
                        const std::map<std::string, policy::NetworkPlan>& profiles,
                        tracer::NetFilterOptions& options);

// Every plan's hosts and the resolvers of /etc/resolv.conf.
DnsAllowOptions dnsAllowOptionsFor(const policy::NetworkPlan& base,
                                   const std::map<std::string, policy::NetworkPlan>& profiles);

class DnsAllow {
 public:
  using Clock = std::chrono::steady_clock;

  // What an answer allowed (for the audit/notes); called after the map
  // update, once per plan that names the host.
  struct Learned {
    std::string name;
    policy::Ip6 ip{};
    uint32_t ttl = 0;
    std::string rule_id;
    uint32_t plan = tracer::kNetPlanBase;
    std::string profile;  // the plan's profile; "" for the base plan
    Status status;  // an allowlist error (E2BIG) leaves the address refused
  };

  // Opens the proxy and upstream sockets and registers every redirection in
  // `net` (loaded with NetFilterOptions::dns_proxy and every plan the
  // options name: EINVAL otherwise). Must run before the tree starts, so
  // none of its queries can bypass the proxy.
  static Result<std::unique_ptr<DnsAllow>> start(tracer::NetFilter& net, DnsAllowOptions options);

  // Every fd to watch for readability; pass each one back to onReadable().
  std::vector<int> fds() const;
  void onReadable(int fd);
  // Withdraws addresses whose TTL ran out and forgets unanswered queries.
  // Call periodically (about once a second).
  void onTimer() { expire(Clock::now()); }
  void expire(Clock::time_point now);
  // Asks the first resolver for every host name (A and AAAA).
  void resolveNow();

  // Registers the sockets and the expiry timer with the session loop (any
  // type with watchReadable(fd, fn) and addTimer(ms, fn), e.g. Supervision)
  // and asks for the hosts' addresses right away.
  template <typename Loop>
  void watch(Loop& loop) {
    for (int fd : fds()) loop.watchReadable(fd, [this, fd] { onReadable(fd); });
    loop.addTimer(1000, [this] { onTimer(); });
    resolveNow();
  }
  size_t resolverCount() const { return resolvers_.size(); }

  void setOnLearned(std::function<void(const Learned&)> fn) { on_learned_ = std::move(fn); }
  // Currently allowed (plan, address, host rule) triples, for tests and status.
  size_t allowedCount() const { return expiry_.size(); }
  // Of those, the ones in `plan`.
  size_t allowedCount(uint32_t plan) const;

 private:
  struct Resolver {
    policy::Ip6 ip{};
    UniqueFd proxy;     // where the tree's queries arrive (loopback)
    UniqueFd upstream;  // connected to ip:53
  };
  struct Pending {
    size_t resolver = 0;
    sockaddr_storage client{};  // ss_family 0: our own query (resolveNow)
    socklen_t client_len = 0;
    uint16_t client_id = 0;
    std::string qname;
    Clock::time_point deadline;
  };
  struct HostRule {
    std::string name;
    uint16_t port_lo, port_hi;
    uint32_t rule_index;
    std::string rule_id;
    uint32_t plan;
    std::string profile;
  };
  // plan, ip, lo, hi, rule
  using Grant = std::tuple<uint32_t, policy::Ip6, uint16_t, uint16_t, uint32_t>;

  DnsAllow(tracer::NetFilter& net, DnsAllowOptions options);
  void onQuery(size_t resolver);
  void onAnswer(size_t resolver);
  bool forward(size_t resolver, std::vector<uint8_t>& query, Pending pending);
  void learn(const std::string& qname, const std::vector<uint8_t>& answer, Clock::time_point now);

  tracer::NetFilter& net_;
  DnsAllowOptions options_;
  std::vector<Resolver> resolvers_;
  std::vector<HostRule> rules_;
  std::map<uint16_t, Pending> pending_;  // by the id sent upstream
  std::map<Grant, Clock::time_point> expiry_;
  std::mt19937 rng_;
  std::function<void(const Learned&)> on_learned_;
};

}  // namespace sv::supervisor
