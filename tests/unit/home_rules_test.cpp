// deriveHomeRules() over a fake home, and what the loader and the compiler
// make of the rules (policy/home_rules.h).
#include "policy/home_rules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "policy/compile.h"
#include "policy/engine.h"
#include "policy/load.h"

namespace sv::policy {
namespace {

// A filesystem of absolute paths: directories, files and symlinks (link →
// its physical target).
struct FakeFs {
  std::set<std::string> dirs, files;
  std::map<std::string, std::string> links;

  HomeFacts facts(std::map<std::string, std::string> env) const {
    HomeFacts f;
    f.home = "/home/u";
    f.env = std::move(env);
    f.is_dir = [this](const std::string& p) { return dirs.count(p) > 0; };
    f.exists = [this](const std::string& p) {
      return dirs.count(p) || files.count(p) || links.count(p);
    };
    f.real_path = [this](const std::string& p) -> std::optional<std::string> {
      if (auto it = links.find(p); it != links.end()) return it->second;
      if (dirs.count(p) || files.count(p)) return p;
      return std::nullopt;
    };
    f.symlinks_in = [this](const std::string& dir, size_t limit) {
      std::vector<std::string> out;
      for (const auto& [l, _] : links)
        if (l.rfind('/') == dir.size() && l.starts_with(dir) && out.size() < limit) out.push_back(l);
      return out;
    };
    return f;
  }
};

const HomeRule* find(const std::vector<HomeRule>& rules, const std::string& id) {
  auto it = std::find_if(rules.begin(), rules.end(), [&](const HomeRule& r) { return r.id == id; });
  return it == rules.end() ? nullptr : &*it;
}

TEST(HomeRules, ShimDirectoriesResolveToTheWholeToolchain) {
  FakeFs fs;
  fs.dirs = {"/home/u/.pyenv", "/home/u/.pyenv/shims", "/home/u/.cargo/bin", "/home/u/.rustup",
             "/home/u/.nvm", "/home/u/.nvm/versions/node/v20/bin", "/home/u/.local/bin"};
  HomeRules h = deriveHomeRules(fs.facts(
      {{"PATH", "/home/u/.pyenv/shims:/home/u/.cargo/bin:/home/u/.nvm/versions/node/v20/bin:"
                "/home/u/.local/bin:/usr/bin"}}));
  for (const char* id : {"toolchain:pyenv", "toolchain:nvm", "toolchain:rustup", "toolchain:cargo",
                         "toolchain:local-bin"})
    ASSERT_NE(find(h.toolchains, id), nullptr) << id;
  EXPECT_EQ(find(h.toolchains, "toolchain:pyenv")->path, "/home/u/.pyenv");
  EXPECT_EQ(find(h.toolchains, "toolchain:nvm")->path, "/home/u/.nvm");
  EXPECT_EQ(find(h.toolchains, "toolchain:rustup")->path, "/home/u/.rustup");
  // Only cargo's bin: CARGO_HOME holds credentials.toml.
  EXPECT_EQ(find(h.toolchains, "toolchain:cargo")->path, "/home/u/.cargo/bin");
  EXPECT_EQ(find(h.toolchains, "toolchain:local-bin")->path, "/home/u/.local/bin");
  // Covered entries add nothing of their own; /usr/bin is a system path.
  for (const auto& r : h.toolchains) EXPECT_FALSE(r.id.starts_with("toolchain:path:")) << r.id;
}

TEST(HomeRules, VariablesMoveTheHomes) {
  FakeFs fs;
  fs.dirs = {"/srv/py", "/home/u/.pyenv", "/data/cargo/bin", "/opt/go"};
  HomeRules h = deriveHomeRules(fs.facts(
      {{"PYENV_ROOT", "/srv/py"}, {"CARGO_HOME", "/data/cargo"}, {"GOROOT", "/opt/go"}}));
  ASSERT_NE(find(h.toolchains, "toolchain:pyenv"), nullptr);
  EXPECT_EQ(find(h.toolchains, "toolchain:pyenv")->path, "/srv/py");
  ASSERT_NE(find(h.toolchains, "toolchain:cargo"), nullptr);
  EXPECT_EQ(find(h.toolchains, "toolchain:cargo")->path, "/data/cargo/bin");
  // /opt is a system path: readable already, no rule of its own.
  EXPECT_EQ(find(h.toolchains, "toolchain:go"), nullptr);
}

TEST(HomeRules, PathEntriesAndWhereTheirLinksLead) {
  FakeFs fs;
  fs.dirs = {"/home/u/bin", "/home/u/tools/venv/bin", "/srv/sdk/bin"};
  fs.links = {{"/home/u/bin/tool", "/home/u/tools/venv/bin/tool"}};
  HomeRules h = deriveHomeRules(fs.facts({{"PATH", "/home/u/bin:/srv/sdk/bin:.:"}}));
  EXPECT_NE(find(h.toolchains, "toolchain:path:/home/u/bin"), nullptr);
  // The venv holding the linked program, not just its bin/.
  EXPECT_NE(find(h.toolchains, "toolchain:path:/home/u/tools/venv"), nullptr);
  EXPECT_NE(find(h.toolchains, "toolchain:path:/srv/sdk/bin"), nullptr);
}

// rustup's env script puts ~/.cargo/bin in $PATH a second time: its links
// are resolved once (each resolution is a few syscalls of every start).
TEST(HomeRules, APathEntryListedTwiceIsResolvedOnce) {
  FakeFs fs;
  fs.dirs = {"/home/u/.cargo/bin", "/home/u/tools/venv/bin"};
  fs.links = {{"/home/u/.cargo/bin/tool", "/home/u/tools/venv/bin/tool"}};
  HomeFacts facts = fs.facts({{"PATH", "/home/u/.cargo/bin:/usr/bin:/home/u/.cargo/bin/"}});
  int resolved = 0;
  auto real_path = facts.real_path;
  facts.real_path = [&](const std::string& p) {
    ++resolved;
    return real_path(p);
  };
  HomeRules h = deriveHomeRules(facts);
  EXPECT_EQ(resolved, 1);
  EXPECT_NE(find(h.toolchains, "toolchain:path:/home/u/tools/venv"), nullptr);
}

TEST(HomeRules, NeverTheHomeItselfNorASecret) {
  FakeFs fs;
  fs.dirs = {"/home/u", "/home", "/home/u/.ssh"};
  HomeRules h = deriveHomeRules(fs.facts({{"PATH", "/home/u:/home:/home/u/.ssh:/"}}));
  EXPECT_TRUE(h.toolchains.empty());
  EXPECT_EQ(h.notes.size(), 3u);  // "/" is a system path: nothing to say
}

TEST(HomeRules, CachesAndSecrets) {
  FakeFs fs;
  fs.dirs = {"/home/u/.npm", "/home/u/.cache/pip", "/home/u/.ssh"};
  fs.files = {"/home/u/.npmrc"};
  HomeRules h = deriveHomeRules(fs.facts({}));
  ASSERT_NE(find(h.caches, "cache:npm"), nullptr);
  ASSERT_NE(find(h.caches, "cache:pip"), nullptr);
  EXPECT_EQ(find(h.caches, "cache:npm")->path, "/home/u/.npm");
  EXPECT_EQ(find(h.caches, "cache:pip")->path, "/home/u/.cache/pip");
  EXPECT_EQ(find(h.caches, "cache:uv"), nullptr);  // not there
  for (const char* id : {"secret:ssh", "secret:npmrc", "secret:aws"})
    ASSERT_NE(find(h.secrets, id), nullptr) << id;
  EXPECT_TRUE(find(h.secrets, "secret:ssh")->present);
  EXPECT_TRUE(find(h.secrets, "secret:npmrc")->present);
  EXPECT_FALSE(find(h.secrets, "secret:aws")->present);
}

LoadResult loadWith(const HomeRules& h, const std::string& preset,
                    std::vector<std::string> overrides = {}) {
  LoadRequest r;
  r.preset = preset;
  r.workspace = "/ws";
  r.home = "/home/u";
  r.home_rules = h;
  r.overrides = std::move(overrides);
  return load(r);
}

HomeRules sampleHome() {
  FakeFs fs;
  fs.dirs = {"/home/u/.pyenv", "/home/u/.npm", "/home/u/.ssh"};
  fs.files = {"/home/u/.npmrc"};
  return deriveHomeRules(fs.facts({}));
}

TEST(HomeRules, CodeSandboxOpensToolchainsAndCachesAndClosesSecrets) {
  LoadResult res = loadWith(sampleHome(), "code-sandbox");
  ASSERT_TRUE(res.ok());
  Engine e(res.policy);
  auto read = e.decide({Operation::Read, "/home/u/.pyenv/versions/3.12/bin/python3"});
  EXPECT_EQ(read.verdict, Verdict::Allow);
  EXPECT_EQ(read.rule_id, "toolchain:pyenv");
  auto exec = e.decide({Operation::Exec, "/home/u/.pyenv/shims/python3"});
  EXPECT_EQ(exec.verdict, Verdict::Allow);
  EXPECT_EQ(e.decide({Operation::Write, "/home/u/.pyenv/shims/python3"}).verdict, Verdict::Deny);
  auto cache = e.decide({Operation::Write, "/home/u/.npm/_cacache/x"});
  EXPECT_EQ(cache.verdict, Verdict::Allow);
  EXPECT_EQ(cache.rule_id, "cache:npm");
  auto secret = e.decide({Operation::Read, "/home/u/.ssh/id_ed25519"});
  EXPECT_EQ(secret.verdict, Verdict::Deny);
  EXPECT_EQ(secret.rule_id, "secret:ssh");
  EXPECT_EQ(e.decide({Operation::Write, "/home/u/.npmrc"}).rule_id, "secret:npmrc");
  EXPECT_EQ(e.decide({Operation::Read, "/home/u/notes.txt"}).verdict, Verdict::Deny);
  // The secrets lie outside every readable root: Landlock refuses their
  // reads, so read opens stay in the kernel (no user-notify round trip).
  EXPECT_FALSE(compile(*res.policy).seccomp.notify_read_opens);
}

TEST(HomeRules, EachPartTurnsOff) {
  LoadResult res = loadWith(sampleHome(), "code-sandbox",
                            {"filesystem.toolchains=false", "filesystem.caches=false",
                             "filesystem.secrets=false"});
  ASSERT_TRUE(res.ok());
  Engine e(res.policy);
  EXPECT_EQ(e.decide({Operation::Read, "/home/u/.pyenv/bin/pyenv"}).verdict, Verdict::Deny);
  EXPECT_EQ(e.decide({Operation::Write, "/home/u/.npm/x"}).verdict, Verdict::Deny);
  EXPECT_NE(e.decide({Operation::Read, "/home/u/.ssh/id_ed25519"}).rule_id, "secret:ssh");
}

TEST(HomeRules, StrictHasToolchainsButNoCaches) {
  LoadResult res = loadWith(sampleHome(), "strict");
  ASSERT_TRUE(res.ok());
  Engine e(res.policy);
  EXPECT_EQ(e.decide({Operation::Read, "/home/u/.pyenv/bin/pyenv"}).verdict, Verdict::Allow);
  EXPECT_EQ(e.decide({Operation::Write, "/home/u/.npm/x"}).verdict, Verdict::Deny);
}

TEST(HomeRules, ASecretUnderAReadableRootIsDecidedPerOpen) {
  // A user who opens all of $HOME still keeps ~/.ssh closed: then read opens
  // must reach user space.
  LoadResult res = loadWith(sampleHome(), "code-sandbox", {"filesystem.readableRoots+=~"});
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(Engine(res.policy).decide({Operation::Read, "/home/u/.ssh/id_ed25519"}).rule_id, "secret:ssh");
  EXPECT_TRUE(compile(*res.policy).seccomp.notify_read_opens);
}

TEST(HomeRules, FlagsAreBooleansOfTheBasePolicy) {
  LoadResult res = loadWith({}, "code-sandbox", {"filesystem.caches=\"yes\""});
  EXPECT_FALSE(res.ok());
  LoadRequest r;
  r.workspace = "/ws";
  r.home = "/home/u";
  r.files.push_back({"p.json", R"({"profiles": {"x": {"filesystem": {"caches": true}}}})"});
  EXPECT_FALSE(load(r).ok());
}

}  // namespace
}  // namespace sv::policy

namespace sv::policy {
namespace {

TEST(HomeRules, SuggestionsNameTheWholeToolchain) {
  EXPECT_EQ(toolchainRootFor("/home/u", "/home/u/.pyenv/shims/python3"), "/home/u/.pyenv");
  EXPECT_EQ(toolchainRootFor("/home/u", "/home/u/tools/venv/bin/tool"), "/home/u/tools/venv");
  EXPECT_EQ(toolchainRootFor("/home/u", "/srv/sdk/bin/go"), "/srv/sdk");
  EXPECT_EQ(toolchainRootFor("/home/u", "/home/u/notes.txt"), "/home/u/notes.txt");
  // Never $HOME or above it: ~/bin/x stays the file.
  EXPECT_EQ(toolchainRootFor("/home/u", "/home/u/bin/x"), "/home/u/bin/x");
  EXPECT_EQ(toolchainRootFor("/home/u", "/bin/x"), "/bin/x");
}

}  // namespace
}  // namespace sv::policy
