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

  // run() in the native format into dir_/<name>, expecting exit 3; skips the
  // test where supervise cannot enforce (exit 125: check IsSkipped()).
  void runNative(const std::string& name, const std::string& script, std::vector<json>* events) {
    const std::string audit = dir_ + "/" + name;
    const int status = run("native", audit, script);
    if (status == 125) GTEST_SKIP() << "needs a host supervise can enforce on (exit 125)";
    ASSERT_EQ(status, 3);
    *events = lines(audit);
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

// audit.level all is the full file-access trail: the read open of a file in
// the workspace (allowed by Landlock in the kernel at every other level, so
// never seen there) is decided in user space and recorded.
TEST_F(AuditStream, LevelAllRecordsAllowedReadOpens) {
  for (const std::string level : {"decisions", "all"}) {
    SCOPED_TRACE(level);
    const std::string audit = dir_ + "/reads-" + level + ".jsonl";
    const int status =
        run("native", audit, "echo hi > ok.txt; cat ok.txt; exit 3", "-o audit.level=" + level);
    if (status == 125) GTEST_SKIP() << "needs a host supervise can enforce on (exit 125)";
    ASSERT_EQ(status, 3);
    int read_opens = 0, ok_read = 0;
    for (const auto& e : lines(audit)) {
      if (e["category"] != "file" || e.value("operation", "") != "open") continue;
      EXPECT_EQ(e["decision"], "allow") << e.dump();
      ++read_opens;
      ok_read += e["file"].value("path", "") == dir_ + "/ok.txt";
    }
    if (level == "all") {
      EXPECT_EQ(ok_read, 1);
      EXPECT_GE(read_opens, 2) << "the shell's and cat's own read opens too";
    } else {
      EXPECT_EQ(read_opens, 0);
    }
  }
}

// rule.name: file and exec decisions name the rule that fired as section and
// pattern; the policy's defaults have names too.
TEST_F(AuditStream, FileAndExecEventsNameTheirRule) {
  std::vector<json> events;
  runNative("names.jsonl", kScript, &events);
  if (IsSkipped() || HasFatalFailure()) return;
  int decisions = 0, env = 0;
  for (const auto& e : events) {
    if (e["category"] != "file" && e["category"] != "exec") continue;
    ++decisions;
    EXPECT_FALSE(e["rule"].value("name", "").empty()) << e.dump();
    if (e.contains("file") && e["file"].value("path", "") == dir_ + "/.env") {
      ++env;
      EXPECT_EQ(e["rule"]["id"], "deny-write-env");
      EXPECT_EQ(e["rule"]["name"], "filesystem.denyWrite .env");
    }
  }
  EXPECT_GE(decisions, 4);
  EXPECT_EQ(env, 1);
}

// Network decisions (cgroup-bpf) carry the deciding rule's name and reason
// and the syscall: connect for a TCP connect, sendmsg for a UDP sendto (the
// sendmsg hook cannot tell sendto from sendmsg), socket under mode none. No
// packet leaves the machine: 198.51.100.0/24 is refused in the kernel.
TEST_F(AuditStream, NetworkEventsCarryRuleAndSyscall) {
  {
    std::ofstream py(dir_ + "/net.py");
    py << "import socket\n"
          "def tcp(host):\n"
          "    s = socket.socket()\n"
          "    s.settimeout(2)\n"
          "    try: s.connect((host, 9))\n"
          "    except OSError: pass\n"
          "tcp('127.0.0.1')\n"
          "tcp('198.51.100.1')\n"
          "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
          "try: u.sendto(b'x', ('198.51.100.1', 9))\n"
          "except OSError: pass\n";
  }
  const std::string allow =
      "-o network.mode=allowlist -o 'network.allow=[{\"to\": \"127.0.0.1:9\", \"id\": "
      "\"loop9\", \"reason\": \"discard port\"}]'";
  const std::string audit = dir_ + "/net.jsonl";
  // The script runs inside sh -c '...': no single quotes in it.
  const int status = run("native", audit, "/usr/bin/python3 net.py; exit 3", allow);
  if (status == 125) GTEST_SKIP() << "needs a host supervise can enforce on (exit 125)";
  ASSERT_EQ(status, 3) << "stderr in " << dir_;
  int allowed = 0, denied_tcp = 0, denied_udp = 0;
  for (const auto& e : lines(audit)) {
    if (e["category"] != "network") continue;
    SCOPED_TRACE(e.dump());
    ASSERT_TRUE(e.contains("syscall"));
    EXPECT_EQ(e["syscall"]["arch"], "x86_64");
    EXPECT_EQ(e["syscall"]["name"], e["operation"]);
    const std::string ip = e["network"].value("ip", "");
    if (ip == "127.0.0.1" && e["decision"] == "allow") {
      ++allowed;
      EXPECT_EQ(e["syscall"]["nr"], 42);  // connect
      EXPECT_EQ(e["rule"]["id"], "loop9");
      EXPECT_EQ(e["rule"]["name"], "network.allow 127.0.0.1:9");
      EXPECT_EQ(e["rule"]["reason"], "discard port");
    } else if (ip == "198.51.100.1" && e["decision"] == "deny") {
      const bool udp = e["network"].value("proto", "") == "udp";
      (udp ? denied_udp : denied_tcp)++;
      EXPECT_EQ(e["operation"], udp ? "sendmsg" : "connect");
      EXPECT_EQ(e["syscall"]["nr"], udp ? 46 : 42);
      EXPECT_EQ(e["rule"]["id"], "default-deny-connect");
      EXPECT_EQ(e["rule"]["name"], "default: destination not in network.allow");
      EXPECT_EQ(e["rule"]["reason"], "destination not in network.allow");
    }
  }
  EXPECT_EQ(allowed, 1);
  EXPECT_EQ(denied_tcp, 1);
  EXPECT_EQ(denied_udp, 1);
  const std::string cmd = std::string("python3 ") + SV_VALIDATOR + " " + SV_SCHEMA + " " + audit +
                          " --require network 1>&2";
  EXPECT_EQ(std::system(cmd.c_str()), 0);

  // network.mode none: the socket is refused at creation (sock_create).
  const std::string none = dir_ + "/none.jsonl";
  ASSERT_EQ(run("native", none, "/usr/bin/python3 net.py; exit 3", "-o network.mode=none"), 3);
  int sockets = 0;
  for (const auto& e : lines(none)) {
    if (e["category"] != "network") continue;
    SCOPED_TRACE(e.dump());
    EXPECT_EQ(e["decision"], "deny");
    if (e["operation"] != "socket") continue;
    ++sockets;
    EXPECT_EQ(e["syscall"]["name"], "socket");
    EXPECT_EQ(e["syscall"]["nr"], 41);
    EXPECT_EQ(e["rule"]["name"], "network.mode none");
    EXPECT_EQ(e["rule"]["reason"], "network.mode is none");
  }
  EXPECT_GE(sockets, 1);
}

// The start event carries doctor's feature matrix, built from what the
// session's own set-up proved; on the same host and policy it agrees with
// `supervise doctor --json` row for row (the details may word a reason
// differently: the session does not probe).
TEST_F(AuditStream, StartEventCarriesDoctorsMatrix) {
  std::vector<json> events;
  runNative("matrix.jsonl", kScript, &events);
  if (IsSkipped() || HasFatalFailure()) return;
  const json start = events.front();
  ASSERT_EQ(start["operation"], "start");
  ASSERT_TRUE(start["session"].contains("backend_matrix")) << start.dump();
  const json& matrix = start["session"]["backend_matrix"];

  const std::string doctor_out = dir_ + "/doctor.json";
  ASSERT_EQ(std::system(("cd " + dir_ + " && " + SUPERVISE_BIN + " doctor --json >" + doctor_out +
                         " 2>/dev/null; test -s " + doctor_out)
                            .c_str()),
            0);
  std::ifstream in(doctor_out);
  const json doctor = json::parse(in);
  const json& features = doctor["features"];
  ASSERT_EQ(matrix.size(), features.size()) << matrix.dump() << "\n" << features.dump();
  for (size_t i = 0; i < features.size(); ++i) {
    SCOPED_TRACE(features[i].dump() + " vs " + matrix[i].dump());
    for (const char* key : {"id", "label", "used", "enforceable", "backend"})
      EXPECT_EQ(matrix[i][key], features[i][key]) << key;
    // The session ran, so everything it uses is enforceable here.
    if (matrix[i]["used"] == true) {
      EXPECT_EQ(matrix[i]["enforceable"], true);
    }
  }
  // The process tree row names how the tree is killed, as doctor does.
  for (size_t i = 0; i < features.size(); ++i) {
    if (features[i]["id"] == "process_tree") {
      EXPECT_EQ(matrix[i]["detail"], features[i]["detail"]);
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
