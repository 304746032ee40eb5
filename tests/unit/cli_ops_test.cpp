// Operator commands without privileges: recorded audit events turned back
// into engine requests, the smallest policy edit for each kind of denial,
// `explain EVENT_ID|-`, `policy init` and `policy learn` driven through CLI11
// in-process (exit codes, files written, and the learned policy deciding
// every learned event as allowed).
#include <gtest/gtest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "policy/engine.h"
#include "policy/load.h"
#include "supervisor/audit/limits.h"
#include "supervisor/cli/commands.h"
#include "tests/unit/cli_test_util.h"

namespace sv::supervisor {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

// One native audit line (docs/audit-events.md) of a decision.
std::string event(uint64_t seq, const std::string& decision, const json& target,
                  const std::string& rule = "default-deny-write",
                  const std::string& exe = "/usr/bin/bash", const std::string& session = "ab12cd") {
  json j = {{"schema_version", "1.0"},
            {"seq", seq},
            {"time", "2026-11-29T10:33:11.123456789Z"},
            {"session_id", session},
            {"host", "h"},
            {"decision", decision},
            {"enforced_by", "seccomp"},
            {"errno", decision == "deny" ? json("EACCES") : json(nullptr)},
            {"rule", {{"id", rule}, {"reason", "r"}}},
            {"process", {{"pid", 42}, {"comm", "bash"}, {"exe", exe}, {"profile", ""}}}};
  j.update(target);
  return j.dump();
}

json fileTarget(const std::string& op, const std::string& path) {
  return {{"category", "file"}, {"operation", op}, {"file", {{"path", path}}}};
}
json netTarget(const std::string& ip, int port) {
  return {{"category", "network"},
          {"operation", "connect"},
          {"network", {{"family", "inet"}, {"proto", "tcp"}, {"ip", ip}, {"port", port}}}};
}

class OpsTest : public CliFixture {
 protected:
  OpsTest() : CliFixture({registerExplain, registerPolicy}) {}

  std::string ws(const std::string& name) const { return (dir_ / name).string(); }
  std::string read(const std::string& name) {
    std::ifstream in(dir_ / name);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  }

  std::shared_ptr<const policy::Policy> load(const std::string& file_text = "") {
    policy::LoadRequest req;
    req.workspace = dir_.string();
    req.home = "/nonexistent-home";
    if (!file_text.empty()) req.files.push_back({"learned.json", file_text});
    auto res = policy::load(req);
    for (const auto& d : res.diagnostics) ADD_FAILURE() << d.format();
    return res.policy;
  }
};

// ---- recorded decisions ----

TEST_F(OpsTest, FileEventsMapToReadOrWrite) {
  std::string why;
  auto w = parseRecordedDecision(event(3, "deny", fileTarget("create", "/srv/x")), &why);
  ASSERT_TRUE(w) << why;
  EXPECT_EQ(w->op, policy::Operation::Write);
  EXPECT_EQ(w->path, "/srv/x");
  EXPECT_EQ(w->seq, 3u);
  EXPECT_EQ(w->exe, "/usr/bin/bash");
  EXPECT_EQ(w->errno_name, "EACCES");
  auto r = parseRecordedDecision(event(4, "would-deny", fileTarget("open", "/srv/x")), &why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->op, policy::Operation::Read);
  EXPECT_EQ(r->errno_name, "");  // null in the event
  EXPECT_EQ(r->target(), "read /srv/x");
}

TEST_F(OpsTest, ExecAndNetworkEvents) {
  std::string why;
  json exec = {{"category", "exec"}, {"operation", "exec"}, {"exec", {{"path", "/usr/bin/ssh"}}}};
  auto e = parseRecordedDecision(event(5, "deny", exec, "no-ssh"), &why);
  ASSERT_TRUE(e) << why;
  EXPECT_EQ(e->op, policy::Operation::Exec);
  EXPECT_EQ(e->path, "/usr/bin/ssh");
  auto n = parseRecordedDecision(event(6, "deny", netTarget("2001:db8::1", 443)), &why);
  ASSERT_TRUE(n) << why;
  EXPECT_EQ(n->op, policy::Operation::Connect);
  EXPECT_EQ(n->port, 443);
  EXPECT_EQ(n->target(), "connect [2001:db8::1]:443");
}

TEST_F(OpsTest, LinesThatAreNotDecisionsAreRejectedWithAReason) {
  std::string why;
  EXPECT_FALSE(parseRecordedDecision("not json", &why));
  EXPECT_EQ(why, "not a JSON object");
  EXPECT_FALSE(parseRecordedDecision(R"({"seq":1,"category":"session","operation":"start"})", &why));
  EXPECT_NE(why.find("not a decision event"), std::string::npos) << why;
  json sock = {{"category", "network"}, {"operation", "socket"}};
  EXPECT_FALSE(parseRecordedDecision(event(7, "deny", sock), &why));
  EXPECT_FALSE(parseRecordedDecision(event(8, "deny", fileTarget("write", "relative")), &why));
  EXPECT_FALSE(parseRecordedDecision(event(9, "deny", fileTarget("write", "[REDACTED]")), &why));
  EXPECT_EQ(why, "the event's target path was redacted (audit.redact)");
  json cut = fileTarget("write", "/" + std::string(kAuditMaxPathBytes - 1, 'a'));
  cut["truncated"] = true;
  EXPECT_FALSE(parseRecordedDecision(event(10, "deny", cut), &why));
  EXPECT_EQ(why, "the event's target path was truncated");
  cut["file"]["path"] = "/srv/x";  // argv was cut, the path is whole
  EXPECT_TRUE(parseRecordedDecision(event(11, "deny", cut), &why)) << why;
}

TEST_F(OpsTest, EventIds) {
  auto a = parseEventId("17");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->seq, 17u);
  EXPECT_EQ(a->session, "");
  auto b = parseEventId("5f0c:9");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->session, "5f0c");
  EXPECT_EQ(b->seq, 9u);
  for (const char* bad : {"", "0", "x", "17x", ":3", "XYZ:3", "5f0c:"}) EXPECT_FALSE(parseEventId(bad)) << bad;
}

