// supervise report (supervisor/report/): the decoder on real events of each
// format (data/*.jsonl: one session of `sh -c 'echo x > .env; mkdir -p sub;
// echo y > sub/ok; cat /etc/hostname'` written by build/supervise with
// -o audit.format=native|ocsf|ecs), the bounded aggregation, and escaping of
// hostile strings in both renderers.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "supervisor/report/aggregate.h"
#include "supervisor/report/escape.h"
#include "supervisor/report/reader.h"
#include "supervisor/report/record.h"
#include "supervisor/report/render.h"

namespace sv::report {
namespace {

std::vector<Record> decodeFile(const std::string& name) {
  std::vector<Record> out;
  std::ifstream in(std::string(SV_REPORT_DATA) + "/" + name);
  std::string line, why;
  while (std::getline(in, line)) {
    Record r;
    EXPECT_TRUE(decodeLine(line, &r, &why)) << why << ": " << line.substr(0, 200);
    out.push_back(r);
  }
  return out;
}

class DecoderOnRealEvents : public ::testing::TestWithParam<const char*> {};

TEST_P(DecoderOnRealEvents, SameSessionInEveryFormat) {
  const std::string format = GetParam();
  auto records = decodeFile(format + ".jsonl");
  ASSERT_EQ(records.size(), 12u);
  const Record& start = records.front();
  EXPECT_EQ(start.kind, RecordKind::SessionStart);
  EXPECT_EQ(start.format, format);
  EXPECT_EQ(start.seq, 1u);
  EXPECT_EQ(start.session_id.size(), 32u);
  EXPECT_EQ(start.command,
            "sh -c echo x > .env; mkdir -p sub; echo y > sub/ok; cat /etc/hostname >/dev/null; "
            "true");
  EXPECT_GT(start.time_ms, 1700000000000);
  const Record& end = records.back();
  EXPECT_EQ(end.kind, RecordKind::SessionEnd);
  EXPECT_TRUE(end.has_exit);
  EXPECT_EQ(end.exit_code, 0);
  EXPECT_EQ(end.exit_signal, "");

  int decisions = 0, denials = 0, execs = 0;
  for (const Record& r : records) {
    EXPECT_EQ(r.session_id, start.session_id);
    if (r.kind != RecordKind::Decision) continue;
    ++decisions;
    EXPECT_EQ(r.event_id, r.session_id + "-" + std::to_string(r.seq));
    EXPECT_GE(r.time_ms, start.time_ms);
    EXPECT_GT(r.pid, 0);
    if (r.category == "exec") {
      ++execs;
      EXPECT_EQ(r.target.front(), '/') << r.target;
    }
    if (r.decision == "deny") {
      ++denials;
      EXPECT_EQ(r.category, "file");
      EXPECT_EQ(r.operation, "create");
      EXPECT_EQ(r.rule_id, "deny-write-env");
      EXPECT_EQ(r.rule_reason, "secrets stay out of the agent's reach");
      EXPECT_EQ(r.target, "/tmp/rp/.env");
      EXPECT_EQ(r.comm, "sh");
      EXPECT_GT(r.ppid, 0);
    }
  }
  EXPECT_EQ(decisions, 10);  // the end record's counters say 10 decisions, 1 denial
  EXPECT_EQ(denials, 1);
  EXPECT_EQ(execs, 3);  // sh, mkdir, cat
}

INSTANTIATE_TEST_SUITE_P(Formats, DecoderOnRealEvents, ::testing::Values("native", "ocsf", "ecs"));

TEST(Decoder, RejectsWhatIsNotARecord) {
  Record r;
  std::string why;
  EXPECT_FALSE(decodeLine("", &r, &why));
  EXPECT_FALSE(decodeLine("{\"a\":", &r, &why));
  EXPECT_EQ(why, "not JSON");
  EXPECT_FALSE(decodeLine("[1,2]", &r, &why));
  EXPECT_FALSE(decodeLine("{\"x\":1}", &r, &why));
  EXPECT_FALSE(decodeLine("{\"schema_version\":\"1.6\",\"session_id\":5}", &r, &why));
  EXPECT_FALSE(decodeLine("\"\xff\"", &r, &why));  // not UTF-8
  // Wrong types read as absent, not as an error of the line.
  ASSERT_TRUE(decodeLine(
      R"({"schema_version":"1.6","session_id":"s","seq":"x","time":7,"category":"file",)"
      R"("decision":"deny","rule":[1],"process":{"pid":"1"},"file":{"path":3}})",
      &r, &why));
  EXPECT_EQ(r.kind, RecordKind::Decision);
  EXPECT_EQ(r.seq, 0u);
  EXPECT_EQ(r.time_ms, -1);
  EXPECT_EQ(r.pid, -1);
  EXPECT_EQ(r.target, "");
}

TEST(Decoder, Rfc3339) {
  EXPECT_EQ(parseRfc3339Ms("1970-01-01T00:00:01.5Z"), 1500);
  EXPECT_EQ(parseRfc3339Ms("2026-11-29T10:33:11.123456789Z"), 1795948391123);
  EXPECT_EQ(parseRfc3339Ms("2026-11-29T10:33:11Z"), 1795948391000);
  EXPECT_EQ(parseRfc3339Ms("2026-13-29T10:33:11Z"), -1);
  EXPECT_EQ(parseRfc3339Ms("yesterday"), -1);
}

Record decision(const std::string& session, int64_t pid, const std::string& outcome,
                const std::string& rule, const std::string& target, int64_t ms = 1000) {
  Record r;
  r.kind = RecordKind::Decision;
  r.format = "native";
  r.session_id = session;
  r.seq = 2;
  r.event_id = session + "-2";
  r.time_ms = ms;
  r.category = "file";
  r.operation = "write";
  r.decision = outcome;
  r.rule_id = rule;
  r.rule_reason = "because";
  r.target = target;
  r.pid = pid;
  r.ppid = 1;
  r.comm = "sh";
  r.command = "sh -c x";
  return r;
}

TEST(Aggregate, CountsTheRealTrails) {
  Report rep;
  std::string error;
  for (const char* f : {"native", "ocsf", "ecs"})
    ASSERT_TRUE(readTrail(std::string(SV_REPORT_DATA) + "/" + f + ".jsonl", &rep, &error)) << error;
  EXPECT_EQ(rep.lines(), 36u);
  EXPECT_EQ(rep.malformed(), 0u);
  ASSERT_EQ(rep.sessions().size(), 3u);
  EXPECT_EQ(rep.totals()[kAllow], 27u);
  EXPECT_EQ(rep.totals()[kDeny], 3u);
  EXPECT_EQ(rep.byCategory().at("file")[kDeny], 3u);
  EXPECT_EQ(rep.byCategory().at("exec")[kAllow], 9u);
  auto rules = rep.rulesByDenials();
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0]->id, "deny-write-env");
  EXPECT_EQ(rules[0]->deny, 3u);
  EXPECT_EQ(rules[0]->examples, std::vector<std::string>{"/tmp/rp/.env"});  // deduplicated
  for (const SessionSummary& s : rep.sessions()) {
    EXPECT_EQ(s.exitText(), "0");
    size_t total = 0;
    auto tree = processTree(rep, s.id, 100, &total);
    ASSERT_EQ(tree.size(), 3u);  // sh, and below it mkdir and cat
    EXPECT_EQ(tree[0].depth, 0);
    EXPECT_EQ(tree[0].process->denials, 1u);
    EXPECT_EQ(tree[1].depth, 1);
    EXPECT_EQ(tree[2].depth, 1);
  }
}

