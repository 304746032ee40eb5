// decodeLine() (the one-pass scanner of supervisor/report/json_scan.h)
// against the nlohmann-DOM decoder it replaced (dom_decoder.cpp): on every
// real event of data/, on mutations of them (cut, a byte dropped or
// replaced), and on hostile lines made by hand (duplicate keys, escapes in
// keys, broken UTF-8 and surrogates, numbers at the edges, deep nesting,
// huge strings). Both must accept the same lines, say the same why, and
// give the same Record.
#include <gtest/gtest.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "supervisor/report/json_scan.h"
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

// Same verdict, same why, same record; the failure names the line.
::testing::AssertionResult sameAsDom(std::string_view line) {
  Record a, b;
  std::string why_a, why_b;
  const bool ok_a = decodeLine(line, &a, &why_a);
  const bool ok_b = testing::decodeLineDom(line, &b, &why_b);
  auto shown = [&] { return std::string(line.substr(0, 300)) + (line.size() > 300 ? "..." : ""); };
  if (ok_a != ok_b)
    return ::testing::AssertionFailure()
           << "scanner " << (ok_a ? "accepts" : "rejects (" + why_a + ")") << ", DOM "
           << (ok_b ? "accepts" : "rejects (" + why_b + ")") << ": " << shown();
  if (!ok_a && why_a != why_b)
    return ::testing::AssertionFailure() << "why: " << why_a << " vs " << why_b << ": " << shown();
  if (ok_a && !(a == b))
    return ::testing::AssertionFailure()
           << "records differ (session " << a.session_id << "/" << b.session_id << ", target "
           << a.target << "/" << b.target << ", command " << a.command << "/" << b.command
           << ", exit " << a.exit_code << a.exit_signal << "/" << b.exit_code << b.exit_signal
           << "): " << shown();
  return ::testing::AssertionSuccess();
}

TEST(ScanDecoder, SameAsDomOnRealEvents) {
  const auto lines = dataLines();
  ASSERT_EQ(lines.size(), 36u);
  for (const auto& line : lines) EXPECT_TRUE(sameAsDom(line));
}

TEST(ScanDecoder, SameAsDomOnMutations) {
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

TEST(ScanDecoder, SameAsDomOnHostileLines) {
  const std::vector<std::string> cases = {
      // Duplicate keys: the last one replaces the value whole.
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
      std::string(kNative) + R"("process":{"pid":1e400}})",
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

TEST(ScanDecoder, DeepNestingAndHugeStrings) {
  // No recursion: depth costs a bit per level, as the DOM parser accepts it.
  const size_t deep = 1 << 17;
  std::string arrays =
      std::string(kNative) + "\"x\":" + std::string(deep, '[') + std::string(deep, ']') + "}";
  EXPECT_TRUE(sameAsDom(arrays));
  EXPECT_TRUE(sameAsDom(std::string_view(arrays).substr(0, arrays.size() - 2)));
  std::string objects = std::string(kNative) + "\"x\":";
  for (size_t i = 0; i < 20000; ++i) objects += "{\"process\":";
  objects += "1" + std::string(20000, '}') + "}";
  EXPECT_TRUE(sameAsDom(objects));
  const std::string huge(1 << 20, 'a');
  EXPECT_TRUE(sameAsDom(std::string(kNative) + "\"file\":{\"path\":\"" + huge + "\"}}"));
  EXPECT_TRUE(sameAsDom(std::string(kNative) + "\"file\":{\"path\":\"" + huge + "\\u00e9\"}}"));
  EXPECT_TRUE(sameAsDom(std::string(kNative) + "\"file\":{\"path\":\"" + huge + "}}"));
}

TEST(ScanDecoder, ReusesItsBuffersAcrossLines) {
  // A line's decoded strings (escapes, joined argv) must not leak into the next.
  const std::string a =
      std::string(kNative) +
      R"("process":{"pid":1,"comm":"c\u0041","argv":["x","y"]},"file":{"path":"/\u0041"}})";
  const std::string b = std::string(kNative) + R"("process":{"pid":2,"argv":["z"]}})";
  const std::string c = std::string(kNative) + R"("process":{"pid":3,"argv":"q"}})";
  for (const auto* line : {&a, &b, &c, &a, &c, &b}) EXPECT_TRUE(sameAsDom(*line));
}

TEST(ScanDecoder, Rfc3339AsTimegm) {
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
