// One MCP session as a client (the broker's side), over a byte stream: stdio of a local server
// that pined started, or a stream egress carries. initialize with version negotiation,
// tools/list with pagination, tools/call with progress, cancellation and a timeout. Everything
// the server sends is outside content and may be hostile: a message over the size limit, a
// broken one, a request to the client, no answer at all each end in a clear error for the
// call, never in a crash or unbounded memory.
//
// The Client must outlive the promises it returns (dropping a call's promise cancels the call:
// the server is told with notifications/cancelled).
#pragma once
#include <kj/async-io.h>
#include <kj/timer.h>

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "broker/mcp/json_rpc.h"
#include "broker/mcp/line_channel.h"

namespace pine::mcp {

// Newest first: what pine asks for, and what it accepts when a server answers with another.
inline const char* const kProtocolVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

struct ToolInfo {
  std::string name;
  std::string title;
  std::string description;
  nlohmann::json inputSchema = nlohmann::json::object();
  nlohmann::json annotations = nlohmann::json::object();
  bool readOnlyHint = false;  // the server says the tool changes nothing (annotations.readOnlyHint)
};

struct ToolResult {
  std::string text;  // what reaches the model, capped
  bool isError = false;
  bool truncated = false;
};

struct ClientOptions {
  size_t maxMessage = 4u << 20;     // a longer line from the server ends the session
  size_t maxResultText = 64u << 10;  // a tool's result as the model sees it
  kj::Duration requestTimeout = 30 * kj::SECONDS;  // initialize and tools/list
  size_t maxTools = 256;
  int maxPages = 32;
  int maxInvalid = 64;  // messages that are not JSON-RPC before the session is given up
  std::string clientVersion = "0";
};

class Client final : private kj::TaskSet::ErrorHandler {
 public:
  Client(kj::Own<kj::AsyncIoStream> stream, kj::Timer& timer, ClientOptions options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  kj::Promise<void> initialize();
  const std::string& protocolVersion() const { return version_; }
  const std::string& serverName() const { return serverName_; }

  kj::Promise<std::vector<ToolInfo>> listTools();
  // progress gets the server's progress messages as text (outside content).
  // `meta` (an object) adds to the call's _meta (the bundled browser's conversation).
  kj::Promise<ToolResult> callTool(const std::string& name, const nlohmann::json& arguments, kj::Duration timeout,
                                   std::function<void(const std::string&)> progress = {},
                                   const nlohmann::json& meta = nlohmann::json::object());

  // The server said its tools changed (notifications/tools/list_changed).
  void onToolsChanged(std::function<void()> f) { toolsChanged_ = std::move(f); }
  // Why the session ended; empty while it runs.
  const std::string& failure() const { return failure_; }
  size_t invalidMessages() const { return invalid_; }
  size_t strayAnswers() const { return stray_; }

 private:
  struct Pending {
    std::string method;
    kj::Own<kj::PromiseFulfiller<nlohmann::json>> fulfiller;
  };
  kj::Promise<nlohmann::json> request(const std::string& method, nlohmann::json params, kj::Duration timeout,
                                      long long id = 0);
  kj::Promise<void> readLoop();
  void handle(const Message& m);
  void fail(const std::string& why);
  void cancel(long long id, const std::string& reason);
  void send(std::string line);
  kj::Promise<std::vector<ToolInfo>> listPage(std::string cursor, int page, std::vector<ToolInfo> so_far);

  kj::Timer& timer_;
  ClientOptions options_;
  LineChannel channel_;
  long long nextId_ = 1;
  std::map<long long, Pending> pending_;
  std::map<std::string, std::function<void(const std::string&)>> progress_;  // by progress token
  std::function<void()> toolsChanged_;
  std::string version_, serverName_, failure_;
  size_t invalid_ = 0, stray_ = 0;
  void taskFailed(kj::Exception&& e) override;  // a write to the server failed
  kj::Promise<void> reading_ = nullptr;
  kj::TaskSet writes_{*this};
};

// A tool's result content as text for the model, at most `cap` bytes (images and audio are named,
// not inlined; structured content is given as JSON when there is no text).
ToolResult resultToText(const nlohmann::json& result, size_t cap);

}  // namespace pine::mcp
