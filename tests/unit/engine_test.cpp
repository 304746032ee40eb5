// Engine precedence, table-driven: profile deny → profile allow → base deny →
// base allow → default deny, for read, write, exec and connect.
#include <gtest/gtest.h>

#include "policy/engine.h"
#include "policy/load.h"
#include "tests/unit/policy_test_util.h"

namespace sv::policy {
namespace {

using test_util::mustLoad;

const char* kPolicy = R"({
  "filesystem": {
    "readableRoots": ["/data", "~/.cache"],
    "denyRead": [".ssh/**", {"path": "/data/private", "id": "no-private", "reason": "private"}]
  },
  "exec": {
    "deny": [{"path": "/usr/bin/ssh", "id": "no-ssh", "reason": "ssh only under git"}],
    "switch": [{"match": "/usr/bin/git", "profile": "git"}]
  },
  "network": {"mode": "localhost", "allow": ["10.0.0.0/8:443", "[2001:db8::1]:22",
              {"to": "example.org:80-81", "id": "ex"}]},
  "profiles": {
    "git": {
      "network": {"allow": [{"to": "github.com:22", "id": "gh", "reason": "git remote"}]},
      "exec": {"allow": ["/usr/bin/ssh"]},
      "filesystem": {"writableRoots": ["~/.ssh/known_hosts"], "denyWrite": ["./src/locked"],
                     "denyRead": ["/data/git-secret"]}
    },
    "offline": {"network": {"mode": "none"}},
    "open": {"network": {"mode": "all"}}
  }
})";

struct Case {
  Operation op;
  const char* target;  // path, or ip for connect
  uint16_t port;
  const char* host;
  const char* profile;
  Verdict verdict;
  const char* rule;
};

constexpr auto R = Operation::Read;
constexpr auto W = Operation::Write;
constexpr auto X = Operation::Exec;
constexpr auto C = Operation::Connect;
constexpr auto A = Verdict::Allow;
constexpr auto D = Verdict::Deny;