TEST(Aggregate, MalformedLinesAreCountedNotFatal) {
  const std::string path = ::testing::TempDir() + "/report_malformed.jsonl";
  {
    std::ofstream out(path);
    std::ifstream in(std::string(SV_REPORT_DATA) + "/native.jsonl");
    std::string line, last;
    int i = 0;
    while (std::getline(in, line)) {
      last = line;
      out << line << "\n";
      if (i++ == 3) out << "{broken\n" << std::string(kMaxLine + 10, 'x') << "\n\n{\"x\":1}\n";
    }
    out << last.substr(0, 40);  // a cut last line, no newline
  }
  Report rep;
  std::string error;
  ASSERT_TRUE(readTrail(path, &rep, &error));
  EXPECT_EQ(rep.malformed(), 4u);
  ASSERT_EQ(rep.malformedExamples().size(), 4u);
  EXPECT_NE(rep.malformedExamples()[1].find("longer than"), std::string::npos);
  EXPECT_EQ(rep.totals()[kDeny], 1u);
  EXPECT_EQ(rep.sessions().size(), 1u);
  EXPECT_FALSE(readTrail("/nonexistent/x.jsonl", &rep, &error));
}

TEST(Aggregate, StaysBounded) {
  Limits limits;
  limits.sessions = 3;
  limits.processes = 10;
  limits.examples_per_rule = 2;
  limits.denials_per_rule = 4;
  limits.timeline_buckets = 64;
  limits.rules = 5;
  Report rep(limits);
  for (int i = 0; i < 20000; ++i)
    rep.add(decision("s" + std::to_string(i % 7), i % 50, i % 3 ? "allow" : "deny",
                     "rule-" + std::to_string(i % 8), "/p/" + std::to_string(i), i * 37));
  EXPECT_EQ(rep.sessions().size(), 3u);
  EXPECT_EQ(rep.sessionsOverflow().count(), 4u);
  EXPECT_TRUE(rep.sessionsOverflow().exact());
  EXPECT_EQ(rep.processes().size(), 10u);
  EXPECT_GT(rep.processesOverflow().count(), 0u);
  EXPECT_GT(rep.untrackedDecisions(), 0u);
  EXPECT_LE(rep.timeline().size(), 64u);
  uint64_t in_timeline = 0;
  for (const auto& b : rep.timeline()) in_timeline += b.counts[0] + b.counts[1] + b.counts[2];
  EXPECT_EQ(in_timeline, 20000u);
  EXPECT_EQ(rep.totals()[kAllow] + rep.totals()[kDeny], 20000u);
  auto rules = rep.rulesByDenials();
  EXPECT_EQ(rules.size(), 5u);
  EXPECT_EQ(rep.rulesOverflow().count(), 3u);  // 8 rules deny, 5 kept
  for (const RuleSummary* r : rules) {
    EXPECT_LE(r->examples.size(), 2u);
    EXPECT_LE(r->denials.size(), 4u);
    EXPECT_GT(r->more_targets, 0u);
  }
}

