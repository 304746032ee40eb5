// audit.chain and `supervise verify` (docs/audit-events.md, "Hash chain"):
// AuditLog writes chained file sinks (two sessions interleaved in one file,
// a rotating sink, all three formats), and the real binary's `verify` finds
// an edited, a removed and an inserted line at the first line where the
// chain breaks (exit 1), passes the intact files (exit 0), and reports usage
// errors (exit 2). No privileges needed.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "supervisor/audit/audit_log.h"
#include "supervisor/audit/sha256.h"
#include "tests/common/run_command.h"

namespace sv::supervisor {
namespace {

namespace fs = std::filesystem;

SessionInfo sessionInfo() {
  return {newSessionId(), "host", "code-sandbox", "digest", "0.1.0", "boot", Redactor()};
}

AuditEvent fileEvent(int i) {
  AuditEvent e;
  e.category = "file";
  e.operation = "write";
  e.decision = i % 3 ? "allow" : "deny";
  e.enforced_by = "seccomp";
  e.rule_id = "workspace";
  e.file.path = "/ws/f" + std::to_string(i);
  return e;
}

std::vector<std::string> lines(const std::string& path) {
  std::vector<std::string> out;
  std::istringstream in(test::slurp(path));
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}
void writeLines(const std::string& path, const std::vector<std::string>& ls) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  for (const auto& l : ls) out << l << "\n";
}

class AuditChain : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sv-chain-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  test::CommandResult verify(std::vector<std::string> files) {
    std::vector<std::string> argv{SV_SUPERVISE_BIN, "verify"};
    argv.insert(argv.end(), files.begin(), files.end());
    return test::runCommand(argv, dir_ + "/verify-" + std::to_string(++n_));
  }
  // Two sessions writing one file, their lines interleaved, each chained.
  std::string twoSessions(AuditFormat format = AuditFormat::Native) {
    const std::string path = dir_ + "/audit.jsonl";
    AuditLogOptions o;
    o.chain = true;
    o.format = format;
    o.write_coalesce = std::chrono::microseconds(0);  // each line at once: real interleaving
    AuditLog a(sessionInfo(), o), b(sessionInfo(), o);
    EXPECT_TRUE(a.addFileSink(path).ok());
    EXPECT_TRUE(b.addFileSink(path).ok());
    a.emit(sessionStartEvent({"a"}, nullptr, {}));
    b.emit(sessionStartEvent({"b"}, nullptr, {}));
    for (int i = 0; i < 6; ++i) {
      a.emit(fileEvent(i));
      a.flush();
      b.emit(fileEvent(100 + i));
      b.flush();
    }
    a.finish(ExitStatus{0, 0, false});
    b.finish(ExitStatus{0, 0, false});
    return path;
  }
  std::string dir_;
  int n_ = 0;
};

TEST_F(AuditChain, EveryLineCarriesTheHashOfItsSessionsPreviousLine) {
  const std::string path = twoSessions();
  const auto ls = lines(path);
  ASSERT_EQ(ls.size(), 16u);
  std::map<std::string, std::string> prev;
  for (const auto& l : ls) {
    auto j = nlohmann::json::parse(l);
    const std::string sid = j["session_id"];
    const std::string want = prev.count(sid) ? prev[sid] : sha256Hex(sid);
    EXPECT_EQ(j.value("chain", ""), want) << l;
    prev[sid] = sha256Hex(l);
  }
  auto r = verify({path});
  EXPECT_EQ(r.status, 0) << r.describe();
  EXPECT_NE(r.out.find("intact"), std::string::npos) << r.describe();
}

TEST_F(AuditChain, VerifyFindsAnEditedLine) {
  const std::string path = twoSessions();
  auto ls = lines(path);
  // Line 5 (1-based) is edited: a deny turned into an allow.
  auto j = nlohmann::json::parse(ls[4]);
  const std::string sid = j["session_id"];
  ASSERT_NE(ls[4].find("\"f"), std::string::npos);
  ls[4].replace(ls[4].find("/ws/f"), 5, "/ws/g");
  writeLines(path, ls);
  // The chain breaks at the next line of the same session.
  size_t next = 5;
  while (nlohmann::json::parse(ls[next])["session_id"] != sid) ++next;
  auto r = verify({path});
  EXPECT_EQ(r.status, 1) << r.describe();
  EXPECT_NE(r.out.find(path + ":" + std::to_string(next + 1) + ": chain broken"),
            std::string::npos)
      << r.describe();
  EXPECT_NE(r.out.find("edited"), std::string::npos) << r.describe();
}

TEST_F(AuditChain, VerifyFindsARemovedLine) {
  const std::string path = twoSessions();
  auto ls = lines(path);
  const std::string sid = nlohmann::json::parse(ls[6])["session_id"];
  ls.erase(ls.begin() + 6);  // line 7
  size_t next = 6;
  while (nlohmann::json::parse(ls[next])["session_id"] != sid) ++next;
  writeLines(path, ls);
  auto r = verify({path});
  EXPECT_EQ(r.status, 1) << r.describe();
  EXPECT_NE(r.out.find(path + ":" + std::to_string(next + 1) + ": chain broken"),
            std::string::npos)
      << r.describe();
  EXPECT_NE(r.out.find("removed"), std::string::npos) << r.describe();
}

