// The MCP server side both bundled connectors (pine-web, pine-browser) speak to the broker on
// their fd 3: JSON-RPC 2.0, one message a line (the stdio transport's framing), initialize with
// version negotiation, ping, tools/list and tools/call; notifications are read and dropped.
// Each tools/call runs on a thread of its own (at most `maxCalls` at once), so a slow call
// does not hold up a ping; answers are written whole, one at a time. What a server offers is
// its McpServerSpec: its name, its tools and how a call is answered.
#pragma once
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace pine::web {

// Lines from a socket; a line over the limit is skipped whole.
class LineReader {
 public:
  LineReader(int fd, size_t maxLineBytes) : fd_(fd), max_(maxLineBytes) {}
  // false at the end of the stream; `tooLong` set for a line that was skipped.
  bool next(std::string& line, bool& tooLong);
  size_t maxLineBytes() const { return max_; }

 private:
  int fd_;
  size_t max_;
  std::string buf_;
  size_t scanned_ = 0;
};

bool writeAll(int fd, const std::string& s);

struct McpServerSpec {
  std::string name;          // serverInfo.name, and in error texts
  std::string instructions;  // initialize's instructions
  nlohmann::json tools;      // the tools/list array
  // A tools/call's result object ({content, isError}); may throw (an error result then). `meta`
  // is the call's _meta (an object; the broker names the conversation to pine-browser there).
  std::function<nlohmann::json(const std::string& tool, const nlohmann::json& arguments, const nlohmann::json& meta)> call;
  std::function<void()> atEnd;  // when the broker has closed the socket, before the exit
};

// {content: [{type: text, text}], isError}.
nlohmann::json textResult(bool isError, const std::string& text);

// The answer to one message, or nullopt for a notification or a response. tools/call is
// answered here too (synchronously): serveMcp() moves it to a thread.
std::optional<nlohmann::json> mcpAnswer(const nlohmann::json& message, const McpServerSpec& spec);

// Answers requests read from `reader` on `fd` until it closes, then _exits (calls still
// running have nobody to answer).
[[noreturn]] void serveMcp(int fd, LineReader& reader, const McpServerSpec& spec, int maxCalls);

}  // namespace pine::web
