// Self-protection through the real binary (docs/policy.md, "Self-protection"):
// a supervised tree cannot append to, truncate, rename, unlink, link or chmod
// its own --audit-file (in the workspace, and under /tmp outside it), nor
// rewrite the --policy file it runs under; each attempt fails with EACCES, is
// one deny event with a self-protect rule and a denial line, and the files
// are intact. The session start event lists the protected paths, and
// `explain` names the rule. Root; skips, saying why, without the kernel
// features a session needs.
#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/common/run_command.h"
#include "tests/common/audit_events.h"
#include "tests/common/host_features.h"

namespace sv::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kSupervise = SV_SUPERVISE_BIN;

std::string probeMissing() { return missingSessionFeature(kSupervise); }
std::vector<json> readEvents(const std::string& path) { return readAuditEvents(path); }

bool hasLine(const std::string& text, const std::string& line) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (l == line) return true;
  return false;
}

int countDenies(const std::vector<json>& events, const std::string& rule) {
  int n = 0;
  for (const auto& e : events)
    if (e.value("decision", "") == "deny" && e.contains("rule") && e["rule"].is_object() &&
        e["rule"].value("id", "") == rule && e.value("errno", "") == "EACCES")
      ++n;
  return n;
}

struct FileId {
  ino_t ino = 0;
  nlink_t nlink = 0;
  mode_t mode = 0;
};
FileId idOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {st.st_ino, st.st_nlink, st.st_mode};
}

// Every way the deny-write rules cover, tried on $F; $T is a scratch name
// beside it. Each line prints "RC <name> <status>".
const char* const kAttempts[][2] = {
    {"append", R"(echo '{"forged":true}' >> "$F")"},
    {"truncate-redirect", R"(: > "$F")"},
    {"truncate", R"(truncate -s0 "$F")"},
    {"python-truncate", R"(/usr/bin/python3 -c 'import os, sys; os.truncate(sys.argv[1], 0)' "$F")"},
    {"rename-away", R"(mv -f "$F" "$T")"},
    {"rename-onto", R"(echo forged > "$T" && mv -f "$T" "$F")"},
    {"unlink", R"(rm -f "$F")"},
    {"hardlink", R"(ln "$F" "$T.link")"},
    {"chmod", R"(chmod 666 "$F")"},
    {"touch", R"(touch "$F")"},
    {"symlink-write", R"(ln -sf "$F" "$T.sym" && echo forged >> "$T.sym")"},
};

std::string attemptsScript() {
  std::string s;
  for (const auto& a : kAttempts)
    s += std::string("( ") + a[1] + " ); echo \"RC " + a[0] + " $?\"\n";
  return s;
}

class SelfProtect : public testing::Test {
 protected:
  void SetUp() override {
    if (std::string missing = probeMissing(); !missing.empty()) GTEST_SKIP() << missing;
    char tmpl[] = "/tmp/sv-selfprotect-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr) << std::strerror(errno);
    root_ = tmpl;
    ws_ = root_ + "/ws";
    ASSERT_EQ(::mkdir(ws_.c_str(), 0755), 0);
  }
  void TearDown() override {
    std::error_code ec;
    if (!root_.empty()) fs::remove_all(root_, ec);
  }
  CommandResult run(const std::vector<std::string>& argv, const std::string& cwd = "") {
    CommandOptions o;
    o.cwd = cwd.empty() ? ws_ : cwd;
    return runCommand(argv, root_ + "/out-" + std::to_string(++n_), o);
  }
  void write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }

  // Runs every attempt against `audit` (also the --audit-file) and checks
  // that each failed, the file kept its inode, links, mode and earlier
  // content and holds no forged line, and each attempt is a deny event.
  void expectAuditFileProtected(const std::string& audit) {
    const std::string earlier = "{\"an\":\"earlier session\"}\n";
    write(audit, earlier);
    ::chmod(audit.c_str(), 0600);
    const FileId before = idOf(audit);
    const std::string script = "F='" + audit + "'; T='" + ws_ + "/scratch'\n" + attemptsScript();
    auto r = run({kSupervise, "--audit-file", audit, "--", "bash", "-c", script});
    ASSERT_FALSE(r.timed_out) << r.describe();
    ASSERT_EQ(r.status, 0) << r.describe();
    for (const auto& a : kAttempts) {
      SCOPED_TRACE(a[0]);
      EXPECT_NE(r.out.find(std::string("RC ") + a[0] + " "), std::string::npos) << r.describe();
      EXPECT_EQ(r.out.find(std::string("RC ") + a[0] + " 0\n"), std::string::npos)
          << "the attempt succeeded\n" << r.describe();
    }
    const std::string after = slurp(audit);
    EXPECT_EQ(after.compare(0, earlier.size(), earlier), 0) << "earlier content changed";
    // (the command line itself, in the start event, spells "forged")
    EXPECT_FALSE(hasLine(after, R"({"forged":true})")) << after;
    EXPECT_FALSE(hasLine(after, "forged")) << after;
    const FileId now = idOf(audit);
    EXPECT_EQ(now.ino, before.ino) << "replaced";
    EXPECT_EQ(now.nlink, 1u) << "linked";
    EXPECT_EQ(now.mode & 07777, 0600u) << "chmod";
    EXPECT_FALSE(fs::exists(ws_ + "/scratch.link"));
    auto events = readEvents(audit);
    ASSERT_GE(events.size(), 3u);
    events.erase(events.begin());  // the earlier session's line
    // One deny per attempt at least (rename-onto and symlink-write create
    // their scratch file first, which is allowed).
    EXPECT_GE(countDenies(events, "self-protect:audit-file"), int(std::size(kAttempts)))
        << after;
    EXPECT_NE(r.err.find("(rule self-protect:audit-file: the audit trail is out of the tree's "
                         "reach)"),
              std::string::npos)
        << r.describe();
    EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r.describe();
    // The start event lists it.
    const json& start = events.front();
    ASSERT_EQ(start.value("operation", ""), "start") << start.dump();
    bool listed = false;
    for (const auto& p : start["session"]["self_protected"])
      listed |= p.value("path", "") == audit && p.value("id", "") == "self-protect:audit-file";
    EXPECT_TRUE(listed) << start["session"]["self_protected"].dump();
  }

  std::string root_, ws_;
  int n_ = 0;
};

