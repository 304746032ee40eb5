// decodeLine() (RapidJSON's SAX reader, supervisor/report/record.cpp) against
// the nlohmann-DOM decoder it replaced (dom_decoder.cpp): on every real event
// of data/ (no adjustment: the same records), on mutations of them (cut, a
// byte dropped or replaced), and on hostile lines made by hand (duplicate
// keys, escapes in keys, broken UTF-8 and surrogates, numbers at the edges,
// deep nesting, huge strings). Both must accept the same lines, say the same
// why, and give the same Record. TEST(DecoderVsDom, TheDifferences) lists
// where simdjson (the parser before) and RapidJSON itself differ from
// nlohmann, all now read as nlohmann did (supervisor/report/README.md).
#include <gtest/gtest.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "supervisor/report/record.h"
#include "tests/unit/report/dom_decoder.h"

namespace sv::report {
namespace {

std::vector<std::string> dataLines() {
  std::vector<std::string> out;
  for (const char* name : {"native", "ocsf", "ecs"}) {
    std::ifstream in(std::string(SV_REPORT_DATA) + "/" + name + ".jsonl");
    for (std::string line; std::getline(in, line);) out.push_back(line);
  }
  return out;
}

// The members of two records that differ, "name: decodeLine / DOM" each.
std::string differences(const Record& a, const Record& b) {
  std::string out;
  auto field = [&](const char* name, const auto& x, const auto& y) {
    if (x == y) return;
    std::ostringstream s;
    s << (out.empty() ? "" : ", ") << name << ": " << x << " / " << y;
    out += s.str();
  };
  field("kind", static_cast<int>(a.kind), static_cast<int>(b.kind));
  field("format", a.format, b.format);
  field("session_id", a.session_id, b.session_id);
  field("event_id", a.event_id, b.event_id);
  field("seq", a.seq, b.seq);
  field("time_ms", a.time_ms, b.time_ms);
  field("time", a.time, b.time);
  field("category", a.category, b.category);
  field("operation", a.operation, b.operation);
  field("decision", a.decision, b.decision);
  field("rule_id", a.rule_id, b.rule_id);
  field("rule_reason", a.rule_reason, b.rule_reason);
  field("target", a.target, b.target);
  field("pid", a.pid, b.pid);
  field("ppid", a.ppid, b.ppid);
  field("comm", a.comm, b.comm);
  field("command", a.command, b.command);
  field("has_exit", a.has_exit, b.has_exit);
  field("exit_code", a.exit_code, b.exit_code);
  field("exit_signal", a.exit_signal, b.exit_signal);
  return out;
}

// Same verdict, same why, same record as the DOM decoder, the differences
// between the libraries applied (or not: `exact`); the failure names the line.
::testing::AssertionResult sameAsDom(std::string_view line, bool exact = false) {
  Record a, b;
  std::string why_a, why_b;
  const bool ok_a = decodeLine(line, &a, &why_a);
  const bool ok_b = exact ? testing::decodeLineDom(line, &b, &why_b)
                          : testing::decodeLineExpected(line, &b, &why_b);
  auto shown = [&] { return std::string(line.substr(0, 300)) + (line.size() > 300 ? "..." : ""); };
  if (ok_a != ok_b)
    return ::testing::AssertionFailure()
           << "decodeLine " << (ok_a ? "accepts" : "rejects (" + why_a + ")") << ", DOM "
           << (ok_b ? "accepts" : "rejects (" + why_b + ")") << ": " << shown();
  if (!ok_a && why_a != why_b)
    return ::testing::AssertionFailure() << "why: " << why_a << " vs " << why_b << ": " << shown();
  if (ok_a && !(a == b))
    return ::testing::AssertionFailure()
           << "records differ (" << differences(a, b) << "): " << shown();
  return ::testing::AssertionSuccess();
}

TEST(DecoderVsDom, SameAsDomOnRealEvents) {
  // What supervise writes has none of the differences: the old decoder as it
  // was.
  const auto lines = dataLines();
  ASSERT_EQ(lines.size(), 36u);
  for (const auto& line : lines) {
    const testing::Differences d = testing::differencesOf(line);
    EXPECT_FALSE(d.nul || d.duplicate_keys || d.big_integer || d.too_deep) << line;
    EXPECT_TRUE(sameAsDom(line, /*exact=*/true));
  }
}

TEST(DecoderVsDom, SameAsDomOnMutations) {
  const auto lines = dataLines();
  const std::string bytes = std::string("\"\\{}[],:0-e.u \t\xff\xc3\xed\xf4\x01") + '\0';
  uint32_t seed = 1;
  auto next = [&] { return seed = seed * 1103515245 + 12345, seed >> 8; };
  size_t checked = 0;
  for (const auto& line : lines) {
    // Every byte position of a short line costs too much (a DOM parse each):
    // about 150 positions per line, chosen at random but reproducibly.
    for (size_t k = 0; k < 150; ++k) {
      const size_t at = next() % line.size();
      ASSERT_TRUE(sameAsDom(std::string_view(line).substr(0, at)));
      std::string dropped = line;
      dropped.erase(at, 1);
      ASSERT_TRUE(sameAsDom(dropped));
      std::string replaced = line;
      replaced[at] = bytes[next() % bytes.size()];
      ASSERT_TRUE(sameAsDom(replaced));
      checked += 3;
    }
  }
  EXPECT_GT(checked, 16000u);
}

const char* kNative =
    R"({"schema_version":"1.6","session_id":"s","category":"file","decision":"deny",)";

TEST(DecoderVsDom, SameAsDomOnHostileLines) {
  const std::vector<std::string> cases = {
      // Duplicate keys (the last value, whole).
      std::string(kNative) + R"("process":{"pid":1,"comm":"a"},"process":{"pid":2}})",
      std::string(kNative) + R"("process":{"pid":1,"argv":["a","b"]},"process":5})",
      std::string(kNative) + R"("process":{"argv":["a"],"argv":"x"}})",
      std::string(kNative) + R"("process":{"argv":"x","argv":["a","b"]}})",
      std::string(kNative) + R"("file":{"path":"/a"},"file":{"path":7}})",
      std::string(kNative) + R"("decision":"allow","rule":{"id":"r"},"rule":{"reason":"z"}})",
      R"({"schema_version":1,"session_id":"a","session_id":"b","seq":3,"seq":"x"})",
      // Escapes in keys and values; \u0000 makes a different key.
      R"({"sch\u0065ma_version":"1","s\u0065ssion_id":"\u00e9\ud83d\ude00\n\t\/","category":"x"})",
      R"({"schema_version":"1","session_id\u0000":"s"})",
      std::string(kNative) + R"("file":{"p\u0061th":"/\"q\"\\"}})",
      // Surrogates.
      R"({"schema_version":"1","session_id":"\ud800"})",
      R"({"schema_version":"1","session_id":"\udc00"})",
      R"({"schema_version":"1","session_id":"\ud800\u0041"})",
      R"({"schema_version":"1","session_id":"\ud800\udbff"})",
      R"({"schema_version":"1","session_id":"\ud800\udfff"})",
      R"({"schema_version":"1","session_id":"\u12"})",
      R"({"schema_version":"1","session_id":"\x"})",
      // UTF-8: overlong, surrogates, past U+10FFFF, cut sequences, good ones.
      "{\"schema_version\":\"1\",\"session_id\":\"\xc0\x80\"}",
      "{\"schema_version\":\"1\",\"session_id\":\"\xc1\xbf\"}",
      "{\"schema_version\":\"1\",\"session_id\":\"\xe0\x80\x80\"}",
      "{\"schema_version\":\"1\",\"session_id\":\"\xe0\xa0\x80\"}",
      "{\"schema_version\":\"1\",\"session_id\":\"\xed\xa0\x80\"}",
      "{\"schema_version\":\"1\",\"session_id\":\"\xed\x9f\xbf\"}",
      "{\"schema_version\":\"1\",\"session_id\":\"\xf0\x8f\xbf\xbf\"}",
      "{\"schema_version\":\"1\",\"session_id\":\"\xf0\x90\x80\x80\"}",
      "{\"schema_version\":\"1\",\"session_id\":\"\xf4\x8f\xbf\xbf\"}",
      "{\"schema_version\":\"1\",\"session_id\":\"\xf4\x90\x80\x80\"}",
      "{\"schema_version\":\"1\",\"session_id\":\"\xf5\x80\x80\x80\"}",
      "{\"schema_version\":\"1\",\"session_id\":\"\xe2\x82\"}",
      "{\"schema_version\":\"1\",\"session_id\":\"\x7f\"}",
      "{\"schema_version\":\"1\",\"session_id\":\"a\x01\"}",
      // Control bytes 0x1A-0x1F past RapidJSON's 16-byte alignment (its SSE2 scan misses them).
      "{\"schema_version\":\"1\",\"session_id\":\"s\",\"x\":"
      "\"0123456789abcdefghijklmnopqrstuvwxyz\x1c\"}",
      "{\"schema_version\":\"1\",\"session_id\":\"s\",\"x\":"
      "\"0123456789abcdefghijklmnopqrstuvwxyz\x1a\x1f\x19\"}",
      "{\"schema_version\":\"1\",\"session_id\":\"0123456789abcdefghijklmnopqrstuvwxyz\x1f\"}",
      "{\"schema_version\":\"1\",\"session_id\":\"s\"}\x1b",
      "{\"schema_version\":\"1\",\"session_id\":\"a" + std::string(1, '\0') + "b\"}",
      "{\"schema_version\":\"1\",\"session_id\":\"a\"}" + std::string(1, '\0') + "junk",
      "{\"schema_version\":\"1\",\"session_id\":" + std::string(1, '\0') + "\"a\"}",
      "{\"schema_version\":\"1\",\"session_id\":\"s\"}\xff",
      // A byte order mark only at the very start.
      "\xef\xbb\xbf{\"schema_version\":\"1\",\"session_id\":\"s\"}",
      " \xef\xbb\xbf{\"schema_version\":\"1\",\"session_id\":\"s\"}",
      "\xef\xbb{\"schema_version\":\"1\",\"session_id\":\"s\"}",
      // Numbers at the edges of int64, uint64 and double.
      std::string(kNative) +
          R"("process":{"pid":9223372036854775807,"ppid":-9223372036854775808}})",
      std::string(kNative) +
          R"("process":{"pid":9223372036854775808,"ppid":-9223372036854775809}})",
      std::string(kNative) +
          R"("process":{"pid":18446744073709551615,"ppid":18446744073709551616}})",
      std::string(kNative) + R"("process":{"pid":-0,"ppid":1.0}})",
      std::string(kNative) +
          R"("process":{"pid":-9223372036854775808,"ppid":9223372036854775808}})",
      std::string(kNative) + R"("process":{"pid":18446744073709551615}})",
      std::string(kNative) + R"("process":{"pid":123456789012345678901234567890.5,"ppid":1e-400}})",
      std::string(kNative) + R"("process":{"pid":1.7976931348623157e308,"ppid":2e308}})",
      std::string(kNative) + R"("process":{"pid":1e400}})",
      // Positive exponents past 308 that are finite (RapidJSON: "number too big").
      "0e999902",
      std::string(kNative) + R"("process":{"pid":0e999,"ppid":0.001e309,"x":["0e999",-0E+400]}})",
      std::string(kNative) + R"("process":{"pid":0e999,"x":"\"0e999",7,1e999}})",
      std::string(kNative) + R"("process":{"pid":0e999,"ppid":3},"x":0e99x})",
      std::string(kNative) +
          R"("process":{"pid":1.7976931348623158e308,"ppid":-17976931348623158e292}})",
      std::string(kNative) + R"("process":{"pid":1.7976931348623159e308}})",
      std::string(kNative) + R"("process":{"pid":-179769313486231580793728971405301e275}})",
      std::string(kNative) + R"("process":{"pid":179769313486231580793728971405302e275}})",
      std::string(kNative) +
          R"("process":{"pid":0.0,"ppid":0e5,"x":[0.0e-0,-0.0,1e-320,4.9e-324]}})",
      std::string(kNative) + R"("process":{"pid":-1e400}})",
      std::string(kNative) + R"("process":{"pid":1e-400}})",
      std::string(kNative) + "\"process\":{\"pid\":1" + std::string(400, '0') + "}}",
      std::string(kNative) + R"("process":{"pid":01}})",
      std::string(kNative) + R"("process":{"pid":1.}})",
      std::string(kNative) + R"("process":{"pid":.5}})",
      std::string(kNative) + R"("process":{"pid":1e}})",
      std::string(kNative) + R"("process":{"pid":1E+2}})",
      std::string(kNative) + R"("process":{"pid":-}})",
      std::string(kNative) + R"("process":{"pid":+1}})",
      std::string(kNative) + R"("network":{"ip":"::1","port":8.5}})",
      std::string(kNative) + R"("network":{"ip":"10.0.0.1","port":18446744073709551615}})",
      std::string(kNative) + R"("network":{"ip":"10.0.0.1","port":-3}})",
      // Literals.
      std::string(kNative) + R"("x":[true,false,null]})",
      std::string(kNative) + R"("x":tru})",
      std::string(kNative) + R"("x":nul})",
      std::string(kNative) + R"("x":falsey})",
      // Argv arrays: only direct string elements are joined.
      std::string(kNative) + R"("process":{"argv":["",1,"a",["b"],{"c":"d"},"","e\u0020f"]}})",
      std::string(kNative) + R"("process":{"argv":[]}})",
      R"({"schema_version":"1","session_id":"s","category":"session","operation":"start",)"
      R"("session":{"command":["sh","-c","x"]}})",
      R"({"schema_version":"1","session_id":"s","category":"session","operation":"end",)"
      R"("session":{"exit":{"code":3,"signal":0}}})",
      R"({"schema_version":"1","session_id":"s","category":"session","operation":"end",)"
      R"("session":{"exit":{"code":"3","signal":9}}})",
      R"({"schema_version":"1","session_id":"s","category":"session","operation":"end",)"
      R"("session":{"exit":{"signal":"SIGKILL"},"exit":{}}})",
      // Paths through arrays and scalars are absent.
      std::string(kNative) + R"("process":[{"pid":1}],"file":[{"path":"/a"}]})",
      R"({"metadata":[{"correlation_uid":"s"}]})",
      R"({"metadata":{"correlation_uid":null}})",
      R"({"labels":{"session_id":"s"},"ecs":null,"event":{"action":"session-end"},)"
      R"("supervise":{"exit_code":2,"exit_signal":"SIGTERM"}})",
      R"({"labels":{"session_id":"s"},"ecs":{},"event":{"action":"connect"},)"
      R"("supervise":{"decision":"deny"},"destination":{"address":"/run/x","ip":{}}})",
      R"({"labels":{"session_id":"s"},"ecs":{},"event":{"action":"connect"},)"
      R"("supervise":{"decision":"deny"},"destination":{"address":"/run/x"}})",
      // Not JSON, or JSON but not an object.
      "",
      " ",
      "{",
      "}",
      "{}",
      "[]",
      "[1,2]",
      "\"s\"",
      "1",
      "null",
      "{\"a\"}",
      "{\"a\":}",
      "{\"a\":1,}",
      "[1,]",
      "{,}",
      "{\"a\":1 \"b\":2}",
      "{\"a\":1}}",
      "{\"a\":1} x",
      "{\"a\":1}\n",
      "{\"a\":1}\r\n \t",
      "{\"a\":1}/",
      "{\"a\":1}//c",
      "{'a':1}",
      "{\"a\":\"\t\"}",
  };
  for (const auto& line : cases) EXPECT_TRUE(sameAsDom(line));
}

