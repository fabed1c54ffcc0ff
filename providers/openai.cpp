#include "providers/openai.h"

#include <map>

#include "providers/http_errors.h"
#include "providers/stream_decoder.h"

namespace pine::model {

using nlohmann::json;
using detail::countAt;
using detail::member;
using detail::stringAt;

namespace {

json toolJson(const ToolSpec& t) {
  json params = t.parameters.is_null() ? json{{"type", "object"}, {"properties", json::object()}} : t.parameters;
  return {{"type", "function"},
          {"function", {{"name", t.name}, {"description", t.description}, {"parameters", std::move(params)}}}};
}

json messageJson(const Message& m) {
  switch (m.role) {
    case Message::Role::User:
      return {{"role", "user"}, {"content", m.text}};
    case Message::Role::Assistant: {
      json j{{"role", "assistant"}};
      // content may be null only beside tool calls.
      j["content"] = m.text.empty() && !m.toolCalls.empty() ? json(nullptr) : json(m.text);
      if (!m.toolCalls.empty()) {
        json calls = json::array();
        for (const auto& c : m.toolCalls)
          calls.push_back({{"id", c.id},
                           {"type", "function"},
                           {"function", {{"name", c.name}, {"arguments", c.arguments.empty() ? "{}" : c.arguments}}}});
        j["tool_calls"] = std::move(calls);
      }
      return j;
    }
    case Message::Role::Tool:
      // The format has no error flag: the model learns it from the text.
      return {{"role", "tool"}, {"tool_call_id", m.toolCallId}, {"content", m.isError ? "error: " + m.text : m.text}};
  }
  return {};
}

std::string stopWord(const std::string& finish, bool hasToolCalls) {
  // Some servers (older Ollama) say "stop" although the turn calls tools.
  if (hasToolCalls && (finish.empty() || finish == "stop")) return kStopToolUse;
  if (finish == "stop" || finish.empty()) return kStopEnd;
  if (finish == "tool_calls" || finish == "function_call") return kStopToolUse;
  if (finish == "length") return kStopMaxTokens;
  return finish;
}

// `where` names the object in errors: "usage" or "choices[].usage".
void readOpenAIUsage(const json& u, Usage& usage, const std::string& where) {
  const long long prompt = countAt(u, "prompt_tokens", where + ".prompt_tokens");
  long long cached = 0;
  if (const auto* d = member(u, "prompt_tokens_details"))
    cached = countAt(*d, "cached_tokens", where + ".prompt_tokens_details.cached_tokens");
  if (cached == 0) cached = countAt(u, "prompt_cache_hit_tokens", where + ".prompt_cache_hit_tokens");  // DeepSeek
  usage.cacheRead = cached;
  // Both are in 0..kMaxCount, so the difference cannot overflow; more cached than
  // prompt tokens is the server's inconsistency, and the uncached part is then none.
  usage.input = std::max(0LL, prompt - cached);
  usage.output = countAt(u, "completion_tokens", where + ".completion_tokens");
}

// The message text: a string, or (rarely) an array of {type:"text", text} parts.
std::string contentText(const json& c) {
  if (c.is_string()) return c.get<std::string>();
  std::string out;
  if (c.is_array())
    for (const auto& part : c) out += stringAt(part, "text");
  return out;
}

std::string argumentsText(const json& a) {
  if (a.is_string()) return a.get<std::string>();
  if (a.is_null()) return {};
  return a.dump();  // some servers send the arguments as an object
}

int errorStatus(const json& e) {
  // A numeric code is an HTTP status only when it looks like one.
  if (const auto* c = member(e, "code"); c && c->is_number_integer() && *c >= 100 && *c <= 599) return c->get<int>();
  std::string kind = stringAt(e, "type") + " " + stringAt(e, "code");
  if (kind.find("rate_limit") != std::string::npos) return 429;
  if (kind.find("server_error") != std::string::npos) return 500;
  if (kind.find("overloaded") != std::string::npos) return 529;
  return 0;
}

class OpenAIDecoder final : public detail::EventStreamDecoder {
 public:
  OpenAIDecoder() : EventStreamDecoder("OpenAI-compatible") {}

 protected:
  void onEvent(std::string_view event, std::string_view data) override {
    if (data == "[DONE]") {
      done_ = true;
      return;
    }
    auto j = parse(data);
    if (!j) return;
    // vLLM's older servers send {"object":"error", "message", "code"} instead of {"error": {...}}.
    if (event == "error" || member(*j, "error") || stringAt(*j, "object") == "error") {
      streamError(*j);
      return;
    }
    if (const auto* u = member(*j, "usage"); u && u->is_object()) readOpenAIUsage(*u, turn_.usage, "usage");
    const auto* choices = member(*j, "choices");
    if (!choices || !choices->is_array()) return;
    for (const auto& c : *choices) {
      if (countAt(c, "index", "choices[].index") != 0) continue;  // we never ask for n > 1
      if (const auto* d = member(c, "delta")) delta(*d);
      std::string f = stringAt(c, "finish_reason");
      if (!f.empty()) finish_ = f;
      if (const auto* u = member(c, "usage"); u && u->is_object()) readOpenAIUsage(*u, turn_.usage, "choices[].usage");
    }
  }

