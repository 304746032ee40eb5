// The seeded request generator (generator.h). The pools below are the
// corners the policy has: protected names reached directly, through `..`,
// through symlinks in and out of the workspace and through dirfds; names
// outside every root; self-protected files; allowed and denied programs
// (directly and through symlinks); loopback destinations on both sides of
// each network rule, and unix sockets inside and outside the writable roots.
#include "tests/differential/generator.h"

#include <random>
#include <string>
#include <utility>

namespace sv::differential {
namespace {

struct Target {
  int dir;
  std::string path;
};

// Dirfd indexes of Fixture::dirfdTable().
constexpr int kSrc = 0, kOutside = 1, kGit = 2, kShared = 3;

std::vector<Target> existingFiles(const Fixture& f) {
  const std::string ws = f.workspace(), meta = f.meta();
  return {
      {kCwd, "src/main.c"},
      {kCwd, "./src/util.c"},
      {kCwd, "src/lib/../main.c"},
      {kCwd, "src/lib/deep.c"},
      {kCwd, "link-src/main.c"},
      {kCwd, "link-src/lib/deep.c"},
      {kCwd, ".env"},
      {kCwd, "link-env"},
      {kCwd, ".env.local"},
      {kCwd, "src/../.env"},
      {kCwd, ".git/config"},
      {kCwd, ".git/HEAD"},
      {kCwd, ".git/hooks/pre-commit"},
      {kCwd, "protected/notes.txt"},
      {kCwd, "secrets/api.key"},
      {kCwd, "src/server.key"},
      {kCwd, "README.md"},
      {kCwd, "link-out/file.txt"},
      {kCwd, "../outside/file.txt"},
      {kCwd, "../outside/link-in"},
      {kCwd, "link-out/link-in"},
      {kCwd, "link-hostname"},
      {kCwd, "/etc/hostname"},
      {kCwd, "/etc/passwd"},
      {kCwd, "../shared/data.txt"},
      {kCwd, ws + "/src/main.c"},
      {kCwd, ws + "/.env"},
      {kCwd, f.outside() + "/file.txt"},
      {kCwd, meta + "/audit.jsonl"},
      {kCwd, meta + "/policy.json"},
      {kSrc, "main.c"},
      {kSrc, "lib/deep.c"},
      {kSrc, "../.env"},
      {kSrc, "../link-env"},
      {kSrc, "../.git/config"},
      {kSrc, "server.key"},
      {kSrc, "../../outside/file.txt"},
      {kOutside, "file.txt"},
      {kOutside, "link-in"},
      {kOutside, "../ws/.env.local"},
      {kOutside, "../ws/README.md"},
      {kGit, "config"},
      {kGit, "HEAD"},
      {kGit, "hooks/pre-commit"},
      {kGit, "../src/main.c"},
      {kShared, "data.txt"},
      {kShared, "../ws/protected/notes.txt"},
  };
}

// Directories a fresh name is made in, as a dirfd and a prefix.
std::vector<Target> freshDirs(const Fixture& f) {
  return {
      {kCwd, ""},
      {kCwd, "src/"},
      {kCwd, "link-src/"},
      {kCwd, "src/lib/../"},
      {kCwd, "protected/"},
      {kCwd, ".git/"},
      {kCwd, ".git/hooks/"},
      {kCwd, "link-out/"},
      {kCwd, "../outside/"},
      {kCwd, "../shared/"},
      {kCwd, "secrets/"},
      {kCwd, f.shared() + "/"},
      {kCwd, f.workspace() + "/src/"},
      {kSrc, ""},
      {kSrc, "../"},
      {kOutside, ""},
      {kGit, ""},
      {kGit, "hooks/"},
      {kShared, ""},
  };
}

// Files the generator renames or links away (then back): protected ones, a
// symlink (the link itself is renamed, not .env), one outside the roots, and
// deny-read ones (a new name they could be read under is refused).
std::vector<Target> movableExisting() {
  return {{kCwd, ".env"},         {kCwd, ".git/config"},         {kCwd, "protected/notes.txt"},
          {kCwd, "link-env"},     {kCwd, "../outside/file.txt"}, {kCwd, ".git/hooks/pre-commit"},
          {kSrc, "../.env.local"}, {kCwd, "secrets/api.key"},   {kSrc, "server.key"}};
}

std::vector<std::string> programs(const Fixture& f) {
  return {"tools/ok-prog",
          "./tools/ok-prog",
          "tools/blocked-prog",
          "link-ok-prog",
          "link-blocked",
          "link-true",
          "link-id",
          "/usr/bin/true",
          "/bin/true",
          "/usr/bin/id",
          "../outside/prog",
          "../outside/link-ok-prog",
          f.workspace() + "/tools/ok-prog"};
}

std::vector<std::pair<std::string, int>> inet4Destinations() {
  return {{"127.0.0.1", 20000}, {"127.0.0.1", 20042}, {"127.0.0.1", 20099}, {"127.0.0.1", 20100},
          {"127.0.0.1", 20150}, {"127.0.0.1", 19999}, {"127.0.0.1", 20200}, {"127.0.0.2", 20042},
          {"127.0.0.2", 20200}, {"127.1.2.3", 20200}};
}

std::vector<std::pair<std::string, int>> inet6Destinations() {
  return {{"::1", 20100},
          {"::1", 20042},
          {"::1", 20200},
          {"::ffff:127.0.0.1", 20042},
          {"::ffff:127.0.0.1", 20150},
          {"::ffff:127.0.0.2", 20200}};
}

std::vector<std::string> unixSockets(const Fixture& f) {
  return {f.workspace() + "/sock",
          "sock",
          f.workspace() + "/.env.sock",
          f.outside() + "/sock",
          f.shared() + "/sock",
          f.workspace() + "/missing.sock",
          f.outside() + "/missing.sock",
          "link-out/sock",
          f.workspace() + "/link-out/sock"};
}

class Generator {
 public:
  Generator(uint32_t seed, const Fixture& f)
      : rng_(seed),
        files_(existingFiles(f)),
        fresh_dirs_(freshDirs(f)),
        movable_(movableExisting()),
        programs_(programs(f)),
        inet4_(inet4Destinations()),
        inet6_(inet6Destinations()),
        unix_(unixSockets(f)) {}

