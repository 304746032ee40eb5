// End to end: `supervise --audit-file F -- sh -c ...` makes file, exec and
// session events; every line validates against the JSON Schema, seq is
// gap-free, and --audit-format ocsf|ecs write the same run in those shapes.
// Needs root and seccomp user-notify (GTEST_SKIP otherwise).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace {

using nlohmann::json;

class AuditStream : public testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root: euid " << geteuid();
    char tmpl[] = "/tmp/sv-audit-stream-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }

  // Runs a shell script under supervise in dir_ (the workspace); returns the exit status.
  int run(const std::string& format, const std::string& audit, const std::string& script) {
    const std::string cmd = "cd " + dir_ + " && " + SUPERVISE_BIN + " --quiet --audit-format " +
                            format + " --audit-file " + audit + " -- /bin/sh -c '" + script +
                            "' >/dev/null 2>" + dir_ + "/stderr";
    const int st = std::system(cmd.c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }

  std::vector<json> lines(const std::string& path) {
    std::ifstream in(path);
    std::vector<json> out;
    for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
    return out;
  }

  std::string dir_;
};

constexpr const char* kScript = "echo hi > ok.txt; echo x > .env; /bin/true; exit 3";

TEST_F(AuditStream, NativeEventsValidateAndSeqIsGapFree) {
  const std::string audit = dir_ + "/audit.jsonl";
  const int status = run("native", audit, kScript);
  if (status == 125) GTEST_SKIP() << "needs a host supervise can enforce on (exit 125)";
  EXPECT_EQ(status, 3);
  const std::string cmd = std::string("python3 ") + SV_VALIDATOR + " " + SV_SCHEMA + " " + audit +
                          " --require file,exec,session:start,session:end 1>&2";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  auto events = lines(audit);
  ASSERT_GE(events.size(), 3u);
  uint64_t seq = 0;
  for (const auto& e : events) EXPECT_EQ(e["seq"], ++seq) << e.dump();
  EXPECT_EQ(events.front()["operation"], "start");
  EXPECT_EQ(events.back()["session"]["exit"]["code"], 3);
  EXPECT_EQ(events.front()["policy"]["sha256"].get<std::string>().size(), 64u);
  bool denied_env = false;
  for (const auto& e : events)
    denied_env |= e.value("decision", "") == "deny" && e["file"].value("path", "") == dir_ + "/.env";
  EXPECT_TRUE(denied_env);
}

TEST_F(AuditStream, OcsfAndEcsCarryTheSameRun) {
  const std::string ocsf = dir_ + "/ocsf.jsonl", ecs = dir_ + "/ecs.jsonl";
  const int status = run("ocsf", ocsf, kScript);
  if (status == 125) GTEST_SKIP() << "needs a host supervise can enforce on (exit 125)";
  ASSERT_EQ(run("ecs", ecs, kScript), 3);
  bool file_denied = false, launch = false;
  for (const auto& e : lines(ocsf)) {
    EXPECT_TRUE(e.contains("class_uid") && e.contains("metadata")) << e.dump();
    file_denied |= e["class_uid"] == 1001 && e.value("action_id", 0) == 2;
    launch |= e["class_uid"] == 1007 && e["activity_id"] == 1;
  }
  EXPECT_TRUE(file_denied);
  EXPECT_TRUE(launch);
  bool ecs_denied = false;
  for (const auto& e : lines(ecs)) {
    EXPECT_TRUE(e.contains("@timestamp") && e["ecs"]["version"] == "8.11.0") << e.dump();
    ecs_denied |= e["event"]["type"].dump().find("denied") != std::string::npos &&
                  e.contains("file") && e["rule"].contains("id");
  }
  EXPECT_TRUE(ecs_denied);
}

}  // namespace