  void onWhole(const json& j) override {
    if (member(j, "error") || stringAt(j, "object") == "error") {
      streamError(j);
      return;
    }
    const auto* choices = member(j, "choices");
    if (!choices || !choices->is_array() || choices->empty()) {
      malformed("the JSON answer has no choices");
      return;
    }
    // The choice with index 0, as in a stream (we never ask for n > 1).
    const json* first = nullptr;
    for (const auto& choice : *choices)
      if (countAt(choice, "index", "choices[].index") == 0 && !first) first = &choice;
    if (!first) {
      malformed("the JSON answer has no choice with index 0");
      return;
    }
    const json& c = *first;
    if (const auto* m = member(c, "message")) {
      if (const auto* content = member(*m, "content")) addText(contentText(*content));
      for (const char* k : {"reasoning_content", "reasoning"}) turn_.reasoning += stringAt(*m, k);
      if (const auto* calls = member(*m, "tool_calls"); calls && calls->is_array()) {
        for (const auto& tc : *calls) {
          const json* fn = member(tc, "function");
          const json* args = fn ? member(*fn, "arguments") : nullptr;
          partials_.push_back({stringAt(tc, "id"), fn ? stringAt(*fn, "name") : "", args ? argumentsText(*args) : ""});
        }
      }
    }
    finish_ = stringAt(c, "finish_reason");
    if (const auto* u = member(j, "usage"); u && u->is_object()) readOpenAIUsage(*u, turn_.usage, "usage");
    complete();
  }

  void onEnd() override {
    if (!done_ && finish_.empty()) {
      truncated("the stream ended without a finish_reason or [DONE] (after " + std::to_string(events()) + " events)");
      return;
    }
    complete();
  }

 private:
  struct Partial {
    std::string id, name, arguments;
  };

  void delta(const json& d) {
    if (const auto* c = member(d, "content")) addText(contentText(*c));
    for (const char* k : {"reasoning_content", "reasoning"}) turn_.reasoning += stringAt(d, k);
    const auto* calls = member(d, "tool_calls");
    if (!calls || !calls->is_array()) return;
    for (const auto& tc : *calls) {
      std::string id = stringAt(tc, "id");
      Partial* p = nullptr;
      if (member(tc, "index")) {
        const long long ix = countAt(tc, "index", "delta.tool_calls[].index");
        auto it = byIndex_.find(ix);
        if (it == byIndex_.end()) {
          partials_.emplace_back();
          it = byIndex_.emplace(ix, partials_.size() - 1).first;
        }
        p = &partials_[it->second];
      } else {
        // No index (some servers): a new id starts a new call, pieces without one continue the last.
        if (partials_.empty() || (!id.empty() && !partials_.back().id.empty() && partials_.back().id != id))
          partials_.emplace_back();
        p = &partials_.back();
      }
      if (p->id.empty()) p->id = id;
      if (const auto* fn = member(tc, "function")) {
        std::string name = stringAt(*fn, "name");
        if (p->name.empty()) p->name = name;
        if (const auto* a = member(*fn, "arguments")) p->arguments += argumentsText(*a);
      }
    }
  }

  void streamError(const json& j) {
    const json* e = member(j, "error");
    int status = errorStatus(e && e->is_object() ? *e : j);
    fail(detail::eventError("the provider", status, detail::providerMessage(j)));
  }

  void complete() {
    int n = 0;
    for (auto& p : partials_) {
      ++n;
      if (p.name.empty()) {
        malformed("tool call " + std::to_string(n) + " has no function name");
        return;
      }
      if (p.id.empty()) p.id = "call_" + std::to_string(n);  // the next request pairs results by id
      if (p.arguments.empty()) p.arguments = "{}";
      turn_.toolCalls.push_back({p.id, p.name, p.arguments});
    }
    turn_.stopReason = stopWord(finish_, !turn_.toolCalls.empty());
  }

  bool done_ = false;
  std::string finish_;
  std::vector<Partial> partials_;
  std::map<long long, std::size_t> byIndex_;
};

}  // namespace

HttpCall OpenAIProvider::buildCall(const ModelRequest& r) const {
  json messages = json::array();
  if (!r.system.empty()) messages.push_back({{"role", "system"}, {"content", r.system}});
  for (const auto& m : r.messages) messages.push_back(messageJson(m));
  json body{{"model", r.model}, {"messages", std::move(messages)}};
  body[options_.maxCompletionTokens ? "max_completion_tokens" : "max_tokens"] = r.maxTokens;
  if (!r.tools.empty()) {
    json tools = json::array();
    for (const auto& t : r.tools) tools.push_back(toolJson(t));
    body["tools"] = std::move(tools);
  }
  body["stream"] = r.stream;
  if (r.stream) body["stream_options"] = {{"include_usage", true}};
  HttpCall call;
  call.path = "/chat/completions";
  call.headers = {{"Content-Type", "application/json"},
                  {"Accept", r.stream ? "text/event-stream" : "application/json"}};
  call.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return call;
}

std::unique_ptr<StreamDecoder> OpenAIProvider::decoder() const { return std::make_unique<OpenAIDecoder>(); }

ProviderError OpenAIProvider::errorFor(int status, const Headers& headers, std::string_view body) const {
  return detail::statusError("the provider", status, headers, body);
}

}  // namespace pine::model
