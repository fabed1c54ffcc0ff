// JSON-RPC 2.0 as MCP uses it: one message per line on stdio, one per body or SSE event over
// HTTP. Reading never throws: whatever a server sends is classified, and what is not a valid
// message says why (a hostile server must not be able to take the broker down with bytes).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace pine::mcp {

struct Message {
  enum class Kind { Request, Notification, Result, Error, Invalid };
  Kind kind = Kind::Invalid;
  nlohmann::json id;      // Request, Result, Error: a string or an integer
  std::string method;     // Request, Notification
  nlohmann::json params;  // Request, Notification (null when absent)
  nlohmann::json result;  // Result
  long long errorCode = 0;
  std::string errorMessage;  // Error (the server's words, outside content)
  std::string problem;       // Invalid: why
};

// Deeper than this is refused unread (MCP results and schemas are far shallower): parsing,
// copying and dumping JSON recurse.
inline constexpr int kMaxNesting = 64;
Message parseMessage(std::string_view text);

std::string requestText(long long id, const std::string& method, const nlohmann::json& params);
std::string notificationText(const std::string& method, const nlohmann::json& params);
std::string resultText(const nlohmann::json& id, const nlohmann::json& result);
std::string errorText(const nlohmann::json& id, long long code, const std::string& message);

// JSON-RPC's reserved codes used here.
inline constexpr long long kMethodNotFound = -32601;
inline constexpr long long kInvalidRequest = -32600;

}  // namespace pine::mcp
