// JsonDoc: positions of keys and values, syntax errors with line:column.
#include <gtest/gtest.h>

#include "policy/json_doc.h"

namespace sv::policy {
namespace {

TEST(JsonDoc, PositionsOfKeysAndValues) {
  const char* text =
      "{\n"
      "  \"a\": 1,\n"
      "  \"obj\": {\"k\": \"v\", \"n\": null},\n"
      "    \"list\": [true, -2.5e3,\n"
      "      \"x\\\"y\", {\"z/~\": []}]\n"
      "}\n";
  JsonDoc doc;
  JsonParseError err;
  ASSERT_TRUE(parseJsonDoc(text, &doc, &err)) << err.message;
  auto at = [&](const char* ptr, bool key) {
    TextPos p = key ? doc.keyPos(ptr) : doc.valuePos(ptr);
    return std::to_string(p.line) + ":" + std::to_string(p.column);
  };
  EXPECT_EQ(at("", false), "1:1");
  EXPECT_EQ(at("/a", true), "2:3");
  EXPECT_EQ(at("/a", false), "2:8");
  EXPECT_EQ(at("/obj", false), "3:10");
  EXPECT_EQ(at("/obj/k", true), "3:11");
  EXPECT_EQ(at("/obj/k", false), "3:16");
  EXPECT_EQ(at("/obj/n", false), "3:26");
  EXPECT_EQ(at("/list", true), "4:5");
  EXPECT_EQ(at("/list/0", false), "4:14");
  EXPECT_EQ(at("/list/1", false), "4:20");
  EXPECT_EQ(at("/list/2", false), "5:7");
  EXPECT_EQ(at("/list/3", false), "5:15");
  EXPECT_EQ(at("/list/3/z~1~0", true), "5:16");
  EXPECT_EQ(at("/list/3/z~1~0", false), "5:23");
  EXPECT_EQ(doc.root["list"][2], "x\"y");
}

TEST(JsonDoc, SyntaxErrors) {
  struct Case {
    const char* text;
    int line, column;
  };
  const Case cases[] = {
      {"{\n  \"a\": tru\n}", 2, 8},
      {"{\"a\": 1,}", 1, 9},
      {"{\n\n  \"a\" 1}", 3, 7},
      {"", 1, 1},
  };
  for (const auto& c : cases) {
    JsonDoc doc;
    JsonParseError err;
    EXPECT_FALSE(parseJsonDoc(c.text, &doc, &err)) << c.text;
    EXPECT_EQ(err.pos.line, c.line) << c.text << ": " << err.message;
    EXPECT_EQ(err.pos.column, c.column) << c.text << ": " << err.message;
    EXPECT_EQ(err.message.find("[json.exception"), std::string::npos) << err.message;
  }
}

TEST(JsonDoc, DuplicateKeyIsAnError) {
  JsonDoc doc;
  JsonParseError err;
  EXPECT_FALSE(parseJsonDoc("{\"a\": 1,\n \"a\": 2}", &doc, &err));
  EXPECT_EQ(err.pos.line, 2);
  EXPECT_EQ(err.pos.column, 2);
  EXPECT_NE(err.message.find("duplicate key"), std::string::npos);
}

}  // namespace
}  // namespace sv::policy