// ---- smallest edits ----

TEST_F(OpsTest, DefaultDenialsBecomeExactRootsAndEntries) {
  policy::Engine engine(load());
  std::string why;
  auto w = parseRecordedDecision(event(1, "would-deny", fileTarget("write", "/srv/out.txt")), &why);
  EXPECT_EQ(smallestEdit(engine, *w, &why).dump(),
            R"j({"filesystem":{"writableRoots":[{"path":"/srv/out.txt","reason":"learned from audit event 1 (bash)"}]}})j");
  auto r = parseRecordedDecision(event(2, "would-deny", fileTarget("open", "/srv/in.txt")), &why);
  EXPECT_EQ(smallestEdit(engine, *r, &why)["filesystem"]["readableRoots"][0]["path"], "/srv/in.txt");
  auto n = parseRecordedDecision(event(3, "would-deny", netTarget("198.51.100.1", 8080)), &why);
  EXPECT_EQ(smallestEdit(engine, *n, &why)["network"]["allow"][0]["to"], "198.51.100.1:8080");
}

TEST_F(OpsTest, NetworkNoneNeedsTheAllowlistMode) {
  policy::LoadRequest req;
  req.workspace = dir_.string();
  req.preset = "strict";
  policy::Engine engine(policy::load(req).policy);
  std::string why;
  auto n = parseRecordedDecision(event(3, "deny", netTarget("198.51.100.1", 80)), &why);
  auto edit = smallestEdit(engine, *n, &why);
  EXPECT_EQ(edit["network"]["mode"], "allowlist");
  EXPECT_EQ(edit["network"]["allow"][0]["to"], "198.51.100.1:80");
}

