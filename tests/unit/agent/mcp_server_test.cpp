// McpServer (supervisor/agent/mcp_server.h) with stand-in tools, no daemon:
// the lifecycle and revision negotiation, tools/list, tools/call answered
// from a thread of its own (out of order when a call is slow), and every
// JSON-RPC error the transport can meet. Also the denial-line parser and the
// run tool's argument checks, which need no daemon either.
#include "supervisor/agent/mcp_server.h"

#include <fcntl.h>
#include <poll.h>

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "supervisor/agent/captured_run.h"
#include "supervisor/agent/mcp_tools.h"

namespace sv::supervisor::agent {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

class Mcp : public testing::Test {
 protected:
  Mcp() {
    McpTool echo;
    echo.name = "echo";
    echo.title = "Echo";
    echo.description = "echoes";
    echo.input_schema = {{"type", "object"}};
    echo.call = [this](const json& args, int cancel_fd) -> json {
      if (args.contains("until_cancelled")) {  // up to 10 s
        pollfd p{cancel_fd, POLLIN, 0};
        saw_cancel_ = ::poll(&p, 1, 10000) == 1;
      }
      if (args.contains("sleep_ms"))
        std::this_thread::sleep_for(std::chrono::milliseconds(args["sleep_ms"].get<int>()));
      if (args.contains("throw")) throw std::runtime_error("boom");
      if (args.contains("wait"))
        while (!release_) std::this_thread::sleep_for(1ms);
      return {{"content", json::array({{{"type", "text"}, {"text", args.dump()}}})},
              {"isError", false},
              {"structuredContent", args}};
    };
    server_ = std::make_unique<McpServer>(
        McpServerInfo{"supervise", "9.9", "be careful"}, std::vector<McpTool>{echo},
        [this](const std::string& m) {
          std::lock_guard lock(mu_);
          EXPECT_EQ(m.find('\n'), std::string::npos) << "a message is one line";
          out_.push_back(json::parse(m));
        },
        2);
  }
  ~Mcp() override {
    release_ = true;
    server_.reset();
  }

  // Sends one line; returns every message written since.
  std::vector<json> send(const std::string& line, bool wait = true) {
    server_->handleLine(line);
    if (wait) server_->waitIdle();
    std::lock_guard lock(mu_);
    return std::exchange(out_, {});
  }
  json one(const std::string& line) {
    auto all = send(line);
    EXPECT_EQ(all.size(), 1u) << line;
    return all.empty() ? json() : all[0];
  }

  std::mutex mu_;
  std::vector<json> out_;
  std::atomic<bool> release_{false};
  std::atomic<bool> saw_cancel_{false};
  std::unique_ptr<McpServer> server_;
};

TEST_F(Mcp, InitializeNegotiatesTheRevision) {
  json r = one(
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})");
  EXPECT_EQ(r["jsonrpc"], "2.0");
  EXPECT_EQ(r["id"], 1);
  EXPECT_EQ(r["result"]["protocolVersion"], "2025-06-18");
  EXPECT_EQ(r["result"]["capabilities"]["tools"]["listChanged"], false);
  EXPECT_EQ(r["result"]["serverInfo"]["name"], "supervise");
  EXPECT_EQ(r["result"]["instructions"], "be careful");
  // One we do not speak: our newest, for the client to decide.
  r = one(
      R"({"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"1999-01-01"}})");
  EXPECT_EQ(r["id"], "a");
  EXPECT_EQ(r["result"]["protocolVersion"], kMcpProtocolVersions.front());
  EXPECT_TRUE(send(R"({"jsonrpc":"2.0","method":"notifications/initialized"})").empty());
  EXPECT_EQ(one(R"({"jsonrpc":"2.0","id":2,"method":"ping"})")["result"], json::object());
}

TEST_F(Mcp, ToolsListAndCall) {
  one(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}})");
  json list = one(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})");
  ASSERT_EQ(list["result"]["tools"].size(), 1u);
  EXPECT_EQ(list["result"]["tools"][0]["name"], "echo");
  EXPECT_EQ(list["result"]["tools"][0]["title"], "Echo");
  EXPECT_EQ(list["result"]["tools"][0]["inputSchema"]["type"], "object");
  json call = one(
      R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"x":"a\nb"}}})");
  EXPECT_EQ(call["id"], 3);
  EXPECT_EQ(call["result"]["isError"], false);
  EXPECT_EQ(call["result"]["structuredContent"]["x"], "a\nb");
  // A tool that throws: an isError result, not a protocol error.
  call = one(
      R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"throw":1}}})");
  EXPECT_EQ(call["result"]["isError"], true);
  EXPECT_NE(call["result"]["content"][0]["text"].get<std::string>().find("boom"),
            std::string::npos);
}