TEST_F(SelfProtect, AuditFileInTheWorkspaceIsOutOfReach) {
  expectAuditFileProtected(ws_ + "/audit.jsonl");
}

// mode audit enforces nothing else, but the trail stays out of reach: the
// append fails (deny, EACCES), while a write the policy would deny (.env)
// goes through as would-deny.
TEST_F(SelfProtect, AuditModeStillProtectsTheTrail) {
  const std::string audit = root_ + "/audit.jsonl";
  auto r = run({kSupervise, "-o", "mode=audit", "--audit-file", audit, "--", "sh", "-c",
                "echo forged >> '" + audit + "' && exit 9; echo ok > .env || exit 8; exit 0"});
  ASSERT_EQ(r.status, 0) << r.describe();
  EXPECT_EQ(slurp(ws_ + "/.env"), "ok\n");
  EXPECT_FALSE(hasLine(slurp(audit), "forged"));
  auto events = readEvents(audit);
  EXPECT_EQ(countDenies(events, "self-protect:audit-file"), 1) << slurp(audit);
  int would = 0;
  for (const auto& e : events)
    would += e.value("decision", "") == "would-deny" && e["rule"].value("id", "") == "deny-write-env";
  EXPECT_EQ(would, 1) << slurp(audit);
  EXPECT_NE(r.err.find("supervise: denied write to " + audit), std::string::npos) << r.describe();
  EXPECT_NE(r.err.find("supervise: would deny write to .env"), std::string::npos) << r.describe();
}

// /tmp is a writable root of code-sandbox, outside the workspace: still the
// engine's decision on the user-notify path.
TEST_F(SelfProtect, AuditFileUnderTmpOutsideTheWorkspaceIsOutOfReach) {
  expectAuditFileProtected(root_ + "/audit.jsonl");
}

// A relative --audit-file through a symlinked directory: the rule holds for
// the physical path the supervisor resolves calls to.
TEST_F(SelfProtect, AuditFileReachedThroughASymlinkedDirectory) {
  ASSERT_EQ(::mkdir((root_ + "/real").c_str(), 0755), 0);
  ASSERT_EQ(::symlink((root_ + "/real").c_str(), (ws_ + "/logs").c_str()), 0);
  auto r = run({kSupervise, "--audit-file", "logs/a.jsonl", "--", "bash", "-c",
                "echo forged >> logs/a.jsonl; echo RC $?; echo forged >> " + root_ +
                    "/real/a.jsonl; echo RC $?"});
  ASSERT_EQ(r.status, 0) << r.describe();
  EXPECT_EQ(r.out, "RC 1\nRC 1\n") << r.describe();
  EXPECT_FALSE(hasLine(slurp(root_ + "/real/a.jsonl"), "forged"));
  EXPECT_EQ(countDenies(readEvents(root_ + "/real/a.jsonl"), "self-protect:audit-file"), 2);
}