// The lines simdjson (the parser before RapidJSON) read differently from
// nlohmann, each found by differencesOf(): RapidJSON's SAX reader and the
// handler in record.cpp read all of them as nlohmann did. Then two shapes
// where RapidJSON 1.1.0 itself differs and record.cpp rejects the line as
// nlohmann does. decodeLineExpected() is decodeLineDom(): no difference left.
TEST(DecoderVsDom, TheDifferences) {
  struct Case {
    std::string line;
    bool testing::Differences::*difference;
    std::string read;  // both decoders: the Record member read, or the why
  };
  auto nested = [](size_t levels, std::string_view inner) {
    return std::string(kNative) + "\"x\":" + std::string(levels - 1, '[') + std::string(inner) +
           std::string(levels - 1, ']') + "}";
  };
  const std::string nul(1, '\0');
  const std::vector<Case> cases = {
      // 1. Duplicate keys: the last value, whole (the handler clears what an
      //    earlier value of the key left below it).
      {std::string(kNative) + R"("file":{"path":"/first"},"file":{"path":"/last"}})",
       &testing::Differences::duplicate_keys, "/last"},
      {R"({"schema_version":"1","session_id":"","session_id":"s"})",
       &testing::Differences::duplicate_keys, "s"},
      // 2. A NUL byte ends the input (MemoryStream's Peek() gives '\0' there):
      //    what follows a complete value is ignored.
      {R"({"schema_version":"1","session_id":"s"})" + nul + "junk", &testing::Differences::nul,
       "s"},
      // 3. An integer past 64 bits: a double, so the member is absent.
      {std::string(kNative) + R"("process":{"pid":18446744073709551616}})",
       &testing::Differences::big_integer, "s"},
      {std::string(kNative) + R"("process":{"ppid":-9223372036854775809}})",
       &testing::Differences::big_integer, "s"},
      // 4. Nesting: no limit (the iterative parser has no recursion; the
      //    handler counts the levels below what it keeps).
      {nested(1024, "1"), &testing::Differences::too_deep, "s"},
      {nested(1 << 17, ""), &testing::Differences::too_deep, "s"},
      {nested(1 << 20, "{}"), &testing::Differences::too_deep, "s"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.line.substr(0, 200));
    const testing::Differences d = testing::differencesOf(c.line);
    EXPECT_TRUE(d.*c.difference);
    Record dom, now;
    std::string dom_why, now_why;
    const bool dom_ok = testing::decodeLineDom(c.line, &dom, &dom_why);
    const bool now_ok = decodeLine(c.line, &now, &now_why);
    auto shown = [](bool ok, const Record& r, const std::string& why) {
      if (!ok) return why;
      return r.target.empty() ? r.session_id : r.target;
    };
    EXPECT_EQ(shown(dom_ok, dom, dom_why), c.read);
    EXPECT_EQ(shown(now_ok, now, now_why), c.read);
    EXPECT_TRUE(sameAsDom(c.line, /*exact=*/true));
  }
  // RapidJSON 1.1.0 accepts a lone low surrogate escape (\udc00-\udfff) and
  // rounds 2e308 to infinity; nlohmann rejects both, and so does the handler.
  for (const std::string& line :
       {std::string(R"({"schema_version":"1","session_id":"\udc00"})"),
        std::string(R"({"schema_version":"1","session_id":"s","x":"a\udfffb"})"),
        std::string(R"({"schema_version":"1","session_id":"s","\udc00":1})"),
        std::string(kNative) + R"("process":{"ppid":2e308}})",
        std::string(kNative) + R"("process":{"ppid":-1.8e308}})"}) {
    Record r;
    std::string why;
    EXPECT_FALSE(decodeLine(line, &r, &why)) << line;
    EXPECT_EQ(why, "not JSON") << line;
    EXPECT_TRUE(sameAsDom(line, /*exact=*/true));
  }
}