TEST_F(Mcp, OlderRevisionsGetNoStructuredContentNorTitles) {
  one(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05"}})");
  EXPECT_FALSE(
      one(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})")["result"]["tools"][0].contains(
          "title"));
  json call = one(
      R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{}}})");
  EXPECT_FALSE(call["result"].contains("structuredContent"));
  EXPECT_EQ(call["result"]["content"][0]["type"], "text");
}

TEST_F(Mcp, ASlowCallDoesNotHoldUpTheNext) {
  server_->handleLine(
      R"({"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"echo","arguments":{"wait":1}}})");
  server_->handleLine(R"({"jsonrpc":"2.0","id":"p","method":"ping"})");
  server_->handleLine(
      R"({"jsonrpc":"2.0","id":"fast","method":"tools/call","params":{"name":"echo","arguments":{}}})");
  // Both answered while the slow call still runs.
  std::vector<std::string> ids;
  for (int i = 0; i < 5000 && ids.size() < 2; ++i) {
    std::this_thread::sleep_for(1ms);
    std::lock_guard lock(mu_);
    ids.clear();
    for (auto& m : out_) ids.push_back(m["id"].get<std::string>());
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"p", "fast"}));
  // The fast call's thread counts itself out just after it answered.
  for (int i = 0; i < 5000 && server_->callsInFlight() != 1; ++i) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(server_->callsInFlight(), 1u) << "only the slow call still runs";
  release_ = true;
  server_->waitIdle();
  std::lock_guard lock(mu_);
  ASSERT_EQ(out_.size(), 3u);
  EXPECT_EQ(out_[2]["id"], "slow");
}

// notifications/cancelled: the tool is told (run kills its command) and no
// answer is sent for that id; an id not in flight is ignored; an id still
// running cannot be used again.
TEST_F(Mcp, ACancelledCallIsToldAndNotAnswered) {
  server_->handleLine(
      R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"until_cancelled":1}}})");
  for (int i = 0; i < 5000 && server_->callsInFlight() != 1; ++i) std::this_thread::sleep_for(1ms);
  auto again = send(
      R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{}}})",
      /*wait=*/false);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0]["error"]["code"], -32600);
  EXPECT_TRUE(send(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}})",
                   /*wait=*/false)
                  .empty());
  EXPECT_TRUE(send(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}})")
                  .empty())
      << "no answer for a cancelled call";
  EXPECT_TRUE(saw_cancel_) << "the tool was told";
  // The id is free again, and an uncancelled call is answered as always.
  json r = one(
      R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{}}})");
  EXPECT_EQ(r["id"], 7);
  EXPECT_EQ(r["result"]["isError"], false);
}

TEST_F(Mcp, TheCapAnswersBusy) {
  server_->handleLine(
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"wait":1}}})");
  server_->handleLine(
      R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"wait":1}}})");
  ASSERT_EQ(server_->callsInFlight(), 2u);
  server_->handleLine(
      R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{}}})");
  {
    std::lock_guard lock(mu_);
    ASSERT_EQ(out_.size(), 1u);
    EXPECT_EQ(out_[0]["id"], 3);
    EXPECT_EQ(out_[0]["result"]["isError"], true);
    out_.clear();
  }
  release_ = true;
  server_->waitIdle();
  std::lock_guard lock(mu_);
  EXPECT_EQ(out_.size(), 2u);
}

TEST_F(Mcp, JsonRpcErrors) {
  auto code = [&](const std::string& line) {
    json r = one(line);
    EXPECT_EQ(r["jsonrpc"], "2.0");
    return r["error"]["code"].get<int>();
  };
  EXPECT_EQ(code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"), -32700);
  EXPECT_EQ(one("not json at all")["id"], nullptr);
  EXPECT_EQ(code(R"({"jsonrpc":"2.0","id":1,"method":"resources/list"})"), -32601);
  EXPECT_EQ(one(R"({"jsonrpc":"2.0","id":7,"method":"nope"})")["id"], 7);
  EXPECT_EQ(code(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rm"}})"),
            -32602);
  EXPECT_EQ(
      code(
          R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":[1]}})"),
      -32602);
  EXPECT_EQ(code(R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1]})"), -32602);
  EXPECT_EQ(code(R"({"jsonrpc":"1.0","id":1,"method":"ping"})"), -32600);
  EXPECT_EQ(code(R"({"jsonrpc":"2.0","id":{"a":1},"method":"ping"})"), -32600);
  EXPECT_EQ(code(R"({"jsonrpc":"2.0","id":1,"method":5})"), -32600);
  EXPECT_EQ(code(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])"), -32600);
  EXPECT_EQ(code(R"("just a string")"), -32600);
  // Notifications and responses get no answer; blank lines are nothing.
  EXPECT_TRUE(
      send(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})")
          .empty());
  EXPECT_TRUE(send(R"({"jsonrpc":"2.0","method":"unknown/notification"})").empty());
  EXPECT_TRUE(send(R"({"jsonrpc":"2.0","id":9,"result":{}})").empty());
  EXPECT_TRUE(send("   ").empty());
}