TEST_F(AuditChain, VerifyFindsAnInsertedLine) {
  const std::string path = twoSessions();
  for (bool with_chain : {false, true}) {
    SCOPED_TRACE(with_chain);
    auto ls = lines(path);
    // A forged copy of line 3, placed as line 4: with its chain kept (it then
    // chains to the wrong line) or without one.
    auto forged = nlohmann::ordered_json::parse(ls[2]);
    forged["decision"] = "allow";
    if (!with_chain) forged.erase("chain");
    std::vector<std::string> edited = ls;
    edited.insert(edited.begin() + 3, forged.dump());
    const std::string copy = dir_ + "/inserted.jsonl";
    writeLines(copy, edited);
    auto r = verify({copy});
    EXPECT_EQ(r.status, 1) << r.describe();
    EXPECT_NE(r.out.find(copy + ":4: chain broken"), std::string::npos) << r.describe();
    EXPECT_NE(r.out.find("inserted"), std::string::npos) << r.describe();
  }
  // A line of a session inserted at the very front, chained to the seed of
  // a session whose real start follows: the real start then breaks.
  auto ls = lines(path);
  const std::string sid = nlohmann::json::parse(ls[0])["session_id"];
  nlohmann::ordered_json fake = nlohmann::ordered_json::parse(ls[2]);
  fake["session_id"] = sid;
  fake["chain"] = sha256Hex(sid);
  ls.insert(ls.begin(), fake.dump());
  writeLines(path, ls);
  auto r = verify({path});
  EXPECT_EQ(r.status, 1) << r.describe();
  EXPECT_NE(r.out.find(path + ":2: chain broken"), std::string::npos) << r.describe();
}

TEST_F(AuditChain, RotatedFilesAreOneStreamOldestFirst) {
  const std::string path = dir_ + "/rot.jsonl";
  AuditLogOptions o;
  o.chain = true;
  o.write_coalesce = std::chrono::microseconds(0);
  {
    AuditLog log(sessionInfo(), o);
    audit::FileRotation rot;
    rot.max_bytes = 1500;  // a few lines per file
    rot.max_files = 10;
    ASSERT_TRUE(log.addFileSink(path, rot).ok());
    log.emit(sessionStartEvent({"r"}, nullptr, {}));
    for (int i = 0; i < 12; ++i) {
      log.emit(fileEvent(i));
      log.flush();
    }
    log.finish(ExitStatus{0, 0, false});
  }
  std::vector<std::string> files;
  for (int k = 9; k >= 1; --k)
    if (fs::exists(path + "." + std::to_string(k))) files.push_back(path + "." + std::to_string(k));
  files.push_back(path);
  ASSERT_GE(files.size(), 3u) << "no rotation happened";
  auto r = verify(files);
  EXPECT_EQ(r.status, 0) << r.describe();
  // The live file alone starts in the middle of the session.
  r = verify({path});
  EXPECT_EQ(r.status, 1) << r.describe();
  EXPECT_NE(r.out.find("rotated file"), std::string::npos) << r.describe();
  // Newest first is out of order.
  std::vector<std::string> reversed(files.rbegin(), files.rend());
  EXPECT_EQ(verify(reversed).status, 1);
}

TEST_F(AuditChain, OcsfAndEcsLinesChainInTheirFreeNamespace) {
  for (AuditFormat f : {AuditFormat::Ocsf, AuditFormat::Ecs}) {
    SCOPED_TRACE(int(f));
    const std::string path = twoSessions(f);
    const auto ls = lines(path);
    ASSERT_FALSE(ls.empty());
    auto j = nlohmann::json::parse(ls[0]);
    const char* ns = f == AuditFormat::Ocsf ? "unmapped" : "supervise";
    EXPECT_EQ(j[ns].value("chain", "").size(), 64u) << ls[0];
    EXPECT_FALSE(j.contains("chain")) << ls[0];
    auto r = verify({path});
    EXPECT_EQ(r.status, 0) << r.describe();
    auto edited = ls;
    edited[3].replace(edited[3].find("/ws/f"), 5, "/ws/g");
    writeLines(path, edited);
    EXPECT_EQ(verify({path}).status, 1);
    fs::remove(path);
  }
}

TEST_F(AuditChain, UnchainedFilesAndUsage) {
  const std::string path = dir_ + "/plain.jsonl";
  {
    AuditLog log(sessionInfo());
    ASSERT_TRUE(log.addFileSink(path).ok());
    log.emit(fileEvent(1));
    log.finish(ExitStatus{0, 0, false});
  }
  auto r = verify({path});
  EXPECT_EQ(r.status, 1) << r.describe();
  EXPECT_NE(r.out.find("nothing to verify"), std::string::npos) << r.describe();
  EXPECT_EQ(verify({dir_ + "/missing.jsonl"}).status, 2);
  EXPECT_EQ(verify({}).status, 2);
}

}  // namespace
}  // namespace sv::supervisor
