// `supervise explain [policy flags] [--json] read|write|exec|connect TARGET
//                    [--as-exe PATH] [--profile NAME]`
//
// Asks the Engine what it would decide and why: verdict, rule id, reason, the
// chain of rules considered and the smallest policy edit that flips a deny.
// Needs no privileges and starts nothing. Exit 0 allow, 1 deny, 2 bad
// policy or usage, so scripts can branch on it.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "policy/engine.h"
#include "policy/path.h"
#include "supervisor/commands.h"
#include "supervisor/policy_args.h"

namespace sv::supervisor {
namespace {

constexpr int kExitAllow = 0;
constexpr int kExitDeny = 1;
constexpr int kExitError = 2;

struct Target {
  policy::Ip6 ip{};
  uint16_t port = 0;
  std::string host;
};

// "ip:port", "[v6]:port" or "host:port".
bool parseConnectTarget(const std::string& text, Target* t, std::string* error) {
  std::string addr, port;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      *error = "expected [v6]:port";
      return false;
    }
    addr = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos || text.find(':') != colon) {
      *error = "expected ip:port, [v6]:port or host:port";
      return false;
    }
    addr = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  int p = 0;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (port.empty() || ec != std::errc() || ptr != port.data() + port.size() || p < 1 ||
      p > 65535) {
    *error = "bad port '" + port + "'";
    return false;
  }
  t->port = static_cast<uint16_t>(p);
  if (auto ip = policy::parseIp(addr)) {
    t->ip = *ip;
  } else if (!addr.empty() && addr.find_first_of("/ ") == std::string::npos) {
    t->host = addr;  // matched against host entries by name
  } else {
    *error = "bad address '" + addr + "'";
    return false;
  }
  return true;
}

}  // namespace

void registerExplain(CLI::App& app, CommandContext& ctx) {
  struct Args {
    PolicyArgs policy;
    std::string op;
    std::string target;
    std::string as_exe;
    std::string profile;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand(
      "explain", "show what the policy decides for one operation, and why (exit 0 allow, 1 deny)");
  args->policy.addTo(*sub);
  sub->add_option("operation", args->op, "read | write | exec | connect")
      ->required()
      ->check(CLI::IsMember({"read", "write", "exec", "connect"}));
  sub->add_option("target", args->target, "a path, or ip:port / [v6]:port / host:port")
      ->required();
  sub->add_option("--as-exe", args->as_exe,
                  "decide as a process running this binary (selects its exec.switch profile)");
  sub->add_option("--profile", args->profile, "decide inside this profile");
  sub->add_flag("--json", args->json, "print the explanation as JSON");
  sub->callback([&ctx, args] {
    try {
      std::vector<policy::Diagnostic> diags;
      auto loaded = loadPolicy(args->policy, &diags);
      for (const auto& d : diags) std::fprintf(stderr, "%s\n", d.format().c_str());
      if (!loaded) {
        if (diags.empty()) std::fprintf(stderr, "supervise explain: %s\n", loaded.error().message().c_str());
        ctx.exit_code = kExitError;
        return;
      }
      policy::Engine engine(*loaded);
      // Relative targets are relative to the cwd, like the command's own paths.
      std::string here = "/";
      if (char buf[4096]; ::getcwd(buf, sizeof buf)) here = buf;

      policy::Request req;
      const std::string& op = args->op;
      req.op = op == "read"    ? policy::Operation::Read
               : op == "write" ? policy::Operation::Write
               : op == "exec"  ? policy::Operation::Exec
                               : policy::Operation::Connect;
      std::string profile = args->profile;
      if (!profile.empty() && !(*loaded)->profiles.count(profile)) {
        std::fprintf(stderr, "supervise explain: unknown profile \"%s\"\n", profile.c_str());
        ctx.exit_code = kExitError;
        return;
      }
      if (!args->as_exe.empty()) {
        std::string exe = policy::normalizePath(here, args->as_exe);
        profile = std::string(engine.profileAfterExec(profile, exe));
      }
      req.profile = profile;
      std::string path;
      Target target;
      if (req.op == policy::Operation::Connect) {
        std::string err;
        if (!parseConnectTarget(args->target, &target, &err)) {
          std::fprintf(stderr, "supervise explain: connect target \"%s\": %s\n",
                       args->target.c_str(), err.c_str());
          ctx.exit_code = kExitError;
          return;
        }
        req.ip = target.ip;
        req.port = target.port;
        req.host = target.host;
      } else {
        path = policy::normalizePath(here, args->target);
        req.path = path;
      }
      policy::Explanation e = engine.explain(req);
      bool deny = e.decision.verdict == policy::Verdict::Deny;
      bool audit = (*loaded)->mode == policy::Mode::Audit;
      std::string shown = req.op == policy::Operation::Connect ? args->target : path;
      if (args->json) {
        nlohmann::json j = {{"operation", op},
                            {"target", shown},
                            {"profile", profile},
                            {"verdict", std::string(policy::toString(e.decision.verdict))},
                            {"rule_id", std::string(e.decision.rule_id)},
                            {"reason", std::string(e.decision.reason)},
                            {"mode", audit ? "audit" : "enforce"},
                            {"would_deny", audit && deny},
                            {"policy", (*loaded)->name},
                            {"chain", nlohmann::json::array()},
                            {"suggestion", e.suggestion}};
        for (const auto& s : e.chain) {
          j["chain"].push_back(
              {{"rule_id", s.rule_id}, {"description", s.description}, {"matched", s.matched}});
        }
        std::printf("%s\n", j.dump(2).c_str());
      } else {
        std::printf("%s\n", std::string(policy::toString(e.decision.verdict)).c_str());
        std::printf("  %s %s%s\n", op.c_str(), shown.c_str(),
                    profile.empty() ? "" : (" (profile " + profile + ")").c_str());
        std::printf("  rule:   %s\n", std::string(e.decision.rule_id).c_str());
        if (!e.decision.reason.empty())
          std::printf("  reason: %s\n", std::string(e.decision.reason).c_str());
        if (audit && deny)
          std::printf("  mode:   audit (the operation would proceed and be recorded as would-deny)\n");
        std::printf("chain:\n");
        for (const auto& s : e.chain) {
          std::printf("  %s %s%s%s\n", s.matched ? "=>" : "  ", s.rule_id.c_str(),
                      s.rule_id.empty() ? "" : ": ", s.description.c_str());
        }
        if (!e.suggestion.empty()) std::printf("suggestion: %s\n", e.suggestion.c_str());
      }
      ctx.exit_code = deny ? kExitDeny : kExitAllow;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "supervise explain: %s\n", e.what());
      ctx.exit_code = kExitError;
    }
  });
}

}  // namespace sv::supervisor