TEST_F(OpsTest, ABaseDenyRuleIsOverriddenInAProfileForTheBinary) {
  policy::Engine engine(load());
  std::string why;
  auto d = parseRecordedDecision(event(9, "would-deny", fileTarget("write", ws(".env")), "deny-write-env"),
                                 &why);
  auto edit = smallestEdit(engine, *d, &why);
  EXPECT_EQ(edit["exec"]["switch"][0]["match"], "/usr/bin/bash");
  EXPECT_EQ(edit["exec"]["switch"][0]["profile"], "learned-bash");
  EXPECT_EQ(edit["profiles"]["learned-bash"]["filesystem"]["writableRoots"][0]["path"], ws(".env"));
  // Layered on the preset, the profile allows exactly that file, for bash only.
  ordered_json doc = {{"version", 1}};
  mergePolicyFragment(doc, edit);
  policy::Engine after(load(doc.dump()));
  const std::string env = ws(".env"), sub_env = ws("sub/.env");  // Request holds views
  policy::Request in_bash{.op = policy::Operation::Write, .path = env};
  in_bash.profile = after.profileAfterExec("", "/usr/bin/bash");
  EXPECT_EQ(after.decide(in_bash).verdict, policy::Verdict::Allow);
  policy::Request other{.op = policy::Operation::Write, .path = env};
  EXPECT_EQ(after.decide(other).verdict, policy::Verdict::Deny);
  policy::Request sibling{.op = policy::Operation::Write, .path = sub_env};
  sibling.profile = in_bash.profile;
  EXPECT_EQ(after.decide(sibling).verdict, policy::Verdict::Deny);
}

TEST_F(OpsTest, NoEditWhenAllowedOrWhenOnlyARemovalHelps) {
  std::string why;
  policy::Engine engine(load());
  auto ok = parseRecordedDecision(event(1, "would-deny", fileTarget("write", ws("a.txt"))), &why);
  EXPECT_TRUE(smallestEdit(engine, *ok, &why).is_null());
  EXPECT_NE(why.find("allows it"), std::string::npos) << why;
  // A deny rule of the process's own profile beats every allow of it.
  policy::Engine prof(load(R"({"profiles": {"p": {"filesystem": {"denyWrite": [{"path": "x", "id": "p-x"}]}}}})"));
  auto d = parseRecordedDecision(event(2, "deny", fileTarget("write", ws("x")), "p-x"), &why);
  d->profile = "p";
  EXPECT_TRUE(smallestEdit(prof, *d, &why).is_null());
  EXPECT_NE(why.find("profile p"), std::string::npos) << why;
}

TEST_F(OpsTest, MergeAddsMissingEntriesOnlyAndReplacesScalars) {
  ordered_json doc = ordered_json::parse(R"({"mode":"enforce","filesystem":{"writableRoots":["/a"]}})");
  mergePolicyFragment(doc, ordered_json::parse(
                               R"({"mode":"audit","filesystem":{"writableRoots":[{"path":"/a"},{"path":"/b"}]}})"));
  mergePolicyFragment(doc, ordered_json::parse(R"({"filesystem":{"writableRoots":[{"path":"/b"}]}})"));
  EXPECT_EQ(doc.dump(), R"({"mode":"audit","filesystem":{"writableRoots":["/a",{"path":"/b"}]}})");
}

// ---- explain EVENT_ID | - ----

TEST_F(OpsTest, ExplainAnEventFromTheAuditFile) {
  write("audit.jsonl", R"({"seq":1,"session_id":"ab12cd","category":"session","operation":"start"})"
                           "\n" +
                           event(2, "deny", fileTarget("write", ws(".env")), "deny-write-env") + "\n" +
                           event(3, "deny", fileTarget("create", "/srv/x")) + "\n");
  std::string out, err;
  EXPECT_EQ(run({"explain", "--audit-file", "audit.jsonl", "2"}, &out, &err), 1) << err;
  EXPECT_NE(out.find("event 2 of session ab12cd: deny write " + ws(".env")), std::string::npos) << out;
  EXPECT_NE(out.find("recorded: rule deny-write-env"), std::string::npos) << out;
  EXPECT_NE(out.find("rule:   deny-write-env"), std::string::npos) << out;
  EXPECT_NE(out.find("\"profile\":\"learned-bash\""), std::string::npos) << out;

  EXPECT_EQ(run({"explain", "--json", "--audit-file", "audit.jsonl", "ab12:3"}, &out, &err), 1) << err;
  auto j = json::parse(out);
  EXPECT_EQ(j["event"]["seq"], 3);
  EXPECT_EQ(j["rule_id"], "default-deny-write");
  EXPECT_EQ(j["edit"]["filesystem"]["writableRoots"][0]["path"], "/srv/x");

  // Allowed by the policy given now: exit 0.
  write("p.json", R"({"filesystem": {"writableRoots": ["/srv/x"]}})");
  EXPECT_EQ(run({"explain", "--policy", "p.json", "--audit-file", "audit.jsonl", "3"}, &out, &err), 0)
      << out << err;
}