  std::vector<Request> run(size_t count) {
    while (out_.size() < count) step();
    return std::move(out_);
  }

 private:
  template <typename T>
  const T& pick(const std::vector<T>& pool) {
    return pool[std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng_)];
  }

  // A name that does not exist yet: numbered, or `.env` where none is.
  Target freshName() {
    Target t = pick(fresh_dirs_);
    static const char* kStems[] = {"new-", ".env.new-", "cert-", "x-", ".env"};
    const std::string stem = kStems[std::uniform_int_distribution<int>(0, 4)(rng_)];
    const bool at_ws_root = (t.dir == kCwd && t.path.empty()) || (t.dir == kSrc && t.path == "../");
    const int n = ++serial_;
    if (stem == ".env" && !at_ws_root) {
      t.path += ".env";
    } else if (stem == "cert-") {
      t.path += "cert-" + std::to_string(n) + ".pem";
    } else if (stem == "x-") {
      t.path += "x-" + std::to_string(n) + ".key";
    } else {
      t.path += (stem == ".env" ? "new-" : stem) + std::to_string(n) + ".txt";
    }
    return t;
  }

  // A fresh name no denyRead rule covers (not `*.key`, not in secrets/): a
  // file renamed there can come back (from a deny-read name it could not).
  Target readableFreshName() {
    for (;;) {
      Target t = freshName();
      if (!t.path.ends_with(".key") && t.path.find("secrets/") == std::string::npos) return t;
    }
  }

