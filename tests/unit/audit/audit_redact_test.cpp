// audit.redact and the size limits (supervisor/audit/redact.h, limits.h): what
// each format shows of paths and argv, and the `truncated` flag.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "policy/load.h"
#include "supervisor/audit/formats/formats.h"
#include "supervisor/audit/policy_json.h"
#include "tests/unit/audit/audit_test_util.h"

namespace sv::supervisor {
namespace {

using nlohmann::json;

std::shared_ptr<const policy::Policy> loadPolicy(const std::string& text) {
  policy::LoadRequest r;
  r.preset = "none";
  r.files.push_back({"p.json", text});
  r.workspace = "/ws";
  r.home = "/home/u";
  policy::LoadResult res = policy::load(r);
  EXPECT_TRUE(res.ok());
  return res.policy;
}

// A session whose audit.redact is `patterns` (a JSON array), loaded like a policy.
SessionInfo sessionRedacting(const std::string& patterns) {
  SessionInfo s{"0123456789abcdef0123456789abcdef", "host", "p", "", "0.1.0", ""};
  s.redact = Redactor(loadPolicy(R"({"audit": {"redact": )" + patterns + "}}")->audit.redact);
  return s;
}

json encode(AuditFormat format, const AuditEvent& e, const SessionInfo& s, std::string* line) {
  line->clear();
  encodeEventAs(format, *line, e, s, 7, timespec{1, 0});
  return json::parse(*line);
}

// Where each format puts the fields these tests look at.
struct Layout {
  AuditFormat format;
  const char* file_path;
  const char* argv1;         // the process's second argv element
  const char* command_line;  // argv joined, "" when the format has none
  const char* truncated;
  const char* session_command1;
};
const Layout kLayouts[] = {
    {AuditFormat::Native, "/file/path", "/process/argv/1", "", "/truncated",
     "/session/command/1"},
    {AuditFormat::Ocsf, "/file/path", "", "/actor/process/cmd_line", "/unmapped/truncated",
     "/unmapped/command/1"},
    {AuditFormat::Ecs, "/file/path", "/process/args/1", "/process/command_line",
     "/supervise/truncated", "/supervise/command/1"},
};

ProcessInfo process(std::vector<std::string> argv) {
  ProcessInfo p;
  p.pid = p.tid = 42;
  p.comm = "deploy";
  p.exe = "/usr/bin/deploy";
  p.cwd = "/ws";
  p.argv = std::move(argv);
  return p;
}

// A denied open of `path` by `p`.
AuditEvent fileEvent(const ProcessInfo* p, const std::string& path) {
  AuditEvent e = test::fileDecision("deny", path, "r");
  e.err = EACCES;
  e.process = p;
  return e;
}

TEST(Redactor, WhatAPatternMatches) {
  const SessionInfo s = sessionRedacting(
      R"(["--password=*", "*token*", "**/secrets", "./build/*.log", "~/.aws/**", "/etc/shadow"])");
  const Redactor& r = s.redact;
  // Without `/`: the whole string, `*` crossing `/`.
  EXPECT_TRUE(r.matches("--password=hunter2"));
  EXPECT_FALSE(r.matches("--password"));
  EXPECT_FALSE(r.matches("x--password=hunter2"));
  EXPECT_TRUE(r.matches("/home/u/token.txt"));
  EXPECT_FALSE(r.matches("TOKEN"));  // case matters
  // With `/`: a path glob, covering what is below a match; relative ones anywhere.
  EXPECT_TRUE(r.matches("/srv/app/secrets"));
  EXPECT_TRUE(r.matches("/srv/app/secrets/db/password"));
  EXPECT_FALSE(r.matches("/srv/app/secretsX"));
  EXPECT_FALSE(r.matches("app/secrets/db"));  // a relative argv element is not a path here
  EXPECT_TRUE(r.matches("/ws/build/a.log"));
  EXPECT_FALSE(r.matches("/other/build/a.log"));
  EXPECT_TRUE(r.matches("/home/u/.aws/credentials"));
  EXPECT_TRUE(r.matches("/etc/shadow"));
  EXPECT_FALSE(r.matches("/etc/passwd"));
  EXPECT_TRUE(Redactor().empty());
  EXPECT_FALSE(Redactor().matches("/etc/shadow"));
}

TEST(AuditRedact, NoFormatShowsARedactedString) {
  const SessionInfo s =
      sessionRedacting(R"(["--password=*", "**/secrets/**", "/run/vault.sock", "/opt/tool"])");
  // The secret path is not UTF-8 either: its bytes must not leak through _b64.
  ProcessInfo p = process({"deploy", "--password=hunter2", "/home/u/secrets/aws\xff.key"});
  p.exe = "/opt/tool/bin/deploy";  // under a redacted path
  AuditEvent file = fileEvent(&p, "/home/u/secrets/aws\xff.key");
  AuditEvent exec = fileEvent(&p, "");
  exec.file = {};
  exec.category = "exec";
  exec.operation = "exec";
  exec.exec.path = "/usr/bin/curl";
  exec.exec.argv = {"curl", "--password=hunter2"};
  AuditEvent unix_connect = fileEvent(&p, "");
  unix_connect.file = {};
  unix_connect.category = "network";
  unix_connect.operation = "connect";
  unix_connect.network.family = "unix";
  unix_connect.network.unix_path = "/run/vault.sock";
  AuditEvent start = sessionStartEvent({"deploy", "--password=hunter2"}, nullptr, {"seccomp"});

  for (const Layout& l : kLayouts) {
    SCOPED_TRACE(int(l.format));
    std::string line;
    for (const AuditEvent* e : {&file, &exec, &unix_connect, &start}) {
      encode(l.format, *e, s, &line);
      EXPECT_EQ(line.find("hunter2"), std::string::npos) << line;
      EXPECT_EQ(line.find("aws"), std::string::npos) << line;
      EXPECT_EQ(line.find("vault"), std::string::npos) << line;
      EXPECT_EQ(line.find("opt/tool"), std::string::npos) << line;
      EXPECT_EQ(line.find("_b64"), std::string::npos) << line;
      EXPECT_EQ(line.find("truncated"), std::string::npos) << line;  // hidden, not cut
    }
    json j = encode(l.format, file, s, &line);
    EXPECT_EQ(j[json::json_pointer(l.file_path)], "[REDACTED]") << line;
    if (*l.argv1) {
      EXPECT_EQ(j[json::json_pointer(l.argv1)], "[REDACTED]") << line;
    }
    if (*l.command_line) {
      EXPECT_EQ(j[json::json_pointer(l.command_line)], "deploy [REDACTED] [REDACTED]") << line;
    }
    j = encode(l.format, start, s, &line);
    EXPECT_EQ(j[json::json_pointer(l.session_command1)], "[REDACTED]") << line;
  }
  // The fields each format derives from a path show no more than the path.
  std::string line;
  json j = encode(AuditFormat::Ecs, file, s, &line);
  EXPECT_EQ(j["file"]["name"], "[REDACTED]");
  EXPECT_EQ(j["process"]["executable"], "[REDACTED]");
  j = encode(AuditFormat::Ocsf, file, s, &line);
  EXPECT_EQ(j["file"]["name"], "[REDACTED]");
  EXPECT_EQ(j["actor"]["process"]["file"]["name"], "[REDACTED]");
  j = encode(AuditFormat::Native, unix_connect, s, &line);
  EXPECT_EQ(j["network"]["unix_path"], "[REDACTED]");
  j = encode(AuditFormat::Native, exec, s, &line);
  EXPECT_EQ(j["exec"]["argv"], json::array({"curl", "[REDACTED]"}));
  EXPECT_EQ(j["exec"]["path"], "/usr/bin/curl");
  EXPECT_EQ(j["process"]["exe"], "[REDACTED]");
}

TEST(AuditRedact, TheEffectivePolicyListsThePatterns) {
  auto p = loadPolicy(R"({"audit": {"redact": ["--token=*", "**/secrets/**"]}})");
  EXPECT_EQ(effectivePolicyJson(*p)["audit"]["redact"],
            json::array({"--token=*", "**/secrets/**"}));
  EXPECT_EQ(effectivePolicyJson(*loadPolicy("{}"))["audit"]["redact"], json::array());
  EXPECT_NE(policyDigest(*p), policyDigest(*loadPolicy("{}")));
}

TEST(AuditTruncate, Utf8Prefix) {
  EXPECT_EQ(utf8Prefix("abc", 5), 3u);
  EXPECT_EQ(utf8Prefix("abc", 2), 2u);
  const std::string euro = "ab\xE2\x82\xAC";  // "ab€"
  EXPECT_EQ(utf8Prefix(euro, 5), 5u);
  EXPECT_EQ(utf8Prefix(euro, 4), 2u);
  EXPECT_EQ(utf8Prefix(euro, 3), 2u);
  const std::string emoji = "\xF0\x9F\x98\x80z";
  EXPECT_EQ(utf8Prefix(emoji, 3), 0u);
  EXPECT_EQ(utf8Prefix(emoji, 4), 4u);
  EXPECT_EQ(utf8Prefix(std::string(8, '\x80'), 6), 3u);  // not UTF-8: at most 3 steps back
}

TEST(AuditTruncate, PathsAreCutOnACharacterBoundaryAndFlagged) {
  const SessionInfo s = sessionRedacting("[]");
  ProcessInfo p = process({"x"});
  // 4094 ASCII bytes then a 3-byte character across the 4096-byte limit.
  const std::string head = "/" + std::string(kAuditMaxPathBytes - 2, 'a');
  const AuditEvent cut = fileEvent(&p, head + "\xE2\x82\xAC" + "tail");
  const AuditEvent fits = fileEvent(&p, "/" + std::string(kAuditMaxPathBytes - 1, 'b'));
  for (const Layout& l : kLayouts) {
    SCOPED_TRACE(int(l.format));
    std::string line;
    json j = encode(l.format, cut, s, &line);
    EXPECT_EQ(j[json::json_pointer(l.file_path)], head);
    EXPECT_EQ(j[json::json_pointer(l.truncated)], true);
    EXPECT_EQ(line.find("_b64"), std::string::npos);  // the cut left valid UTF-8
    j = encode(l.format, fits, s, &line);
    EXPECT_EQ(j[json::json_pointer(l.file_path)].get<std::string>().size(), kAuditMaxPathBytes);
    EXPECT_EQ(line.find("truncated"), std::string::npos) << "exactly at the limit is not cut";
  }
}

TEST(AuditTruncate, ArgvLimits) {
  const SessionInfo s = sessionRedacting("[]");
  std::string line;
  auto shownArgv = [&](std::vector<std::string> argv, bool* truncated) {
    ProcessInfo p = process(std::move(argv));
    json j = encode(AuditFormat::Native, fileEvent(&p, "/ws/a"), s, &line);
    *truncated = j.value("truncated", false);
    return j["process"]["argv"].get<std::vector<std::string>>();
  };
  bool truncated = false;
  // One element: at most kAuditMaxArgBytes.
  auto argv = shownArgv({std::string(kAuditMaxArgBytes, 'x')}, &truncated);
  EXPECT_EQ(argv[0].size(), kAuditMaxArgBytes);
  EXPECT_FALSE(truncated);
  argv = shownArgv({"x", std::string(kAuditMaxArgBytes + 1, 'y'), "z"}, &truncated);
  EXPECT_EQ(argv, (std::vector<std::string>{"x", std::string(kAuditMaxArgBytes, 'y'), "z"}));
  EXPECT_TRUE(truncated);
  // At most kAuditMaxArgs elements.
  argv = shownArgv(std::vector<std::string>(kAuditMaxArgs, "a"), &truncated);
  EXPECT_EQ(argv.size(), kAuditMaxArgs);
  EXPECT_FALSE(truncated);
  argv = shownArgv(std::vector<std::string>(kAuditMaxArgs + 1, "a"), &truncated);
  EXPECT_EQ(argv.size(), kAuditMaxArgs);
  EXPECT_TRUE(truncated);
  // At most kAuditMaxArgvBytes in all: whole elements, then the start of one.
  argv = shownArgv(std::vector<std::string>(40, std::string(1000, 'c')), &truncated);
  ASSERT_EQ(argv.size(), 33u);
  EXPECT_EQ(argv[32].size(), kAuditMaxArgvBytes - 32 * 1000);
  EXPECT_TRUE(truncated);
  // The joined command lines of OCSF and ECS are built from the same elements.
  ProcessInfo p = process({"a", std::string(kAuditMaxArgBytes + 5, 'b')});
  json j = encode(AuditFormat::Ecs, fileEvent(&p, "/ws/a"), s, &line);
  EXPECT_EQ(j["process"]["command_line"], "a " + std::string(kAuditMaxArgBytes, 'b'));
  EXPECT_EQ(j["process"]["args_count"], 2);  // as run
  j = encode(AuditFormat::Ocsf, fileEvent(&p, "/ws/a"), s, &line);
  EXPECT_EQ(j["actor"]["process"]["cmd_line"], "a " + std::string(kAuditMaxArgBytes, 'b'));
}

TEST(AuditTruncate, AProducersCutIsFlaggedToo) {
  const SessionInfo s = sessionRedacting("[]");
  ProcessInfo p = process({"x"});
  AuditEvent e = fileEvent(&p, "/ws/a");
  e.truncated = true;  // the BPF tracker's argv buffer was full
  for (const Layout& l : kLayouts) {
    std::string line;
    EXPECT_EQ(encode(l.format, e, s, &line)[json::json_pointer(l.truncated)], true) << line;
  }
  e.reset();
  EXPECT_FALSE(e.truncated);
}

}  // namespace
}  // namespace sv::supervisor
