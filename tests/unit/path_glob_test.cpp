// Table-driven tests for path normalisation and glob matching.
#include <gtest/gtest.h>

#include "policy/glob.h"
#include "policy/path.h"

namespace sv::policy {
namespace {

struct NormCase {
  const char* cwd;
  const char* in;
  const char* out;
};

TEST(NormalizePath, Table) {
  const NormCase cases[] = {
      {"/ws", "a/b", "/ws/a/b"},
      {"/ws", "./a/./b/", "/ws/a/b"},
      {"/ws", "a//b///c", "/ws/a/b/c"},
      {"/ws", "../x", "/x"},
      {"/ws", "a/../../..", "/"},
      {"/ws", "/abs/../y", "/y"},
      {"/ws", "/", "/"},
      {"/ws", "", "/ws"},
      {"/ws", ".", "/ws"},
      {"/", "..", "/"},
      {"/a/b/", "c/..", "/a/b"},
      {"/ws", "/..//..", "/"},
      {"/ws", "...", "/ws/..."},
      {"/ws", ".hidden/", "/ws/.hidden"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(normalizePath(c.cwd, c.in), c.out) << c.cwd << " + " << c.in;
  }
}

TEST(IsUnder, Table) {
  EXPECT_TRUE(isUnder("/ws", "/ws"));
  EXPECT_TRUE(isUnder("/ws/a", "/ws"));
  EXPECT_FALSE(isUnder("/wsx", "/ws"));
  EXPECT_FALSE(isUnder("/w", "/ws"));
  EXPECT_TRUE(isUnder("/anything", "/"));
  EXPECT_TRUE(isUnder("/", "/"));
}

TEST(PathInRoot, TakesTheRootsNameOffTheFront) {
  EXPECT_EQ(pathInRoot("/mnt/chr/tmp/ws", "/mnt/chr"), "/tmp/ws");
  EXPECT_EQ(pathInRoot("/mnt/chr", "/mnt/chr"), "/");
  EXPECT_EQ(pathInRoot("/tmp/ws", "/"), "/tmp/ws");
  EXPECT_EQ(pathInRoot("/tmp/ws", ""), "/tmp/ws");
  // Outside the root (or a name that only starts the same): kept as given.
  EXPECT_EQ(pathInRoot("/mnt/chroot/x", "/mnt/chr"), "/mnt/chroot/x");
  EXPECT_EQ(pathInRoot("/etc/passwd", "/mnt/chr"), "/etc/passwd");
  std::string cwd = "/mnt/chr/tmp/ws";
  takePathInRoot(cwd, "/mnt/chr");
  EXPECT_EQ(cwd, "/tmp/ws");
}

struct GlobCase {
  const char* pattern;
  bool prefix;
  const char* path;
  bool match;
};

TEST(Glob, Table) {
  const GlobCase cases[] = {
      // literals and prefixes
      {"/ws/a", false, "/ws/a", true},
      {"/ws/a", false, "/ws/a/b", false},
      {"/ws/a", true, "/ws/a/b", true},
      {"/ws/a", true, "/ws/ab", false},
      {"/ws/a/", false, "/ws/a/b/c", true},
      {"/", true, "/etc/passwd", true},
      {"/", true, "/", true},
      // `*` and `?` stay inside one component
      {"/ws/*.c", false, "/ws/x.c", true},
      {"/ws/*.c", false, "/ws/d/x.c", false},
      {"/ws/?.c", false, "/ws/ab.c", false},
      {"/ws/?.c", false, "/ws/a.c", true},
      {"/ws/*", false, "/ws/.hidden", true},  // dotfiles are not special
      {"/ws/.env*", false, "/ws/.env.local", true},
      {"/ws/.env.*", false, "/ws/.env", false},
      {"/ws/*", false, "/ws", false},
      // `**`
      {"/ws/**", false, "/ws", true},
      {"/ws/**", false, "/ws/a/b/c", true},
      {"/ws/**/.env", false, "/ws/.env", true},
      {"/ws/**/.env", false, "/ws/a/b/.env", true},
      {"/ws/**/.env", false, "/ws/a/b/.envx", false},
      {"/ws/**/.env", false, "/other/.env", false},
      {"/ws/**/.git/hooks/**", false, "/ws/sub/.git/hooks/pre-commit", true},
      {"/ws/**/.git/hooks/**", false, "/ws/.git/hooks", true},
      {"/ws/**/.git/hooks/**", false, "/ws/.git/config", false},
      {"/ws/**/a/**/b", false, "/ws/x/a/y/z/b", true},
      {"/ws/**/a/**/b", false, "/ws/a/b", true},
      {"/ws/**/a/**/b", false, "/ws/b/a", false},
      {"/**", false, "/", true},
      {"/**/x", false, "/x", true},
      // prefix globs also catch everything below a match
      {"/ws/**/.env", true, "/ws/a/.env/inner", true},
      {"/ws/**/.git/config", true, "/ws/.git/config", true},
      // classes
      {"/ws/[abc].txt", false, "/ws/b.txt", true},
      {"/ws/[abc].txt", false, "/ws/d.txt", false},
      {"/ws/[!abc].txt", false, "/ws/d.txt", true},
      {"/ws/[!abc].txt", false, "/ws/a.txt", false},
      {"/ws/[^a].txt", false, "/ws/a.txt", false},
      {"/ws/[a-c]x", false, "/ws/bx", true},
      {"/ws/[a-c]x", false, "/ws/dx", false},
      {"/ws/[]]x", false, "/ws/]x", true},
      {"/ws/[!]]x", false, "/ws/]x", false},
      {"/ws/[0-9][0-9]", false, "/ws/42", true},
      // escapes
      {"/ws/\\*", false, "/ws/*", true},
      {"/ws/\\*", false, "/ws/x", false},
      // relative / empty paths never match
      {"/ws/**", false, "ws/a", false},
      {"/ws/**", false, "", false},
  };
  for (const auto& c : cases) {
    Glob g;
    std::string err;
    ASSERT_TRUE(Glob::compile(c.pattern, &g, &err, nullptr, c.prefix)) << c.pattern << ": " << err;
    EXPECT_EQ(g.matches(c.path), c.match) << c.pattern << (c.prefix ? " (prefix)" : "") << " vs "
                                          << c.path;
  }
}

TEST(Glob, SyntaxErrorsWithColumn) {
  struct Bad {
    const char* pattern;
    int column;
  };
  const Bad cases[] = {
      {"/ws/[abc", 4}, {"/ws/a**", 5}, {"/ws/**x/y", 4}, {"/ws/[]", 4}, {"/ws/x\\", 5},
  };
  for (const auto& c : cases) {
    Glob g;
    std::string err;
    int col = -1;
    EXPECT_FALSE(Glob::compile(c.pattern, &g, &err, &col)) << c.pattern;
    EXPECT_EQ(col, c.column) << c.pattern << ": " << err;
    EXPECT_FALSE(err.empty());
  }
  Glob g;
  std::string err;
  EXPECT_FALSE(Glob::compile("relative/x", &g, &err));
}

TEST(Glob, LiteralPrefix) {
  Glob g;
  ASSERT_TRUE(Glob::compile("/home/u/ws/**/.env", &g, nullptr));
  EXPECT_EQ(g.literalPrefix(), "/home/u/ws");
  EXPECT_FALSE(g.isLiteral());
  ASSERT_TRUE(Glob::compile("/usr/bin/ssh", &g, nullptr));
  EXPECT_EQ(g.literalPrefix(), "/usr/bin/ssh");
  EXPECT_TRUE(g.isLiteral());
  ASSERT_TRUE(Glob::compile("/*/x", &g, nullptr));
  EXPECT_EQ(g.literalPrefix(), "/");
}

// The walk for protected names (tracer/protected_names.h) enters only the
// directories this says yes to: `.env.*` at the workspace's top is found
// without walking the workspace.
TEST(Glob, CouldMatchBelow) {
  Glob g;
  ASSERT_TRUE(Glob::compile("/ws/.env.*", &g, nullptr, nullptr, /*prefix=*/true));
  EXPECT_TRUE(g.couldMatchBelow("/"));
  EXPECT_TRUE(g.couldMatchBelow("/ws"));
  EXPECT_FALSE(g.couldMatchBelow("/ws/src"));
  EXPECT_TRUE(g.couldMatchBelow("/ws/.env.d"));  // a match: everything below it matches
  EXPECT_FALSE(g.couldMatchBelow("/tmp"));
  ASSERT_TRUE(Glob::compile("/ws/.env.*", &g, nullptr));  // not a prefix glob
  EXPECT_FALSE(g.couldMatchBelow("/ws/.env.d"));
  ASSERT_TRUE(Glob::compile("/ws/**/.env", &g, nullptr));
  EXPECT_TRUE(g.couldMatchBelow("/ws/a/b/c"));
  EXPECT_FALSE(g.couldMatchBelow("/other/a"));
  ASSERT_TRUE(Glob::compile("/ws/.git/hooks", &g, nullptr, nullptr, true));
  EXPECT_TRUE(g.couldMatchBelow("/ws/.git"));
  EXPECT_FALSE(g.couldMatchBelow("/ws/.github"));
  EXPECT_FALSE(g.couldMatchBelow("relative"));
}

// Patterns that blow up naive backtracking matchers finish at once here.
TEST(Glob, NoBacktrackingBlowUp) {
  std::string pattern = "/";
  for (int i = 0; i < 30; ++i) pattern += "**/a*a*a*a*/";
  pattern += "b";
  std::string path;
  for (int i = 0; i < 200; ++i) path += "/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
  Glob g;
  ASSERT_TRUE(Glob::compile(pattern, &g, nullptr));
  EXPECT_FALSE(g.matches(path));
  std::string comp = "/" + std::string(5000, 'a');
  ASSERT_TRUE(Glob::compile("/*a*a*a*a*a*a*a*a*a*a*a*b", &g, nullptr));
  EXPECT_FALSE(g.matches(comp));
}

}  // namespace
}  // namespace sv::policy