TEST_F(SelfProtect, PolicyFileInTheWorkspaceCannotBeRewritten) {
  const std::string policy = ws_ + "/policy.json";
  const std::string text = R"({"network": {"mode": "none"}})";
  write(policy, text);
  const std::string audit = root_ + "/a.jsonl";
  auto r = run({kSupervise, "--policy", "policy.json", "--audit-file", audit, "--", "bash", "-c",
                "echo '{\"network\":{\"mode\":\"all\"}}' > policy.json; echo RC $?; "
                "mv policy.json p2; echo RC $?; rm -f policy.json; echo RC $?"});
  ASSERT_EQ(r.status, 0) << r.describe();
  EXPECT_EQ(r.out, "RC 1\nRC 1\nRC 1\n") << r.describe();
  EXPECT_EQ(slurp(policy), text);
  const auto events = readEvents(audit);
  EXPECT_EQ(countDenies(events, "self-protect:policy-file"), 3) << slurp(audit);
  EXPECT_NE(r.err.find("denied write to policy.json (rule self-protect:policy-file"),
            std::string::npos)
      << r.describe();
  // The start event lists the policy file, the binary and the runtime state.
  ASSERT_FALSE(events.empty());
  std::set<std::string> ids;
  for (const auto& p : events.front()["session"]["self_protected"]) {
    ids.insert(p.value("id", ""));
    EXPECT_EQ(p.value("access", ""), "write") << p.dump();
  }
  for (const char* id : {"self-protect:policy-file", "self-protect:audit-file",
                         "self-protect:binary", "self-protect:bpf-pins",
                         "self-protect:runtime-state"})
    EXPECT_TRUE(ids.count(id)) << id << " missing from " << events.front()["session"].dump();
}

// A policy file sink that rotates: the live file and every rotated sibling.
TEST_F(SelfProtect, RotatedSiblingsOfAPolicySinkAreOutOfReach) {
  write(ws_ + "/.supervise.json",
        R"({"audit": {"sinks": [{"type": "file", "path": "trail.jsonl", "maxSizeMb": 1,
                                  "maxFiles": 3}]}})");
  write(ws_ + "/trail.jsonl.2", "old\n");
  auto r = run({kSupervise, "--", "bash", "-c",
                "echo forged >> trail.jsonl; echo RC $?; echo forged > trail.jsonl.1; echo RC $?; "
                "rm trail.jsonl.2; echo RC $?; echo ok > trail.jsonl.3; echo RC $?"});
  ASSERT_EQ(r.status, 0) << r.describe();
  EXPECT_EQ(r.out, "RC 1\nRC 1\nRC 1\nRC 0\n") << r.describe();
  EXPECT_EQ(slurp(ws_ + "/trail.jsonl.2"), "old\n");
  EXPECT_FALSE(fs::exists(ws_ + "/trail.jsonl.1"));
  EXPECT_EQ(countDenies(readEvents(ws_ + "/trail.jsonl"), "self-protect:audit-file"), 3);
}

TEST_F(SelfProtect, ExplainNamesTheRule) {
  const std::string audit = ws_ + "/audit.jsonl";
  write(audit, "");
  auto r = run({kSupervise, "explain", "--audit-file", "audit.jsonl", "write", "audit.jsonl"});
  EXPECT_EQ(r.status, 1) << r.describe();
  EXPECT_NE(r.out.find("self-protect:audit-file"), std::string::npos) << r.describe();
  EXPECT_NE(r.out.find("the audit trail is out of the tree's reach"), std::string::npos)
      << r.describe();
  // Without the flag the file is an ordinary workspace file...
  r = run({kSupervise, "explain", "write", "audit.jsonl"});
  EXPECT_EQ(r.status, 0) << r.describe();
  // ...but the policy's own sinks and the policy file are known to explain.
  write(ws_ + "/p.json", R"({"audit": {"sinks": [{"type": "file", "path": "t.jsonl"}]}})");
  r = run({kSupervise, "explain", "--policy", "p.json", "--json", "write", "t.jsonl"});
  EXPECT_EQ(r.status, 1) << r.describe();
  EXPECT_NE(r.out.find("self-protect:audit-file"), std::string::npos) << r.describe();
  r = run({kSupervise, "explain", "--policy", "p.json", "write", "p.json"});
  EXPECT_EQ(r.status, 1) << r.describe();
  EXPECT_NE(r.out.find("self-protect:policy-file"), std::string::npos) << r.describe();
}

}  // namespace
}  // namespace sv::test
