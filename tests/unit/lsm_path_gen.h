// Requests for differential tests of the BPF-LSM tables against
// Engine::decide: a seeded generator of normal absolute paths built from
// components that hit the rule corners (.env anywhere, .env.*,
// .git/hooks/**, system paths, `..`, unicode, long names, glob
// metacharacters as literal bytes), and a policy with profiles, exec rules
// and switches. Shared by the unit test (user-space walk) and the kernel
// walk test (tests/integration/lsm/lsm_tables_test.cpp).
#pragma once

#include <random>
#include <string>
#include <vector>

#include "policy/path.h"

namespace sv::policy {

inline constexpr const char* kProfilesPolicy = R"({
  "filesystem": {"readableRoots": ["/opt/data", "/srv/pub"], "denyRead": [".ssh/**", "/opt/data/**/secret*"],
                 "denyWrite": ["**/*.pem", "/ws/build/[a-c]?/out"]},
  "exec": {"deny": ["/usr/bin/nc*"],
           "switch": [{"match": "/usr/bin/git", "profile": "git"},
                      {"match": "/ws/tools/**", "profile": "tools"}]},
  "profiles": {"git": {"exec": {"allow": ["/usr/lib/git-core/**"], "deny": ["/usr/bin/ssh"],
                                "switch": [{"match": "/usr/bin/ssh*", "profile": "tools"}]},
                       "filesystem": {"writableRoots": ["~/.ssh"], "denyWrite": ["/ws/.git/config"],
                                      "denyRead": ["/etc/shadow"]}},
               "tools": {"filesystem": {"readableRoots": ["/"], "writableRoots": ["/ws/.git/hooks"]}}}
})";

// Random absolute paths, normalised the way the supervisor normalises what it
// reads from a syscall.
class PathGen {
 public:
  explicit PathGen(uint32_t seed) : rng_(seed) {}

  std::string next() {
    static const std::vector<std::string> kFirst = {
        "ws",  "usr", "etc", "tmp", "dev", "proc", "sys",  "home", "opt",  "srv",
        "var", "bin", "lib", "run", "wsx", "w",    "dev2", "root", "sys-x"};
    static const std::vector<std::string> kComp = {
        ".env",     ".env.local", ".env.",     ".envrc",     "x.env",       ".ENV", "env",
        ".git",     "config",     "hooks",     "pre-commit", "config.bak",  "bin",  "git",
        "git-core", "ssh",        "ssh-agent", "nc",         "ncat",        "null", "zero",
        "pts",      "0",          "data",      "secret",     "secrets.txt", "pub",  "key.pem",
        "pem",      "build",      "ab",        "cz",         "a",           "out",  "u",
        ".ssh",     ".gitconfig", "tmp",       "ws",         "..",          ".",    "dÃ©jÃ ",
        "日本",     "[x]",        "*",         "?",          "\\",          "a b",  "tools",
        "lib",      "tmp",        "lib64",     ".config",    "shadow",      "fs",   "cgroup",
        "cpu",      "devices",    "system",    "var",        "lib"};
    std::uniform_int_distribution<int> depth(0, 7), pick(0, 999);
    std::string raw = "/";
    if (pick(rng_) % 10) raw += kFirst[pick(rng_) % kFirst.size()];
    for (int d = depth(rng_); d > 0; --d) {
      raw += "/";
      int r = pick(rng_);
      if (r < 15) {
        raw += std::string(200 + r * 10, 'L');  // long names
      } else if (r < 40) {
        raw += kFirst[r % kFirst.size()];
      } else {
        raw += kComp[r % kComp.size()];
      }
    }
    return normalizePath("/", raw);
  }

 private:
  std::mt19937 rng_;
};

}  // namespace sv::policy