TEST(Aggregate, LongKeysStayDistinct) {
  // Session and rule ids past 512 bytes are kept as a prefix and a hash
  // (aggregate.cpp, boundedKey): ids that differ only at their end are still
  // different sessions, rules and processes, and the same id is one.
  Limits limits;
  limits.sessions = 2;
  Report rep(limits);
  const std::string a = std::string(100000, 's') + "a", b = std::string(100000, 's') + "b";
  const std::string ra = std::string(1000, 'r') + "a", rb = std::string(1000, 'r') + "b";
  for (int i = 0; i < 3; ++i) {
    rep.add(decision(a, 1, "deny", ra, "/x"));
    rep.add(decision(b, 1, "deny", rb, "/x"));
    rep.add(decision(std::string(100000, 's') + std::to_string(i), 1, "allow", "r", "/x"));
  }
  ASSERT_EQ(rep.sessions().size(), 2u);
  EXPECT_EQ(rep.sessions()[0].decisions[kDeny], 3u);
  EXPECT_EQ(rep.sessions()[1].decisions[kDeny], 3u);
  EXPECT_EQ(rep.sessionsOverflow().count(), 3u);
  EXPECT_EQ(rep.processes().size(), 5u);
  const auto rules = rep.rulesByDenials();
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0]->deny, 3u);
  EXPECT_EQ(rules[1]->deny, 3u);
}