TEST_F(Mcp, ServeLinesSplitsAndCapsLines) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string input = R"({"jsonrpc":"2.0","id":1,"method":"ping"})"
                            "\r\n" +
                            std::string(300, 'x') + "\n" +  // over the cap below: one parse error
                            R"({"jsonrpc":"2.0","id":2,"method":"ping"})";  // last line, no newline
  ASSERT_EQ(::write(fds[1], input.data(), input.size()), ssize_t(input.size()));
  ::close(fds[1]);
  serveLines(*server_, fds[0], 200);
  ::close(fds[0]);
  std::lock_guard lock(mu_);
  ASSERT_EQ(out_.size(), 3u);
  EXPECT_EQ(out_[0]["id"], 1);
  EXPECT_EQ(out_[1]["error"]["code"], -32700);
  EXPECT_EQ(out_[2]["id"], 2);
}

TEST(DenialLine, ParsesWhatPrintDenialWrites) {
  auto d = parseDenialLine(
      "supervise: denied write to .env (rule deny-write-env: secrets stay out of the agent's "
      "reach)");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->action, "denied");
  EXPECT_EQ(d->what, "write to .env");
  EXPECT_EQ(d->rule_id, "deny-write-env");
  EXPECT_EQ(d->reason, "secrets stay out of the agent's reach");
  d = parseDenialLine("supervise: would deny connect to 10.0.0.1:443 (rule default-deny-connect)");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->action, "would deny");
  EXPECT_EQ(d->rule_id, "default-deny-connect");
  EXPECT_EQ(d->reason, "");
  // A path holding " (rule " itself: the last one is the rule.
  d = parseDenialLine("supervise: denied write to a (rule x) b (rule r1: why (really))");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->what, "write to a (rule x) b");
  EXPECT_EQ(d->rule_id, "r1");
  EXPECT_EQ(d->reason, "why (really)");
  EXPECT_EQ(d->event_id, "");
  // The audit event printDenial names when one was written.
  d = parseDenialLine("supervise: denied write to .env (rule deny-write-env: secrets) [event 3f2a9c1b:12]");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->rule_id, "deny-write-env");
  EXPECT_EQ(d->reason, "secrets");
  EXPECT_EQ(d->event_id, "3f2a9c1b:12");
  for (const char* other : {"supervise: denied write to y (rule z) [evnt 1]","supervise: listening on /x", "hello (rule x)", "supervise: denied x",
                            "supervise: exploded write to y (rule z)"})
    EXPECT_FALSE(parseDenialLine(other)) << other;
}

TEST(RunTool, ChecksItsArgumentsAndSaysWhenTheDaemonIsAway) {
  RunToolOptions o;
  o.socket = "/nonexistent/supervise-test/exec.sock";
  o.default_cwd = "/tmp";
  McpTool run = makeRunTool(o);
  EXPECT_EQ(run.name, "run");
  for (const char* bad :
       {R"({})", R"({"command":"a","argv":["a"]})", R"({"command":1})", R"({"argv":[]})",
        R"({"argv":["a",2]})", R"({"command":"x","timeout":0})", R"({"command":"x","timeout":"5"})",
        R"({"command":"x","timeout":1e12})", R"({"command":"x","cwd":""})",
        R"({"command":"x","env":{"A":1}})", R"({"command":"x","env":{"A=B":"c"}})",
        R"({"command":"x","shell":true})"}) {
    json r = run.call(json::parse(bad), -1);
    EXPECT_EQ(r["isError"], true) << bad;
    EXPECT_TRUE(r["content"][0]["text"].get<std::string>().starts_with("invalid arguments: "))
        << bad << " → " << r.dump();
  }
  json r = run.call(json::parse(R"({"command":"true","cwd":"sub","timeout":1.5})"), -1);
  EXPECT_EQ(r["isError"], true);
  const std::string text = r["content"][0]["text"];
  EXPECT_NE(text.find("did not run"), std::string::npos) << text;
  EXPECT_NE(text.find("supervise serve"), std::string::npos) << text;
}

}  // namespace
}  // namespace sv::supervisor::agent