// explain socket FAMILY[:NETLINK_PROTOCOL] (docs/network.md, "Address families").
TEST_F(OpsTest, ExplainSocketFamilies) {
  std::string out, err;
  EXPECT_EQ(run({"explain", "socket", "vsock"}, &out, &err), 1) << err;
  EXPECT_NE(out.find("default-deny-socket-family"), std::string::npos) << out;
  EXPECT_NE(out.find("network.mode"), std::string::npos) << out;
  EXPECT_EQ(run({"explain", "socket", "AF_NETLINK:NETLINK_AUDIT"}, &out, &err), 1) << err;
  EXPECT_EQ(run({"explain", "socket", "netlink:route"}, &out, &err), 0) << out << err;
  EXPECT_EQ(run({"explain", "socket", "unix"}, &out, &err), 0) << out << err;
  EXPECT_EQ(run({"explain", "socket", "40"}, &out, &err), 1) << err;
  EXPECT_EQ(run({"explain", "socket", "nosuchfamily"}, &out, &err), 2);
  EXPECT_NE(err.find("expected FAMILY"), std::string::npos) << err;
  write("all.json", R"({"network": {"mode": "all"}})");
  EXPECT_EQ(run({"explain", "--policy", "all.json", "socket", "vsock"}, &out, &err), 0) << out << err;
}

TEST_F(OpsTest, ExplainEventErrors) {
  write("audit.jsonl", event(2, "deny", fileTarget("write", "/srv/x")) + "\n");
  std::string out, err;
  EXPECT_EQ(run({"explain", "5"}, &out, &err), 2);
  EXPECT_NE(err.find("needs --audit-file"), std::string::npos) << err;
  EXPECT_EQ(run({"explain", "--audit-file", "audit.jsonl", "5"}, &out, &err), 2);
  EXPECT_NE(err.find("no event 5"), std::string::npos) << err;
  EXPECT_EQ(run({"explain", "--audit-file", "missing.jsonl", "2"}, &out, &err), 2);
  EXPECT_EQ(run({"explain", "write"}, &out, &err), 2);
  EXPECT_NE(err.find("needs a TARGET"), std::string::npos) << err;
  EXPECT_EQ(run({"explain", "bogus", "x"}, &out, &err), 2);
}

TEST_F(OpsTest, ExplainReadsOneLineFromStdin) {
  write("line.jsonl", "\n" + event(4, "would-deny", netTarget("198.51.100.7", 22)) + "\n");
  std::FILE* saved = std::fopen("/dev/null", "r");
  ASSERT_TRUE(std::freopen(ws("line.jsonl").c_str(), "r", stdin));
  std::cin.clear();
  std::string out, err;
  int rc = run({"explain", "-"}, &out, &err);
  std::freopen("/dev/null", "r", stdin);
  std::fclose(saved);
  EXPECT_EQ(rc, 1) << err;
  EXPECT_NE(out.find("connect 198.51.100.7:22"), std::string::npos) << out;
  EXPECT_NE(out.find("default-deny-connect"), std::string::npos) << out;
}

// ---- policy init ----

TEST_F(OpsTest, InitWritesALoadableStarterAndKeepsAnExistingFile) {
  std::string out, err;
  ASSERT_EQ(run({"policy", "init"}, &out, &err), 0) << err;
  std::string text = read(".supervise.json");
  auto j = json::parse(text);
  EXPECT_EQ(j["mode"], "enforce");
  EXPECT_EQ(j["filesystem"]["denyWrite"][0]["id"], "deny-write-env");
  EXPECT_FALSE(j["filesystem"]["denyWrite"][0]["reason"].get<std::string>().empty());
  load(text);  // no diagnostics on top of the preset
  EXPECT_EQ(run({"policy", "init"}, &out, &err), 2);
  EXPECT_NE(err.find("--force"), std::string::npos) << err;
  EXPECT_EQ(run({"policy", "init", "--force", "--preset", "strict"}, &out, &err), 0) << err;
  EXPECT_EQ(json::parse(read(".supervise.json"))["network"]["mode"], "none");
  EXPECT_NE(err.find("--preset strict"), std::string::npos) << err;
  ASSERT_EQ(run({"policy", "init", "--preset", "none", "-o", "-"}, &out, &err), 0) << err;
  EXPECT_EQ(json::parse(out)["version"], 1);
  EXPECT_EQ(run({"policy", "init", "--preset", "bogus"}, &out, &err), 2);
}

