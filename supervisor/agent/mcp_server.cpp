// McpServer: see mcp_server.h.
#include "supervisor/agent/mcp_server.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <thread>

namespace sv::supervisor::agent {
namespace {

using nlohmann::json;

// JSON-RPC 2.0's codes.
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;

// structuredContent and tool titles came with this revision.
constexpr std::string_view kStructuredSince = "2025-06-18";

bool validId(const json& id) { return id.is_string() || id.is_number_integer(); }

}  // namespace

McpServer::McpServer(McpServerInfo info, std::vector<McpTool> tools, Writer write,
                     size_t max_concurrent_calls)
    : info_(std::move(info)),
      tools_(std::move(tools)),
      write_(std::move(write)),
      max_calls_(max_concurrent_calls) {}

McpServer::~McpServer() { waitIdle(); }

size_t McpServer::callsInFlight() const {
  std::lock_guard lock(mu_);
  return in_flight_;
}

void McpServer::waitIdle() const {
  std::unique_lock lock(mu_);
  idle_.wait(lock, [&] { return in_flight_ == 0; });
}

void McpServer::send(const json& message) {
  // Command output may be any bytes: invalid UTF-8 becomes U+FFFD rather than
  // an exception. dump() escapes control characters, so no newline gets in.
  const std::string line = message.dump(-1, ' ', false, json::error_handler_t::replace);
  std::lock_guard lock(write_mu_);
  write_(line);
}

void McpServer::reply(const json& id, json result) {
  send({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
}

void McpServer::replyError(const json& id, int code, const std::string& message) {
  send({{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}});
}

void McpServer::handleLine(std::string_view line) {
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;
  try {
    json message = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (message.is_discarded()) {
      replyError(nullptr, kParseError, "Parse error: the line is not valid JSON");
      return;
    }
    handle(message);
  } catch (const std::exception& e) {  // nlohmann's type errors, bad_alloc
    replyError(nullptr, kInvalidRequest, std::string("Invalid Request: ") + e.what());
  }
}

void McpServer::lineTooLong(size_t max_line) {
  replyError(nullptr, kParseError,
             "Parse error: a line longer than " + std::to_string(max_line) + " bytes");
}

void McpServer::handle(const json& m) {
  if (m.is_array()) {
    replyError(nullptr, kInvalidRequest,
               "Invalid Request: batches are not supported (MCP 2025-06-18 removed them)");
    return;
  }
  const json id = m.is_object() && m.contains("id") ? m["id"] : json();
  const bool has_id = m.is_object() && m.contains("id");
  if (!m.is_object() || m.value("jsonrpc", "") != "2.0" || (has_id && !validId(id))) {
    replyError(validId(id) ? id : json(), kInvalidRequest,
               "Invalid Request: expected a JSON-RPC 2.0 object with a string or integer id");
    return;
  }
  auto method_it = m.find("method");
  if (method_it == m.end()) {
    // A response to a request of ours: we send none, so nothing waits for it.
    if (m.contains("result") || m.contains("error")) return;
    replyError(has_id ? id : json(), kInvalidRequest, "Invalid Request: no method");
    return;
  }
  if (!method_it->is_string()) {
    replyError(has_id ? id : json(), kInvalidRequest, "Invalid Request: method is not a string");
    return;
  }
  const std::string method = method_it->get<std::string>();
  const json params = m.contains("params") ? m["params"] : json::object();
  if (!has_id) {  // notifications: nothing to answer
    if (method == "notifications/cancelled" && params.is_object()) cancelCall(params);
    return;
  }
  if (!params.is_object()) {
    replyError(id, kInvalidParams, "Invalid params: params must be an object");
    return;
  }
  if (method == "initialize") {
    reply(id, initializeResult(params));
  } else if (method == "ping") {
    reply(id, json::object());
  } else if (method == "tools/list") {
    reply(id, toolsList());
  } else if (method == "tools/call") {
    auto name = params.find("name");
    auto tool = name != params.end() && name->is_string()
                    ? std::find_if(tools_.begin(), tools_.end(),
                                   [&](const McpTool& t) { return t.name == *name; })
                    : tools_.end();
    if (tool == tools_.end()) {
      replyError(id, kInvalidParams,
                 "Unknown tool: " + (name != params.end() ? name->dump() : std::string("(none)")));
      return;
    }
    json arguments = params.contains("arguments") ? params["arguments"] : json::object();
    if (!arguments.is_object()) {
      replyError(id, kInvalidParams, "Invalid params: arguments must be an object");
      return;
    }
    startCall(id, *tool, std::move(arguments));
  } else {
    replyError(id, kMethodNotFound, "Method not found: " + method);
  }
}

json McpServer::initializeResult(const json& params) {
  const std::string asked = params.value("protocolVersion", "");
  const bool known = std::find(kMcpProtocolVersions.begin(), kMcpProtocolVersions.end(), asked) !=
                     kMcpProtocolVersions.end();
  {
    std::lock_guard lock(mu_);
    protocol_version_ = known ? asked : kMcpProtocolVersions.front();
  }
  json result = {{"protocolVersion", known ? asked : kMcpProtocolVersions.front()},
                 {"capabilities", {{"tools", {{"listChanged", false}}}}},
                 {"serverInfo", {{"name", info_.name}, {"version", info_.version}}}};
  if (!info_.instructions.empty()) result["instructions"] = info_.instructions;
  return result;
}

json McpServer::toolsList() const {
  std::string version;
  {
    std::lock_guard lock(mu_);
    version = protocol_version_;
  }
  // Revisions are dates: they compare as strings. Before initialize, the newest.
  const bool titles = version.empty() || version >= kStructuredSince;
  json tools = json::array();
  for (const McpTool& t : tools_) {
    json entry = {
        {"name", t.name}, {"description", t.description}, {"inputSchema", t.input_schema}};
    if (titles && !t.title.empty()) entry["title"] = t.title;
    tools.push_back(std::move(entry));
  }
  return {{"tools", tools}};
}

// notifications/cancelled {requestId, reason}: the call's tool is told
// through its eventfd and its answer is dropped. An id not in flight (done
// already, never sent, initialize) is ignored, as the specification says.
void McpServer::cancelCall(const json& params) {
  auto request = params.find("requestId");
  if (request == params.end() || !validId(*request)) return;
  std::lock_guard lock(mu_);
  auto call = calls_.find(request->dump());
  if (call == calls_.end() || call->second.cancelled) return;
  call->second.cancelled = true;
  const uint64_t one = 1;
  (void)!::write(call->second.cancel_fd, &one, sizeof one);
}

void McpServer::startCall(const json& id, const McpTool& tool, json arguments) {
  std::string version;
  const std::string key = id.dump();
  int cancel_fd = -1;
  {
    std::lock_guard lock(mu_);
    if (calls_.count(key)) {
      replyError(id, kInvalidRequest, "Invalid Request: a call with this id is still running");
      return;
    }
    if (in_flight_ >= max_calls_) {
      // Answered, not queued: the model sees why and may call again.
      reply(id, mcpTextResult("supervise mcp: " + std::to_string(max_calls_) +
                                  " tool calls are running already; call again when one ended",
                              true));
      return;
    }
    cancel_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (cancel_fd < 0) {
      reply(id, mcpTextResult("supervise mcp: eventfd: " + std::string(std::strerror(errno)), true));
      return;
    }
    calls_[key] = Call{cancel_fd, false};
    ++in_flight_;
    version = protocol_version_;
  }
  const bool structured = version.empty() || version >= kStructuredSince;
  std::thread([this, id, key, cancel_fd, &tool, arguments = std::move(arguments), structured] {
    json result;
    try {
      result = tool.call(arguments, cancel_fd);
      if (!structured) result.erase("structuredContent");
    } catch (const std::exception& e) {
      result = mcpTextResult("supervise mcp: " + tool.name + " failed: " + e.what(), true);
    }
    bool cancelled = false;
    {
      std::lock_guard lock(mu_);
      cancelled = calls_[key].cancelled;
      calls_.erase(key);
      ::close(cancel_fd);
    }
    try {
      if (!cancelled) reply(id, std::move(result));
    } catch (const std::exception&) {
      // Nothing to tell: the answer could not be written.
    }
    std::lock_guard lock(mu_);
    if (--in_flight_ == 0) idle_.notify_all();
  }).detach();
}

json mcpTextResult(const std::string& text, bool is_error) {
  return {{"content", json::array({{{"type", "text"}, {"text", text}}})}, {"isError", is_error}};
}

McpServer::Writer fdLineWriter(int fd) {
  auto broken = std::make_shared<std::atomic<bool>>(false);
  return [fd, broken](const std::string& message) {
    if (*broken) return;
    std::string line = message + "\n";
    size_t done = 0;
    while (done < line.size()) {
      const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        *broken = true;
        return;
      }
      done += size_t(n);
    }
  };
}

void serveLines(McpServer& server, int in_fd, size_t max_line) {
  std::string buffer;
  bool skipping = false;  // inside a line past max_line, until its newline
  char chunk[65536];
  for (;;) {
    const ssize_t n = ::read(in_fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::string_view data(chunk, size_t(n));
    while (!data.empty()) {
      const size_t nl = data.find('\n');
      const std::string_view part = data.substr(0, nl);
      if (!skipping) buffer.append(part);
      if (!skipping && buffer.size() > max_line) {
        server.lineTooLong(max_line);
        buffer.clear();
        skipping = true;
      }
      if (nl == std::string_view::npos) break;
      if (!skipping) server.handleLine(buffer);
      buffer.clear();
      skipping = false;
      data.remove_prefix(nl + 1);
    }
  }
  if (!skipping && !buffer.empty()) server.handleLine(buffer);  // a last line without newline
}

}  // namespace sv::supervisor::agent