TEST(Engine, PrecedenceTable) {
  Engine engine(mustLoad(kPolicy, "code-sandbox"));
  const Case cases[] = {
      // read: deny globs beat roots; roots, workspace and system paths allow
      {R, "/ws/src/main.c", 0, "", "", A, "workspace"},
      {R, "/ws/.ssh/id_rsa", 0, "", "", D, "denyRead:.ssh/**"},
      {R, "/ws/a/b/.ssh/config", 0, "", "", D, "denyRead:.ssh/**"},
      {R, "/data/x", 0, "", "", A, "readableRoots:/data"},
      {R, "/data/private/key", 0, "", "", D, "no-private"},
      {R, "/home/u/.cache/pip", 0, "", "", A, "readableRoots:~/.cache"},
      {R, "/usr/lib/libc.so", 0, "", "", A, "system-read:/usr"},
      {R, "/etc/passwd", 0, "", "", A, "system-read:/etc"},
      {R, "/tmp/x", 0, "", "", A, "tmp"},
      {R, "/home/u/.bashrc", 0, "", "", D, "default-deny-read"},
      {R, "/", 0, "", "", D, "default-deny-read"},
      {R, "/sys/kernel/debug", 0, "", "", D, "default-deny-read"},
      // write: denyWrite beats writable roots; system devices are writable
      {W, "/ws/src/main.c", 0, "", "", A, "workspace"},
      {W, "/ws/.env", 0, "", "", D, "deny-write-env"},
      {W, "/ws/pkg/.env", 0, "", "", D, "deny-write-env"},
      {W, "/ws/.env.local", 0, "", "", D, "deny-write-env-variants"},
      {W, "/ws/.environment", 0, "", "", A, "workspace"},
      {W, "/ws/.git/config", 0, "", "", D, "deny-write-git-config"},
      {W, "/ws/.git/hooks/pre-commit", 0, "", "", D, "deny-write-git-hooks"},
      {W, "/ws/.git/index", 0, "", "", A, "workspace"},
      {W, "/data/x", 0, "", "", D, "default-deny-write"},
      {W, "/dev/null", 0, "", "", A, "system-write:/dev/null"},
      {W, "/dev/pts/3", 0, "", "", A, "system-write:/dev/pts"},
      {W, "/tmp/build/x.o", 0, "", "", A, "tmp"},
      {W, "/etc/passwd", 0, "", "", D, "default-deny-write"},
      // exec: deny, then (exec.allow empty) the read decision
      {X, "/usr/bin/ls", 0, "", "", A, "system-read:/usr"},
      {X, "/usr/bin/ssh", 0, "", "", D, "no-ssh"},
      {X, "/ws/build/app", 0, "", "", A, "workspace"},
      {X, "/home/u/bin/tool", 0, "", "", D, "default-deny-exec"},
      {X, "/dev/shm/payload", 0, "", "", D, "default-deny-exec"},  // readable, never executable
      {X, "/proc/self/fd/3", 0, "", "", D, "default-deny-exec"},
      {X, "/tmp/a.out", 0, "", "", A, "tmp"},
      {X, "/ws/.ssh/evil", 0, "", "", D, "default-deny-exec"},
      // profile git: its allow beats the base deny; its deny beats the base allow
      {X, "/usr/bin/ssh", 0, "", "git", A, "profiles.git.exec.allow:/usr/bin/ssh"},
      {W, "/home/u/.ssh/known_hosts", 0, "", "git", A,
       "profiles.git.writableRoots:~/.ssh/known_hosts"},
      {W, "/home/u/.ssh/known_hosts", 0, "", "", D, "default-deny-write"},
      {W, "/ws/src/locked/f", 0, "", "git", D, "profiles.git.denyWrite:./src/locked"},
      {W, "/ws/src/other", 0, "", "git", A, "workspace"},
      {W, "/ws/.env", 0, "", "git", D, "deny-write-env"},
      {R, "/data/git-secret", 0, "", "git", D, "profiles.git.denyRead:/data/git-secret"},
      {R, "/data/x", 0, "", "git", A, "readableRoots:/data"},
      {X, "/ws/src/locked/run", 0, "", "git", A, "workspace"},  // writes, not execs, are denied
      // connect, base (localhost mode plus allow entries)
      {C, "127.0.0.1", 8080, "", "", A, "network-loopback"},
      {C, "127.255.0.9", 1, "", "", A, "network-loopback"},
      {C, "::1", 5432, "", "", A, "network-loopback"},
      {C, "::ffff:127.0.0.1", 80, "", "", A, "network-loopback"},
      {C, "10.1.2.3", 443, "", "", A, "network.allow:10.0.0.0/8:443"},
      {C, "::ffff:10.1.2.3", 443, "", "", A, "network.allow:10.0.0.0/8:443"},
      {C, "10.1.2.3", 80, "", "", D, "default-deny-connect"},
      {C, "2001:db8::1", 22, "", "", A, "network.allow:[2001:db8::1]:22"},
      {C, "2001:db8::2", 22, "", "", D, "default-deny-connect"},
      {C, "93.184.216.34", 80, "EXAMPLE.org", "", A, "ex"},
      {C, "93.184.216.34", 82, "example.org", "", D, "default-deny-connect"},
      {C, "140.82.112.3", 22, "github.com", "", D, "default-deny-connect"},
      // connect, profiles
      {C, "140.82.112.3", 22, "github.com", "git", A, "gh"},
      {C, "10.1.2.3", 443, "", "git", A, "network.allow:10.0.0.0/8:443"},
      {C, "127.0.0.1", 80, "", "offline", D, "network-none"},
      {C, "192.0.2.9", 9, "", "open", A, "network-all"},
      // unknown profile: the base policy
      {X, "/usr/bin/ssh", 0, "", "nope", D, "no-ssh"},
  };
  for (const auto& c : cases) {
    Request req;
    req.op = c.op;
    req.profile = c.profile;
    if (c.op == C) {
      req.ip = *parseIp(c.target);
      req.port = c.port;
      req.host = c.host;
    } else {
      req.path = c.target;
    }
    Decision d = engine.decide(req);
    std::string what = std::string(toString(c.op)) + " " + c.target + ":" +
                       std::to_string(c.port) + " profile=" + c.profile;
    EXPECT_EQ(d.verdict, c.verdict) << what << " (rule " << d.rule_id << ")";
    EXPECT_EQ(d.rule_id, c.rule) << what;
    Explanation e = engine.explain(req);
    EXPECT_EQ(e.decision.verdict, d.verdict) << what;
    EXPECT_EQ(e.decision.rule_id, d.rule_id) << what;
    EXPECT_FALSE(e.chain.empty()) << what;
    EXPECT_EQ(e.suggestion.empty(), d.verdict == Verdict::Allow) << what;
  }
}