// ---- policy learn ----

TEST_F(OpsTest, LearnAllowsExactlyTheDeniedEvents) {
  write("audit.jsonl",
        R"({"seq":1,"session_id":"ab12cd","category":"session","operation":"start"})"
        "\n" +
            event(2, "allow", fileTarget("write", ws("a.txt")), "workspace") + "\n" +
            event(3, "would-deny", fileTarget("create", "/srv/out.txt")) + "\n" +
            event(4, "would-deny", fileTarget("create", "/srv/out.txt")) + "\n" +
            event(5, "would-deny", fileTarget("write", ws(".env")), "deny-write-env") + "\n" +
            event(6, "would-deny", netTarget("198.51.100.1", 8080), "default-deny-connect") + "\n" +
            event(7, "deny", fileTarget("open", "/srv/in.txt"), "default-deny-read") + "\n");
  std::string out, err;
  ASSERT_EQ(run({"policy", "learn", "audit.jsonl", "-o", "learned.json"}, &out, &err), 0) << err;
  EXPECT_NE(err.find("5 denied decisions, 5 learned"), std::string::npos) << err;
  std::string text = read("learned.json");
  auto j = json::parse(text);
  EXPECT_EQ(j["filesystem"]["writableRoots"].size(), 1u) << text;  // the duplicate merged
  EXPECT_EQ(j["filesystem"]["readableRoots"][0]["path"], "/srv/in.txt");
  EXPECT_EQ(j["network"]["allow"][0]["to"], "198.51.100.1:8080");
  EXPECT_EQ(j["profiles"]["learned-bash"]["filesystem"]["writableRoots"][0]["path"], ws(".env"));

  policy::Engine after(load(text));
  EXPECT_EQ(after.decide({.op = policy::Operation::Write, .path = "/srv/out.txt"}).verdict,
            policy::Verdict::Allow);
  EXPECT_EQ(after.decide({.op = policy::Operation::Write, .path = "/srv/other.txt"}).verdict,
            policy::Verdict::Deny);
  // Refuses to replace the output without --force.
  EXPECT_EQ(run({"policy", "learn", "audit.jsonl", "-o", "learned.json"}, &out, &err), 2);
}

TEST_F(OpsTest, LearnMergesIntoThePolicyFileInEffect) {
  write("mine.json", R"({"version": 1, "filesystem": {"writableRoots": ["/data"]}})");
  write("audit.jsonl", event(3, "would-deny", fileTarget("create", "/srv/out.txt")) + "\n");
  std::string out, err;
  ASSERT_EQ(run({"policy", "learn", "--policy", "mine.json", "audit.jsonl"}, &out, &err), 0) << err;
  auto j = json::parse(out);
  ASSERT_EQ(j["filesystem"]["writableRoots"].size(), 2u) << out;
  EXPECT_EQ(j["filesystem"]["writableRoots"][0], "/data");
  EXPECT_EQ(j["filesystem"]["writableRoots"][1]["path"], "/srv/out.txt");
}

TEST_F(OpsTest, LearnReportsWhatItCannotAllow) {
  write("p.json", R"({"profiles": {"p": {"filesystem": {"denyWrite": [{"path": "x", "id": "p-x"}]}}}})");
  json target = fileTarget("write", ws("x"));
  json ev = json::parse(event(2, "deny", target, "p-x"));
  ev["process"]["profile"] = "p";
  write("audit.jsonl", ev.dump() + "\n" + event(3, "deny", netTarget("198.51.100.1", 1)) + "\n");
  std::string out, err;
  EXPECT_EQ(run({"policy", "learn", "--policy", "p.json", "audit.jsonl"}, &out, &err), 1) << err;
  EXPECT_NE(err.find("not learned"), std::string::npos) << err;
  EXPECT_NE(err.find("p-x"), std::string::npos) << err;
  EXPECT_EQ(run({"policy", "learn", "missing.jsonl"}, &out, &err), 2);
}

}  // namespace
}  // namespace sv::supervisor