TEST(Aggregate, TimelineTakesEarlierEvents) {
  Report rep;
  rep.add(decision("s", 1, "allow", "r", "/a", 1000000));
  rep.add(decision("s", 1, "deny", "r", "/a", 10));
  rep.add(decision("s", 1, "allow", "r", "/a", 5000000));
  uint64_t sum = 0;
  for (const auto& b : rep.timeline()) sum += b.counts[0] + b.counts[1];
  EXPECT_EQ(sum, 3u);
  EXPECT_LE(rep.timelineStartMs(), 10);
  EXPECT_LE(rep.timeline().size(), rep.limits().timeline_buckets);
}

TEST(Aggregate, PpidCycleDoesNotLoop) {
  Report rep;
  Record a = decision("s", 10, "allow", "r", "/a");
  a.ppid = 11;
  Record b = decision("s", 11, "allow", "r", "/a");
  b.ppid = 10;
  rep.add(a);
  rep.add(b);
  size_t total = 0;
  auto tree = processTree(rep, "s", 100, &total);
  EXPECT_EQ(tree.size(), 2u);
}

TEST(Escape, Html) {
  EXPECT_EQ(htmlEscape("<a href=\"x\">&'</a>"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(htmlEscape(std::string("a\0b\x1b\x7f", 5)), "a&#xFFFD;b&#x1B;&#x7F;");
  EXPECT_EQ(htmlEscape("é\t"), "é\t");
}

TEST(Escape, Terminal) {
  EXPECT_EQ(terminalSafe("a\x1b[31mred\n"), "a\\x1b[31mred\\x0a");
  EXPECT_EQ(terminalSafe("\xc2\x9b" "2J"), "\\u009b2J");  // C1 CSI
  EXPECT_EQ(terminalSafe("é"), "é");
}

TEST(Escape, ExplainCommandIsOneShellWord) {
  EXPECT_EQ(explainCommand("audit.jsonl", "5f0c", 17), "supervise explain --audit-file audit.jsonl 5f0c:17");
  EXPECT_EQ(explainCommand("my audit's.jsonl", "$(rm)", 1),
            "supervise explain --audit-file 'my audit'\\''s.jsonl' '$(rm):1'");
}

TEST(Render, HostileStringsAreEscapedInBothViews) {
  Report rep;
  const std::string evil = "/w/<script>alert(1)</script>\"'&\x1b]0;pwned\x07";
  Record r = decision("<b>sess</b>", 5, "deny", "<i>rule</i>", evil);
  r.comm = "<img src=x onerror=alert(1)>";
  r.command = "sh -c '<svg onload=alert(1)>'";
  r.rule_reason = "</style><script>x</script>";
  rep.setSource("<file>.jsonl");
  rep.add(r);
  rep.addMalformed("f:1", "<script>bad</script>");
  RenderOptions options;
  options.files = {"<file>.jsonl"};
  const std::string html = renderHtml(rep, options);
  for (const char* raw : {"<script", "<img", "<svg onload", "<b>sess", "<i>rule", "<file>", "\x1b"})
    EXPECT_EQ(html.find(raw), std::string::npos) << raw;
  EXPECT_NE(html.find("/w/&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;&#x1B;]0;pwned&#x07;"),
            std::string::npos);
  EXPECT_NE(html.find("supervise explain --audit-file"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));  // no fetch
  EXPECT_EQ(html.find("https://"), std::string::npos);
  const std::string text = renderText(rep, options);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_EQ(text.find('\x07'), std::string::npos);
  EXPECT_NE(text.find("\\x1b]0;pwned\\x07"), std::string::npos);
}

}  // namespace
}  // namespace sv::report
