// McpServer: a Model Context Protocol server over stdio (docs/agents.md,
// "MCP"), the tools given to it (mcp_tools.h has supervise's).
//
// JSON-RPC 2.0, one message per line (the MCP stdio transport: no embedded
// newline, nothing else on stdout). Lifecycle: `initialize` negotiates the
// protocol revision (the client's when it is one we speak, else our
// latest), `notifications/initialized` and `ping`; tools: `tools/list`,
// `tools/call`. Errors are JSON-RPC's: -32700 a line that is not JSON,
// -32600 not a request (batches included: revision 2025-06-18 removed them),
// -32601 an unknown method, -32602 an unknown tool or params that are not an
// object. A tool that runs and fails answers a result with isError: true.
//
// Each tools/call runs on a thread of its own, so a long command does not
// hold up ping or the calls after it; answers may come out of order (their
// ids pair them). `notifications/cancelled` for a call in flight tells its
// tool (McpTool::call's cancel_fd: `run` kills the command) and no answer
// is sent for it, as the specification asks. No exception leaves
// handleLine() or a call's thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace sv::supervisor::agent {

// Newest first: what initialize answers when the client asks for another.
inline const std::vector<std::string> kMcpProtocolVersions = {"2025-11-25", "2025-06-18",
                                                              "2025-03-26", "2024-11-05"};

struct McpTool {
  std::string name, title, description;
  nlohmann::json input_schema;
  // The CallToolResult for `arguments`: content, isError, structuredContent
  // (left out for revisions before 2025-06-18, which lack it). May throw:
  // the server turns an exception into an isError result. `cancel_fd`
  // becomes readable when the client cancels the call
  // (notifications/cancelled): stop, its result is not sent.
  std::function<nlohmann::json(const nlohmann::json& arguments, int cancel_fd)> call;
};

struct McpServerInfo {
  std::string name, version;
  std::string instructions;  // initialize's instructions: what the model is told up front
};

class McpServer {
 public:
  // Writes one message (no newline). Called from several threads, one at a time.
  using Writer = std::function<void(const std::string& message)>;

  McpServer(McpServerInfo info, std::vector<McpTool> tools, Writer write,
            size_t max_concurrent_calls);
  ~McpServer();  // waits for the calls in flight
  McpServer(const McpServer&) = delete;
  McpServer& operator=(const McpServer&) = delete;

  // One line of input: answered through the writer (a tools/call later).
  void handleLine(std::string_view line);
  // A line past the reader's cap: a parse error (the line is skipped).
  void lineTooLong(size_t max_line);
  size_t callsInFlight() const;
  void waitIdle() const;

 private:
  void handle(const nlohmann::json& message);
  void startCall(const nlohmann::json& id, const McpTool& tool, nlohmann::json arguments);
  void cancelCall(const nlohmann::json& params);
  nlohmann::json initializeResult(const nlohmann::json& params);
  nlohmann::json toolsList() const;
  void reply(const nlohmann::json& id, nlohmann::json result);
  void replyError(const nlohmann::json& id, int code, const std::string& message);
  void send(const nlohmann::json& message);

  McpServerInfo info_;
  std::vector<McpTool> tools_;
  Writer write_;
  size_t max_calls_;
  std::string protocol_version_;  // negotiated; "" before initialize
  mutable std::mutex mu_;
  mutable std::condition_variable idle_;
  size_t in_flight_ = 0;
  // The calls in flight by id (its JSON text): each one's cancel eventfd,
  // and whether the client cancelled it.
  struct Call {
    int cancel_fd = -1;
    bool cancelled = false;
  };
  std::map<std::string, Call> calls_;
  std::mutex write_mu_;
};

// A CallToolResult of one text block.
nlohmann::json mcpTextResult(const std::string& text, bool is_error);

// A Writer that writes each message and a newline to `fd` in one go; after a
// failed write (the client closed its end) it writes nothing more.
McpServer::Writer fdLineWriter(int fd);

// Reads `in_fd` line by line into server.handleLine() until EOF. A line
// longer than `max_line` is answered with a parse error and skipped.
void serveLines(McpServer& server, int in_fd, size_t max_line);

}  // namespace sv::supervisor::agent
