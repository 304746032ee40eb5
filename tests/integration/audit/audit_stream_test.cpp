// End to end: `supervise --audit-file F -- sh -c ...` makes file, exec and
// session events; every line validates against the JSON Schema, seq is
// gap-free, and --audit-format ocsf|ecs write the same run in those shapes.
// Needs root and seccomp user-notify (GTEST_SKIP otherwise).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
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

  // Runs a shell script under supervise in dir_ (the workspace), with `options`
  // (more supervise arguments) if any; returns the exit status.
  int run(const std::string& format, const std::string& audit, const std::string& script,
          const std::string& options = "") {
    const std::string cmd = "cd " + dir_ + " && " + SUPERVISE_BIN + " --quiet --audit-format " +
                            format + " --audit-file " + audit + " " + options + " -- /bin/sh -c '" +
                            script + "' >/dev/null 2>" + dir_ + "/stderr";
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

// audit.level: deny records the denial and every exec decision (sh, then
// /bin/true) but no allowed file access; decisions and all add the allowed
// write of ok.txt.
TEST_F(AuditStream, LevelDenyKeepsDenialsAndExecs) {
  for (const std::string level : {"deny", "decisions", "all"}) {
    SCOPED_TRACE(level);
    const std::string audit = dir_ + "/level-" + level + ".jsonl";
    const int status = run("native", audit, kScript, "-o audit.level=" + level);
    if (status == 125) GTEST_SKIP() << "needs a host supervise can enforce on (exit 125)";
    ASSERT_EQ(status, 3);
    int file_allow = 0, file_deny = 0, exec_allow = 0, sessions = 0;
    for (const auto& e : lines(audit)) {
      const std::string category = e["category"], decision = e.value("decision", "");
      file_allow += category == "file" && decision == "allow";
      file_deny += category == "file" && decision == "deny";
      exec_allow += category == "exec" && decision == "allow";
      sessions += category == "session";
    }
    EXPECT_EQ(file_deny, 1);
    EXPECT_GE(exec_allow, 2) << "every exec decision, at every level";
    EXPECT_EQ(sessions, 2);
    if (level == "deny") {
      EXPECT_EQ(file_allow, 0);
    } else {
      EXPECT_GE(file_allow, 1);
    }
  }
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

// logrotate: the file is moved away, SIGHUP to supervise reopens the path;
// the command does not get the SIGHUP (sh would die of it: exit 129), and
// rotation by size from the policy keeps maxFiles files, each within the cap.
TEST_F(AuditStream, SighupReopensTheFileAndIsNotRelayed) {
  const std::string audit = dir_ + "/audit.jsonl";
  const std::string script = "touch one; while [ ! -e go ]; do sleep 0.05; done; touch two";
  const std::string cmd = "cd " + dir_ + " && exec " + SUPERVISE_BIN + " --quiet --audit-file " +
                          audit + " -- /bin/sh -c '" + script + "' >/dev/null 2>" + dir_ +
                          "/stderr";
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  auto has = [&](const std::string& path, const std::string& what) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str().find(what) != std::string::npos;
  };
  for (int i = 0; i < 200 && !has(audit, dir_ + "/one"); ++i) usleep(50000);
  ASSERT_EQ(::rename(audit.c_str(), (audit + ".1").c_str()), 0);
  ASSERT_EQ(::kill(pid, SIGHUP), 0);
  for (int i = 0; i < 200 && ::access(audit.c_str(), F_OK) != 0; ++i) usleep(20000);
  std::ofstream(dir_ + "/go").close();
  int st = 0;
  waitpid(pid, &st, 0);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 125) GTEST_SKIP() << "needs a host supervise can enforce on";
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "status " << st << " (129: SIGHUP relayed)";
  EXPECT_TRUE(has(audit + ".1", dir_ + "/one"));
  EXPECT_FALSE(has(audit + ".1", dir_ + "/two"));
  EXPECT_TRUE(has(audit, dir_ + "/two"));
  auto after = lines(audit);
  ASSERT_FALSE(after.empty());
  EXPECT_EQ(after.back()["operation"], "end");
}

TEST_F(AuditStream, PolicyFileSinkRotatesBySize) {
  const std::string audit = dir_ + "/rot.jsonl";
  const std::string cmd = "cd " + dir_ + " && " + SUPERVISE_BIN +
                          " --quiet -o 'audit.sinks+={\"type\":\"file\",\"path\":\"" + audit +
                          "\",\"maxSizeMb\":0.01,\"maxFiles\":3}' -- /bin/sh -c "
                          "'for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do "
                          "echo $i > f$i; done' >/dev/null 2>" + dir_ + "/stderr";
  const int st = std::system(cmd.c_str());
  if (WIFEXITED(st) && WEXITSTATUS(st) == 125) GTEST_SKIP() << "needs a host supervise can enforce on";
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  struct stat sb {};
  for (const std::string& f : {audit, audit + ".1", audit + ".2"}) {
    ASSERT_EQ(::stat(f.c_str(), &sb), 0) << f;
    EXPECT_LE(sb.st_size, 10485) << f;
  }
  EXPECT_NE(::stat((audit + ".3").c_str(), &sb), 0);
  EXPECT_EQ(lines(audit).back()["operation"], "end");
}

}  // namespace
