// The provider-neutral shapes of one model request and one model answer. Pure
// data: the wire formats (openai.*, anthropic.*) translate to and from these.
#pragma once
#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace pine::model {

struct ToolSpec {
  std::string name, description;
  nlohmann::json parameters;  // JSON Schema of the arguments; null means "no arguments"
};

struct ToolCall {
  std::string id, name;
  std::string arguments;  // JSON text as the model wrote it (it may be malformed: the caller checks)
};

struct Message {
  enum class Role { User, Assistant, Tool } role = Role::User;
  std::string text;
  std::vector<ToolCall> toolCalls;  // assistant
  std::string toolCallId, toolName;  // tool results
  bool isError = false;
};

// Token counts. `input` is the uncached part of the prompt in every format (OpenAI's
// prompt_tokens counts cached tokens too: they are moved to cacheRead), so that
// cost = input*price.input + output*price.output + cacheRead*price.cacheRead + cacheWrite*price.cacheWrite.
struct Usage {
  long long input = 0, output = 0, cacheRead = 0, cacheWrite = 0;
};

// The largest token count (or index) a provider or a script may send: 2^53, the largest
// whole number a JSON number (a double) carries exactly, and far beyond any real answer.
// The decoders refuse anything else (README.md, "Numbers"), so every count in a Turn is
// in 0..kMaxCount and a sum or a cost computed from a few of them cannot overflow.
inline constexpr long long kMaxCount = 1LL << 53;

// a + b for counts in 0..kMaxCount, saturating at kMaxCount: totals over many turns
// never overflow (nor go negative if a caller passes a negative by mistake).
inline long long addCounts(long long a, long long b) {
  a = a < 0 ? 0 : a > kMaxCount ? kMaxCount : a;
  b = b < 0 ? 0 : b > kMaxCount ? kMaxCount : b;
  return a + b > kMaxCount ? kMaxCount : a + b;
}

// Stop reasons, the same words for every provider (others are passed through as sent).
inline constexpr const char* kStopEnd = "end_turn";
inline constexpr const char* kStopToolUse = "tool_use";
inline constexpr const char* kStopMaxTokens = "max_tokens";

struct Turn {
  std::string text;
  std::vector<ToolCall> toolCalls;
  Usage usage;
  std::string stopReason;  // kStop* or the provider's own word
  std::string reasoning;   // thinking text some servers stream beside the answer; never sent back
};

struct HttpCall {
  std::string method = "POST";
  std::string path;  // appended to the provider's baseUrl
  std::vector<std::pair<std::string, std::string>> headers;  // no key: the broker adds keyHeaders()
  std::string body;
};

struct ModelRequest {
  std::string model;  // the provider's model id
  std::string system;
  std::vector<Message> messages;
  std::vector<ToolSpec> tools;
  int maxTokens = 4096;
  bool stream = true;
};

// A failed model call: a non-2xx answer, an error event in the stream, a stream that
// ended early or could not be read. what() is a sentence for the owner.
struct ProviderError : std::runtime_error {
  enum class Kind { Status, ErrorEvent, Truncated, Malformed };
  Kind kind;
  int status;              // HTTP status; for error events the status the error type stands for; 0 otherwise
  bool rateLimited;        // 429 (or a rate_limit error event)
  bool retryable;          // 408, 409, 429, 5xx, overloaded: the same request may work later
  int retryAfterSec;       // from Retry-After / retry-after-ms; -1 when the provider said nothing
  ProviderError(Kind k, const std::string& message, int status_ = 0, bool rateLimited_ = false,
                bool retryable_ = false, int retryAfterSec_ = -1)
      : std::runtime_error(message), kind(k), status(status_), rateLimited(rateLimited_),
        retryable(retryable_), retryAfterSec(retryAfterSec_) {}
};

}  // namespace pine::model