TEST(Engine, ExecAllowNarrows) {
  Engine engine(mustLoad(R"({"exec": {"allow": ["/usr/bin/**", "./tools/*"]}})", "code-sandbox"));
  auto exec = [&](const char* p) {
    Request r;
    r.op = Operation::Exec;
    r.path = p;
    return engine.decide(r);
  };
  EXPECT_EQ(exec("/usr/bin/make").rule_id, "exec.allow:/usr/bin/**");
  EXPECT_EQ(exec("/ws/tools/gen").verdict, Verdict::Allow);
  EXPECT_EQ(exec("/ws/tools/sub/gen").verdict, Verdict::Deny);
  EXPECT_EQ(exec("/ws/build/app").rule_id, "default-deny-exec");
  EXPECT_EQ(exec("/bin/sh").rule_id, "default-deny-exec");
}

TEST(Engine, NetworkModes) {
  auto connect = [](const char* preset, const char* text, const char* ip, uint16_t port) {
    Engine engine(mustLoad(text, preset));
    Request r;
    r.op = Operation::Connect;
    r.ip = *parseIp(ip);
    r.port = port;
    return engine.decide(r);
  };
  EXPECT_EQ(connect("strict", "", "127.0.0.1", 80).rule_id, "network-none");
  EXPECT_EQ(connect("audit-only", "", "192.0.2.1", 80).rule_id, "network-all");
  EXPECT_EQ(connect("code-sandbox", "", "192.0.2.1", 80).rule_id, "default-deny-connect");
  const char* allowlist = R"({"network": {"mode": "allowlist", "allow": ["192.0.2.0/24:8000-8100"]}})";
  EXPECT_EQ(connect("none", allowlist, "127.0.0.1", 80).rule_id, "default-deny-connect");
  EXPECT_EQ(connect("none", allowlist, "192.0.2.7", 8050).verdict, Verdict::Allow);
  EXPECT_EQ(connect("none", allowlist, "192.0.2.7", 8101).verdict, Verdict::Deny);
}

// Address families: unix, inet/inet6 and netlink route outside mode all
// (inet not in mode none); every other family and netlink protocol refused.
TEST(Engine, SocketFamilies) {
  auto sock = [](const char* preset, const char* text, int family, int protocol = 0,
                 const char* profile = "") {
    Engine engine(mustLoad(text, preset));
    Request r;
    r.op = Operation::Socket;
    r.family = family;
    r.sock_type = 1;
    r.protocol = protocol;
    r.profile = profile;
    Decision d = engine.decide(r);
    return std::string(toString(d.verdict)) + " " + std::string(d.rule_id) + " " +
           std::string(d.name);
  };
  const std::string deny_localhost =
      "deny default-deny-socket-family default: address family not allowed by network.mode "
      "localhost";
  EXPECT_EQ(sock("code-sandbox", "", 40), deny_localhost);  // AF_VSOCK
  EXPECT_EQ(sock("code-sandbox", "", 17), deny_localhost);  // AF_PACKET
  EXPECT_EQ(sock("code-sandbox", "", 16, 9), deny_localhost);  // NETLINK_AUDIT
  EXPECT_EQ(sock("code-sandbox", "", -1), deny_localhost);
  EXPECT_EQ(sock("code-sandbox", "", 4096), deny_localhost);
  EXPECT_TRUE(sock("code-sandbox", "", 16, 0).starts_with("allow network-socket-family"));
  EXPECT_TRUE(sock("code-sandbox", "", 1).starts_with("allow network-socket-family"));
  EXPECT_TRUE(sock("code-sandbox", "", 10).starts_with("allow network-socket-family"));
  EXPECT_TRUE(sock("strict", "", 2).starts_with("deny network-none"));
  EXPECT_TRUE(sock("strict", "", 40).ends_with("by network.mode none"));
  EXPECT_TRUE(sock("strict", "", 1).starts_with("allow"));
  EXPECT_TRUE(sock("audit-only", "", 40).starts_with("allow network-all"));
  const char* allowlist = R"({"network": {"mode": "allowlist", "allow": ["192.0.2.0/24:80"]},
    "profiles": {"vm": {"network": {"mode": "all"}}}})";
  EXPECT_TRUE(sock("none", allowlist, 40).ends_with("by network.mode allowlist"));
  EXPECT_TRUE(sock("none", allowlist, 40, 0, "vm").starts_with("allow network-all"));
  EXPECT_EQ(socketFamilyName(40), "vsock");
  EXPECT_EQ(socketFamilyName(99), "family-99");
  EXPECT_EQ(netlinkProtocolName(9), "audit");
}

// rule.name: section and pattern as written, the profile in front; the same
// text whether the engine decided or a backend looks the kernel's rule id up.
TEST(Engine, RuleNamesAndTextsById) {
  Engine engine(mustLoad(kPolicy, "code-sandbox"));
  auto decide = [&](Operation op, const char* path, const char* profile = "") {
    Request r;
    r.op = op;
    r.path = path;
    r.profile = profile;
    return engine.decide(r);
  };
  Decision d = decide(R, "/data/private/x");
  EXPECT_EQ(d.rule_id, "no-private");
  EXPECT_EQ(d.name, "filesystem.denyRead /data/private");
  EXPECT_EQ(decide(X, "/usr/bin/ssh").name, "exec.deny /usr/bin/ssh");
  EXPECT_EQ(decide(X, "/usr/bin/ssh", "git").name, "profiles.git.exec.allow /usr/bin/ssh");
  EXPECT_EQ(decide(R, "/usr/lib/x").name, "system read path /usr");
  EXPECT_EQ(decide(R, "/nowhere").name, "default: read outside every readable root");
  Request c;
  c.op = C;
  c.ip = *parseIp("10.1.2.3");
  c.port = 443;
  EXPECT_EQ(engine.decide(c).name, "network.allow 10.0.0.0/8:443");
  c.profile = "offline";
  EXPECT_EQ(engine.decide(c).name, "network.mode none");

  // By id (cgroup-bpf, bpf-lsm): the same name and the reason.
  EXPECT_EQ(engine.ruleText("gh").name, "profiles.git.network.allow github.com:22");
  EXPECT_EQ(engine.ruleText("gh").reason, "git remote");
  EXPECT_EQ(engine.ruleText("no-ssh").reason, "ssh only under git");
  EXPECT_EQ(engine.ruleText("network.allow:10.0.0.0/8:443").name, "network.allow 10.0.0.0/8:443");
  EXPECT_EQ(engine.ruleText("network-loopback").name, "network.mode localhost (loopback)");
  EXPECT_EQ(engine.ruleText("default-deny-connect").reason, "destination not in network.allow");
  EXPECT_EQ(engine.ruleText("deny-write-env").name, "filesystem.denyWrite .env");
  EXPECT_TRUE(engine.ruleText("no-such-rule").name.empty());
  EXPECT_TRUE(engine.ruleText("").reason.empty());
}

TEST(Engine, ResolvedHosts) {
  Engine engine(mustLoad(R"({"network": {"mode": "allowlist", "allow": ["github.com:22"]}})", "none"));
  ResolvedHosts resolved;
  resolved.add("GitHub.com", *parseIp("140.82.112.3"));
  Request r;
  r.op = Operation::Connect;
  r.ip = *parseIp("140.82.112.3");
  r.port = 22;
  EXPECT_EQ(engine.decide(r).verdict, Verdict::Deny);  // no name, no table
  r.resolved_hosts = &resolved;
  EXPECT_EQ(engine.decide(r).rule_id, "network.allow:github.com:22");
  r.port = 23;
  EXPECT_EQ(engine.decide(r).verdict, Verdict::Deny);
  r.port = 22;
  r.ip = *parseIp("140.82.112.4");
  EXPECT_EQ(engine.decide(r).verdict, Verdict::Deny);
}

TEST(Engine, ProfileAfterExec) {
  Engine engine(mustLoad(kPolicy, "code-sandbox"));
  EXPECT_EQ(engine.profileAfterExec("", "/usr/bin/git"), "git");
  EXPECT_EQ(engine.profileAfterExec("", "/usr/bin/ls"), "");
  EXPECT_EQ(engine.profileAfterExec("git", "/usr/bin/ssh"), "git");
  EXPECT_EQ(engine.profileAfterExec("offline", "/usr/bin/git"), "git");
}

TEST(Engine, ExplainChainAndSuggestions) {
  Engine engine(mustLoad(kPolicy, "code-sandbox"));
  Request r;
  r.op = Operation::Write;
  r.path = "/ws/.env";
  Explanation e = engine.explain(r);
  EXPECT_EQ(e.decision.rule_id, "deny-write-env");
  EXPECT_EQ(e.decision.reason, "secrets stay out of the agent's reach");
  ASSERT_FALSE(e.chain.empty());
  EXPECT_TRUE(e.chain.back().matched);
  EXPECT_EQ(e.chain.back().rule_id, "deny-write-env");
  EXPECT_EQ(e.chain.back().description, "base denyWrite /ws/**/.env matches");
  EXPECT_NE(e.suggestion.find("deny-write-env"), std::string::npos) << e.suggestion;

  r.path = "/data/out";
  e = engine.explain(r);
  EXPECT_EQ(e.suggestion, "add \"/data/out\" to filesystem.writableRoots");
  r.op = Operation::Read;
  r.path = "/srv/x";
  EXPECT_EQ(engine.explain(r).suggestion, "add \"/srv/x\" to filesystem.readableRoots");
  r.op = Operation::Connect;
  r.ip = *parseIp("192.0.2.1");
  r.port = 443;
  EXPECT_EQ(engine.explain(r).suggestion, "add \"192.0.2.1:443\" to network.allow");
  r.host = "api.example.com";
  EXPECT_EQ(engine.explain(r).suggestion, "add \"api.example.com:443\" to network.allow");
  r.host = "";
  r.ip = *parseIp("2001:db8::5");
  EXPECT_EQ(engine.explain(r).suggestion, "add \"[2001:db8::5]:443\" to network.allow");
  r.profile = "offline";
  EXPECT_EQ(engine.explain(r).suggestion,
            "set profiles.offline.network.mode to \"allowlist\" and add \"[2001:db8::5]:443\" to "
            "profiles.offline.network.allow");
}

TEST(Engine, AuditModeKeepsVerdicts) {
  Engine engine(mustLoad(R"({"mode": "audit"})", "code-sandbox"));
  Request r;
  r.op = Operation::Write;
  r.path = "/ws/.env";
  EXPECT_EQ(engine.decide(r).verdict, Verdict::Deny);
  EXPECT_EQ(engine.policy().mode, Mode::Audit);
}

}  // namespace
}  // namespace sv::policy