  void add(Kind kind, const Target& a, const Target& b = {kCwd, ""}) {
    Request r;
    r.kind = kind;
    r.dir = a.dir, r.path = a.path;
    r.dir2 = b.dir, r.path2 = b.path;
    out_.push_back(std::move(r));
  }

  void addConnect(Kind kind, const std::string& address, int port) {
    Request r;
    r.kind = kind;
    r.path = address;
    r.port = port;
    out_.push_back(std::move(r));
  }

  void step() {
    const int roll = std::uniform_int_distribution<int>(0, 99)(rng_);
    if (roll < 19) return add(Kind::OpenRead, pick(files_));
    if (roll < 22) return add(Kind::OpenPath, pick(files_));
    if (roll < 34) return add(Kind::OpenWrite, pick(files_));
    if (roll < 37) return add(Kind::Chmod, pick(files_));
    if (roll < 49) {
      const Target t = freshName();
      add(Kind::Create, t);
      return add(Kind::Unlink, t);
    }
    if (roll < 52) {  // a new symlink: its own name is judged, not its target
      static const std::vector<std::string> kTargets = {".env", "src/main.c", "../outside/file.txt",
                                                        "/etc/hostname"};
      const Target t = freshName();
      add(Kind::Symlink, t, {kCwd, pick(kTargets)});
      return add(Kind::Unlink, t);
    }
    if (roll < 59) {
      Target t = pick(fresh_dirs_);
      const int n = ++serial_;
      t.path += (n % 2 ? "d-" : ".env.d-") + std::to_string(n);
      add(Kind::Mkdir, t);
      return add(Kind::Rmdir, t);
    }
    if (roll < 66) {  // a new file renamed somewhere and back
      const Target from = freshName(), to = freshName();
      add(Kind::Create, from);
      add(Kind::Rename, from, to);
      add(Kind::Rename, to, from);
      return add(Kind::Unlink, from);
    }
    if (roll < 71) {  // a new file linked somewhere, both names removed
      const Target from = freshName(), to = freshName();
      add(Kind::Create, from);
      add(Kind::Link, from, to);
      add(Kind::Unlink, to);
      return add(Kind::Unlink, from);
    }
    if (roll < 73) {  // an existing file renamed away and back
      const Target from = pick(movable_);
      const bool secret = from.path.ends_with(".key");
      const Target to = secret ? freshName() : readableFreshName();
      add(Kind::Rename, from, to);
      return add(Kind::Rename, to, from);
    }
    if (roll < 75) {  // a second name for an existing file
      const Target from = pick(movable_), to = freshName();
      add(Kind::Link, from, to);
      return add(Kind::Unlink, to);
    }
    if (roll < 77) return add(Kind::Exec, {kCwd, pick(programs_)});
    if (roll < 83) {
      const auto& [ip, port] = pick(inet4_);
      return addConnect(Kind::Tcp4, ip, port);
    }
    if (roll < 87) {
      const auto& [ip, port] = pick(inet4_);
      return addConnect(Kind::Udp4, ip, port);
    }
    if (roll < 90) {
      const auto& [ip, port] = pick(inet4_);
      return addConnect(Kind::Udp4Send, ip, port);
    }
    if (roll < 95) {
      const auto& [ip, port] = pick(inet6_);
      return addConnect(Kind::Tcp6, ip, port);
    }
    return addConnect(Kind::Unix, pick(unix_), 0);
  }

  std::mt19937 rng_;
  std::vector<Target> files_, fresh_dirs_, movable_;
  std::vector<std::string> programs_;
  std::vector<std::pair<std::string, int>> inet4_, inet6_;
  std::vector<std::string> unix_;
  std::vector<Request> out_;
  int serial_ = 0;
};

}  // namespace

std::vector<Request> generateRequests(uint32_t seed, size_t count, const Fixture& fixture) {
  return Generator(seed, fixture).run(count);
}

}  // namespace sv::differential