TEST(DecoderVsDom, DeepNestingAndHugeStrings) {
  // Any depth reads as the DOM decoder reads it (simdjson stopped at 1024).
  for (size_t levels : {1000, 1022, 1023, 1024, 1025, 5000}) {
    for (std::string_view inner : {"", "1", "[]", "{}", "{\"a\":1}"}) {
      std::string arrays = std::string(kNative) + "\"x\":" + std::string(levels - 1, '[') +
                           std::string(inner) + std::string(levels - 1, ']') + "}";
      EXPECT_TRUE(sameAsDom(arrays)) << levels << " " << inner;
      EXPECT_TRUE(sameAsDom(std::string_view(arrays).substr(0, arrays.size() - 2)));
    }
  }
  for (size_t levels : {1000, 1023, 1024, 20000}) {
    std::string objects = std::string(kNative) + "\"x\":";
    for (size_t i = 1; i < levels; ++i) objects += "{\"process\":";
    objects += "1" + std::string(levels - 1, '}') + "}";
    EXPECT_TRUE(sameAsDom(objects)) << levels;
  }
  const std::string huge(1 << 20, 'a');
  EXPECT_TRUE(sameAsDom(std::string(kNative) + "\"file\":{\"path\":\"" + huge + "\"}}"));
  EXPECT_TRUE(sameAsDom(std::string(kNative) + "\"file\":{\"path\":\"" + huge + "\\u00e9\"}}"));
  EXPECT_TRUE(sameAsDom(std::string(kNative) + "\"file\":{\"path\":\"" + huge + "}}"));
}

