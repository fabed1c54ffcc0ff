#include "providers/anthropic.h"

#include <map>

#include "providers/http_errors.h"
#include "providers/stream_decoder.h"

namespace pine::model {

using nlohmann::json;
using detail::countAt;
using detail::member;
using detail::stringAt;

namespace {

// Anthropic refuses empty and white-space-only text blocks.
bool blank(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

json toolUseInput(const std::string& arguments) {
  // `input` must be an object; arguments the model wrote badly go back as {} (the tool
  // result that follows already told the model what was wrong).
  auto j = json::parse(arguments.empty() ? "{}" : arguments, nullptr, false);
  return j.is_object() ? j : json::object();
}

json messagesJson(const std::vector<Message>& messages) {
  json out = json::array();
  for (const auto& m : messages) {
    const char* role = m.role == Message::Role::Assistant ? "assistant" : "user";
    json blocks = json::array();
    switch (m.role) {
      case Message::Role::User:
        if (!blank(m.text)) blocks.push_back({{"type", "text"}, {"text", m.text}});
        break;
      case Message::Role::Assistant:
        if (!blank(m.text)) blocks.push_back({{"type", "text"}, {"text", m.text}});
        for (const auto& c : m.toolCalls)
          blocks.push_back({{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", toolUseInput(c.arguments)}});
        break;
      case Message::Role::Tool: {
        json r{{"type", "tool_result"}, {"tool_use_id", m.toolCallId}, {"content", m.text}};
        if (m.isError) r["is_error"] = true;
        blocks.push_back(std::move(r));
        break;
      }
    }
    // Tool results and the user's next words are one user turn; consecutive roles merge.
    if (!out.empty() && out.back()["role"] == role) {
      for (auto& b : blocks) out.back()["content"].push_back(std::move(b));
    } else {
      out.push_back({{"role", role}, {"content", std::move(blocks)}});
    }
  }
  for (auto& m : out)
    if (m["content"].empty()) m["content"].push_back({{"type", "text"}, {"text", "(empty message)"}});
  return out;
}

// The status an error type stands for (the `error` event and error bodies carry no status).
int statusOf(const std::string& type) {
  static const std::map<std::string, int> kinds{
      {"invalid_request_error", 400}, {"authentication_error", 401}, {"permission_error", 403},
      {"not_found_error", 404},       {"request_too_large", 413},    {"rate_limit_error", 429},
      {"api_error", 500},             {"overloaded_error", 529}};
  auto it = kinds.find(type);
  return it == kinds.end() ? 0 : it->second;
}

void readAnthropicUsage(const json& u, Usage& usage) {
  // message_start carries the prompt side; message_delta the output (cumulative), and
  // newer servers repeat the prompt side there too.
  // An absent count keeps what an earlier event said.
  usage.input = countAt(u, "input_tokens", "usage.input_tokens", usage.input);
  usage.cacheRead = countAt(u, "cache_read_input_tokens", "usage.cache_read_input_tokens", usage.cacheRead);
  usage.cacheWrite = countAt(u, "cache_creation_input_tokens", "usage.cache_creation_input_tokens", usage.cacheWrite);
  usage.output = countAt(u, "output_tokens", "usage.output_tokens", usage.output);
}

class AnthropicDecoder final : public detail::EventStreamDecoder {
 public:
  AnthropicDecoder() : EventStreamDecoder("Anthropic") {}

 protected:
  void onEvent(std::string_view event, std::string_view data) override {
    auto parsed = parse(data);
    if (!parsed) return;
    const json& j = *parsed;
    std::string type = stringAt(j, "type");
    if (type.empty()) type = event;
    if (type == "message_start") {
      started_ = true;
      if (const auto* m = member(j, "message"))
        if (const auto* u = member(*m, "usage")) readAnthropicUsage(*u, turn_.usage);
    } else if (type == "content_block_start") {
      const auto* cb = member(j, "content_block");
      if (!cb) return malformed("content_block_start without a content_block");
      Block& b = blocks_[countAt(j, "index", "content_block_start.index")];
      b.type = stringAt(*cb, "type");
      if (b.type == "text") {
        addText(stringAt(*cb, "text"));
      } else if (b.type == "tool_use") {
        b.id = stringAt(*cb, "id");
        b.name = stringAt(*cb, "name");
        if (const auto* in = member(*cb, "input"); in && !in->empty()) b.initial = in->dump();
      } else if (b.type == "thinking") {
        turn_.reasoning += stringAt(*cb, "thinking");
      }
    } else if (type == "content_block_delta") {
      const auto* d = member(j, "delta");
      if (!d) return malformed("content_block_delta without a delta");
      std::string dt = stringAt(*d, "type");
      if (dt == "text_delta") {
        addText(stringAt(*d, "text"));
      } else if (dt == "input_json_delta") {
        auto it = blocks_.find(countAt(j, "index", "content_block_delta.index"));
        if (it == blocks_.end()) return malformed("input_json_delta for a block that never started");
        it->second.partial += stringAt(*d, "partial_json");
      } else if (dt == "thinking_delta") {
        turn_.reasoning += stringAt(*d, "thinking");
      }
    } else if (type == "message_delta") {
      if (const auto* d = member(j, "delta")) {
        std::string s = stringAt(*d, "stop_reason");
        if (!s.empty()) stop_ = s;
      }
      if (const auto* u = member(j, "usage")) readAnthropicUsage(*u, turn_.usage);
    } else if (type == "message_stop") {
      done_ = true;
    } else if (type == "error") {
      streamError(j);
    }
    // ping, content_block_stop and event types added later mean nothing here.
  }

  void onWhole(const json& j) override {
    std::string type = stringAt(j, "type");
    if (type == "error" || member(j, "error")) return streamError(j);
    const auto* content = member(j, "content");
    if (!content || !content->is_array()) return malformed("the JSON answer has no content");
    long long i = 0;
    for (const auto& cb : *content) {
      std::string t = stringAt(cb, "type");
      if (t == "text") addText(stringAt(cb, "text"));
      if (t == "thinking") turn_.reasoning += stringAt(cb, "thinking");
      if (t == "tool_use") {
        Block& b = blocks_[i];
        b.type = t;
        b.id = stringAt(cb, "id");
        b.name = stringAt(cb, "name");
        if (const auto* in = member(cb, "input")) b.initial = in->dump();
      }
      ++i;
    }
    stop_ = stringAt(j, "stop_reason");
    if (const auto* u = member(j, "usage")) readAnthropicUsage(*u, turn_.usage);
    complete();
  }

  void onEnd() override {
    if (!done_) {
      truncated(started_ ? "the stream ended before message_stop (after " + std::to_string(events()) + " events)"
                         : "the stream ended before message_start");
      return;
    }
    complete();
  }

 private:
  struct Block {
    std::string type, id, name, initial, partial;
  };

  void streamError(const json& j) {
    const json* e = member(j, "error");
    int status = e ? statusOf(stringAt(*e, "type")) : 0;
    fail(detail::eventError("the provider", status, detail::providerMessage(j)));
  }

  void complete() {
    for (auto& [index, b] : blocks_) {
      if (b.type != "tool_use") continue;  // server tools run at Anthropic; their results are text
      if (b.name.empty()) return malformed("tool_use block " + std::to_string(index) + " has no name");
      // The next request pairs the result with the call by id, so a call always has one.
      if (b.id.empty()) b.id = "toolu_" + std::to_string(index);
      std::string args = !b.partial.empty() ? b.partial : !b.initial.empty() ? b.initial : "{}";
      turn_.toolCalls.push_back({b.id, b.name, std::move(args)});
    }
    turn_.stopReason = stop_.empty() ? (turn_.toolCalls.empty() ? kStopEnd : kStopToolUse) : stop_;
  }

  bool started_ = false, done_ = false;
  std::string stop_;
  std::map<long long, Block> blocks_;
};

}  // namespace

HttpCall AnthropicProvider::buildCall(const ModelRequest& r) const {
  json body{{"model", r.model}, {"max_tokens", r.maxTokens}};
  if (!r.system.empty()) body["system"] = r.system;
  body["messages"] = messagesJson(r.messages);
  if (!r.tools.empty()) {
    json tools = json::array();
    for (const auto& t : r.tools) {
      json schema = t.parameters.is_null() ? json{{"type", "object"}, {"properties", json::object()}} : t.parameters;
      tools.push_back({{"name", t.name}, {"description", t.description}, {"input_schema", std::move(schema)}});
    }
    body["tools"] = std::move(tools);
  }
  body["stream"] = r.stream;
  HttpCall call;
  call.path = "/v1/messages";
  call.headers = {{"Content-Type", "application/json"},
                  {"anthropic-version", "2023-06-01"},
                  {"Accept", r.stream ? "text/event-stream" : "application/json"}};
  call.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return call;
}

std::unique_ptr<StreamDecoder> AnthropicProvider::decoder() const { return std::make_unique<AnthropicDecoder>(); }

ProviderError AnthropicProvider::errorFor(int status, const Headers& headers, std::string_view body) const {
  return detail::statusError("the provider", status, headers, body);
}

}  // namespace pine::model