TEST(DecoderVsDom, ReusesItsBuffersAcrossLines) {
  // A line's decoded strings (escapes, joined argv) must not leak into the
  // next.
  const std::string a =
      std::string(kNative) +
      R"("process":{"pid":1,"comm":"c\u0041","argv":["x","y"]},"file":{"path":"/\u0041"}})";
  const std::string b = std::string(kNative) + R"("process":{"pid":2,"argv":["z"]}})";
  const std::string c = std::string(kNative) + R"("process":{"pid":3,"argv":"q"}})";
  for (const auto* line : {&a, &b, &c, &a, &c, &b}) EXPECT_TRUE(sameAsDom(*line));
  // A line past 64 KiB is read by a fresh reader and handler, the next by
  // the shared ones: neither may change what the lines around it read.
  const std::string big =
      std::string(kNative) + R"("file":{"path":")" + std::string(300 << 10, 'p') + "\"}}";
  for (const auto* line : {&a, &big, &b, &big, &big, &c, &a}) EXPECT_TRUE(sameAsDom(*line));
  for (const auto& line : dataLines()) EXPECT_TRUE(sameAsDom(line, /*exact=*/true));
}

TEST(DecoderVsDom, Rfc3339AsTimegm) {
  // parseRfc3339Ms() does timegm()'s arithmetic itself; days past a month's
  // end and leap seconds run on as timegm() normalizes them.
  char text[40];
  for (int year : {1970, 1999, 2000, 2024, 2026, 2100, 2400, 9999, 1, 1600})
    for (int mon = 1; mon <= 12; ++mon)
      for (int day = 1; day <= 31; ++day) {
        std::tm tm{};
        tm.tm_year = year - 1900;
        tm.tm_mon = mon - 1;
        tm.tm_mday = day;
        tm.tm_hour = 23;
        tm.tm_min = 59;
        tm.tm_sec = 60;
        std::snprintf(text, sizeof text, "%04d-%02d-%02dT23:59:60.25Z", year, mon, day);
        ASSERT_EQ(parseRfc3339Ms(text), static_cast<int64_t>(timegm(&tm)) * 1000 + 250) << text;
      }
}

}  // namespace
}  // namespace sv::report
