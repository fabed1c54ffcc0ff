// The Anthropic Messages format: the request built field by field, and answers from a
// fake server through egress into the decoder.
#include <doctest/doctest.h>

#include "tests/providers/support.h"
#include "providers/anthropic.h"

using namespace pine::model;
using namespace pine::model::test;
using nlohmann::json;

namespace {

std::string ev(const json& data) { return "event: " + data["type"].get<std::string>() + "\ndata: " + data.dump() + "\n\n"; }

std::string delta(int index, const json& d) { return ev({{"type", "content_block_delta"}, {"index", index}, {"delta", d}}); }

std::string messageStart() {
  return ev({{"type", "message_start"},
             {"message", {{"id", "msg_1"}, {"type", "message"}, {"role", "assistant"}, {"model", "claude-sonnet-4-5"},
                          {"content", json::array()}, {"stop_reason", nullptr},
                          {"usage", {{"input_tokens", 25}, {"cache_creation_input_tokens", 1500},
                                     {"cache_read_input_tokens", 3000}, {"output_tokens", 1}}}}}});
}

// Text with multi-byte characters, a ping, then two tool_use blocks with streamed input.
std::string recordedAnthropicTurn() {
  return messageStart() +
         ev({{"type", "content_block_start"}, {"index", 0}, {"content_block", {{"type", "text"}, {"text", ""}}}}) +
         "event: ping\ndata: {\"type\": \"ping\"}\n\n" +
         delta(0, {{"type", "text_delta"}, {"text", "Je vais lire "}}) +
         delta(0, {{"type", "text_delta"}, {"text", "les fichiers — café ☕."}}) +
         ev({{"type", "content_block_stop"}, {"index", 0}}) +
         ev({{"type", "content_block_start"}, {"index", 1},
             {"content_block", {{"type", "tool_use"}, {"id", "toolu_A"}, {"name", "read"}, {"input", json::object()}}}}) +
         delta(1, {{"type", "input_json_delta"}, {"partial_json", ""}}) +
         delta(1, {{"type", "input_json_delta"}, {"partial_json", "{\"path\": \"notes/"}}) +
         delta(1, {{"type", "input_json_delta"}, {"partial_json", "été.txt\"}"}}) +
         ev({{"type", "content_block_stop"}, {"index", 1}}) +
         ev({{"type", "content_block_start"}, {"index", 2},
             {"content_block", {{"type", "tool_use"}, {"id", "toolu_B"}, {"name", "ls"}, {"input", json::object()}}}}) +
         delta(2, {{"type", "input_json_delta"}, {"partial_json", "{\"path\": \".\"}"}}) +
         ev({{"type", "content_block_stop"}, {"index", 2}}) +
         ev({{"type", "message_delta"}, {"delta", {{"stop_reason", "tool_use"}, {"stop_sequence", nullptr}}},
             {"usage", {{"output_tokens", 89}}}}) +
         ev({{"type", "message_stop"}});
}

Turn expectedAnthropicTurn() {
  Turn t;
  t.text = "Je vais lire les fichiers — café ☕.";
  t.toolCalls = {{"toolu_A", "read", "{\"path\": \"notes/été.txt\"}"}, {"toolu_B", "ls", "{\"path\": \".\"}"}};
  t.usage = {25, 89, 3000, 1500};
  t.stopReason = kStopToolUse;
  return t;
}

ModelRequest fullAnthropicRequest() {
  ModelRequest r;
  r.model = "claude-sonnet-4-5";
  r.system = "You are pine.";
  r.maxTokens = 2048;
  r.messages = {
      {Message::Role::User, "Read my notes", {}, "", "", false},
      {Message::Role::Assistant, "Reading.", {{"toolu_1", "read", "{\"path\":\"a.txt\"}"}, {"toolu_2", "ls", "not json"}}, "", "", false},
      {Message::Role::Tool, "no such file", {}, "toolu_1", "read", true},
      {Message::Role::Tool, "a.txt b.txt", {}, "toolu_2", "ls", false},
      {Message::Role::User, "And now?", {}, "", "", false},
  };
  r.tools = {{"read", "Read a file", json{{"type", "object"}, {"properties", {{"path", {{"type", "string"}}}}}}},
             {"now", "The time", nullptr}};
  return r;
}

}  // namespace

TEST_CASE("anthropic: the request is built as the Messages API expects") {
  const HttpCall call = AnthropicProvider().buildCall(fullAnthropicRequest());
  CHECK(call.method == "POST");
  CHECK(call.path == "/v1/messages");
  CHECK(call.headers == Headers{{"Content-Type", "application/json"}, {"anthropic-version", "2023-06-01"},
                                {"Accept", "text/event-stream"}});
  const json b = json::parse(call.body);
  CHECK(b["model"] == "claude-sonnet-4-5");
  CHECK(b["max_tokens"] == 2048);
  CHECK(b["system"] == "You are pine.");
  CHECK(b["stream"] == true);
  const json& m = b["messages"];
  REQUIRE(m.size() == 3);  // the tool results and the next user words are one user turn
  CHECK(m[0] == json{{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", "Read my notes"}}})}});
  CHECK(m[1]["role"] == "assistant");
  REQUIRE(m[1]["content"].size() == 3);
  CHECK(m[1]["content"][0] == json{{"type", "text"}, {"text", "Reading."}});
  CHECK(m[1]["content"][1] == json{{"type", "tool_use"}, {"id", "toolu_1"}, {"name", "read"}, {"input", {{"path", "a.txt"}}}});
  CHECK(m[1]["content"][2]["input"] == json::object());  // arguments that are not JSON go back as {}
  CHECK(m[2]["role"] == "user");
  REQUIRE(m[2]["content"].size() == 3);
  CHECK(m[2]["content"][0] == json{{"type", "tool_result"}, {"tool_use_id", "toolu_1"}, {"content", "no such file"}, {"is_error", true}});
  CHECK(m[2]["content"][1] == json{{"type", "tool_result"}, {"tool_use_id", "toolu_2"}, {"content", "a.txt b.txt"}});
  CHECK(m[2]["content"][2] == json{{"type", "text"}, {"text", "And now?"}});
  REQUIRE(b["tools"].size() == 2);
  CHECK(b["tools"][0] == json{{"name", "read"}, {"description", "Read a file"},
                              {"input_schema", {{"type", "object"}, {"properties", {{"path", {{"type", "string"}}}}}}}});
  CHECK(b["tools"][1]["input_schema"] == json{{"type", "object"}, {"properties", json::object()}});

  // No system prompt: no system field; an empty user message still has a block.
  ModelRequest r;
  r.model = "m";
  r.messages = {{Message::Role::User, "  ", {}, "", "", false}};
  r.stream = false;
  const json p = json::parse(AnthropicProvider().buildCall(r).body);
  CHECK_FALSE(p.contains("system"));
  CHECK_FALSE(p.contains("tools"));
  CHECK(p["stream"] == false);
  CHECK(p["messages"][0]["content"][0]["text"] == "(empty message)");

  pine::config::Provider cfg;
  cfg.kind = pine::config::ProviderKind::Anthropic;
  cfg.keySecret = "ANTHROPIC_KEY";
  CHECK(keyHeaders(cfg) == Headers{{"x-api-key", "${secret:ANTHROPIC_KEY}"}});
  CHECK(makeProvider(cfg)->buildCall(r).path == "/v1/messages");
  CHECK(makeProvider(pine::config::ProviderKind::Anthropic)->buildCall(r).path == "/v1/messages");
}

TEST_CASE("anthropic: a full turn with text, two tool calls and cache usage, through egress, split awkwardly") {
  const std::string body = recordedAnthropicTurn();
  const std::size_t inCup = body.find("☕") + 1, inArgs = body.find("notes/") - 4, inE = body.find("été") + 1;
  REQUIRE(inCup < inArgs);
  REQUIRE(inArgs < inE);
  FakeServer server;
  server.enqueue({200, {{"Content-Type", "text/event-stream"}}, splitAt(body, {3, inCup, inArgs, inE}), true, false});
  pine::config::Provider cfg;
  cfg.kind = pine::config::ProviderKind::Anthropic;
  cfg.keySecret = "TEST_KEY";
  const Outcome out = roundTrip(server, AnthropicProvider(), fullAnthropicRequest(), keyHeaders(cfg));
  REQUIRE_MESSAGE(!out.error, out.error->what());
  REQUIRE(out.turn);
  CHECK_MESSAGE(sameTurn(*out.turn, expectedAnthropicTurn()), describe(*out.turn));
  const auto reqs = server.requests();
  REQUIRE(reqs.size() == 1);
  CHECK(reqs[0].head.find("POST /v1/messages HTTP/1.1") == 0);
  CHECK(reqs[0].head.find("x-api-key: " + kTestKey) != std::string::npos);
  CHECK(reqs[0].head.find("anthropic-version: 2023-06-01") != std::string::npos);
}

TEST_CASE("anthropic: every split position decodes to the same turn") {
  for (const auto& f : checkEverySplit(AnthropicProvider(), recordedAnthropicTurn(), expectedAnthropicTurn())) FAIL_CHECK(f);
}

TEST_CASE("anthropic: a tool call whose input came whole, thinking, and a plain end") {
  const std::string body =
      messageStart() +
      ev({{"type", "content_block_start"}, {"index", 0}, {"content_block", {{"type", "thinking"}, {"thinking", ""}}}}) +
      delta(0, {{"type", "thinking_delta"}, {"thinking", "Let me see."}}) +
      delta(0, {{"type", "signature_delta"}, {"signature", "abc"}}) +
      ev({{"type", "content_block_start"}, {"index", 1},
          {"content_block", {{"type", "tool_use"}, {"id", "t1"}, {"name", "now"}, {"input", {{"tz", "UTC"}}}}}}) +
      ev({{"type", "message_delta"}, {"delta", {{"stop_reason", "end_turn"}}}, {"usage", {{"output_tokens", 3}}}}) +
      ev({{"type", "message_stop"}});
  Turn t = decodePieces(AnthropicProvider(), {body});
  CHECK(t.reasoning == "Let me see.");
  CHECK(t.text.empty());
  REQUIRE(t.toolCalls.size() == 1);
  CHECK(t.toolCalls[0].arguments == "{\"tz\":\"UTC\"}");
  CHECK(t.stopReason == kStopEnd);
  CHECK(t.usage.output == 3);
}

TEST_CASE("anthropic: a non-streaming answer decodes too") {
  json body{{"id", "msg_1"}, {"type", "message"}, {"role", "assistant"},
            {"content", json::array({{{"type", "text"}, {"text", "Voilà."}},
                                     {{"type", "tool_use"}, {"id", "t9"}, {"name", "read"}, {"input", {{"path", "x"}}}}})},
            {"stop_reason", "tool_use"},
            {"usage", {{"input_tokens", 12}, {"output_tokens", 5}, {"cache_read_input_tokens", 100}}}};
  FakeServer server;
  server.enqueue({200, {{"Content-Type", "application/json"}}, {body.dump()}, false, false});
  const Outcome out = roundTrip(server, AnthropicProvider(), fullAnthropicRequest());
  REQUIRE_MESSAGE(out.turn, (out.error ? out.error->what() : "no turn"));
  CHECK(out.turn->text == "Voilà.");
  REQUIRE(out.turn->toolCalls.size() == 1);
  CHECK(out.turn->toolCalls[0].arguments == "{\"path\":\"x\"}");
  CHECK(out.turn->usage.input == 12);
  CHECK(out.turn->usage.cacheRead == 100);
  CHECK(out.turn->stopReason == kStopToolUse);
}

TEST_CASE("anthropic: HTTP errors are clear, with the provider's message") {
  FakeServer server;
  server.enqueue({401, {{"Content-Type", "application/json"}},
                  {"{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}"}, true, false});
  server.enqueue({429, {{"Content-Type", "application/json"}, {"retry-after", "7"}},
                  {"{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Number of request tokens has exceeded your per-minute rate limit\"}}"}, true, false});
  server.enqueue({500, {{"Content-Type", "application/json"}},
                  {"{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal server error\"}}"}, true, false});
  Outcome out = roundTrip(server, AnthropicProvider(), fullAnthropicRequest());
  REQUIRE(out.error);
  CHECK(out.error->status == 401);
  CHECK(std::string(out.error->what()).find("invalid x-api-key") != std::string::npos);
  out = roundTrip(server, AnthropicProvider(), fullAnthropicRequest());
  REQUIRE(out.error);
  CHECK(out.error->rateLimited);
  CHECK(out.error->retryAfterSec == 7);
  CHECK(std::string(out.error->what()).find("rate limited by the provider (429), retry after 7 s: Number of request tokens") == 0);
  out = roundTrip(server, AnthropicProvider(), fullAnthropicRequest());
  REQUIRE(out.error);
  CHECK(out.error->status == 500);
  CHECK(out.error->retryable);
  CHECK(std::string(out.error->what()).find("Internal server error") != std::string::npos);
}

TEST_CASE("anthropic: an error event mid-stream fails the turn") {
  const std::string head = messageStart() +
                           ev({{"type", "content_block_start"}, {"index", 0}, {"content_block", {{"type", "text"}, {"text", ""}}}}) +
                           delta(0, {{"type", "text_delta"}, {"text", "Half"}});
  const std::string body =
      head + "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n";
  FakeServer server;
  server.enqueue({200, {{"Content-Type", "text/event-stream"}}, {body}, true, false});
  const Outcome out = roundTrip(server, AnthropicProvider(), fullAnthropicRequest());
  CHECK_FALSE(out.turn);
  REQUIRE(out.error);
  CHECK(out.error->kind == ProviderError::Kind::ErrorEvent);
  CHECK(out.error->status == 529);
  CHECK(out.error->retryable);
  CHECK(std::string(out.error->what()) == "the provider is overloaded (in the stream): Overloaded");
  // The same start, properly ended, is an answer.
  Turn t = decodePieces(AnthropicProvider(), {head + ev({{"type", "message_stop"}})});
  CHECK(t.text == "Half");
}

TEST_CASE("anthropic: a stream cut before message_stop is an error, not half an answer") {
  const std::string body = recordedAnthropicTurn();
  for (const std::string& cut : {body.substr(0, body.find("message_delta") - 7),         // at an event boundary
                                 body.substr(0, body.find("été") + 1),                    // inside a character
                                 body.substr(0, body.rfind("message_stop") - 7)}) {       // only message_stop missing
    FakeServer server;
    server.enqueue({200, {{"Content-Type", "text/event-stream"}}, {cut}, false, false});
    const Outcome out = roundTrip(server, AnthropicProvider(), fullAnthropicRequest());
    CHECK_FALSE(out.turn);
    REQUIRE(out.error);
    CHECK(out.error->kind == ProviderError::Kind::Truncated);
  }
}

TEST_CASE("anthropic: malformed JSON is an error") {
  auto kindOf = [](const std::string& body) {
    try {
      decodePieces(AnthropicProvider(), {body});
    } catch (const ProviderError& e) {
      return e.kind;
    }
    FAIL("no error");
    return ProviderError::Kind::Status;
  };
  CHECK(kindOf(messageStart() + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,}\n\n" +
               ev({{"type", "message_stop"}})) == ProviderError::Kind::Malformed);
  CHECK(kindOf(messageStart() + delta(5, {{"type", "input_json_delta"}, {"partial_json", "{"}}) +
               ev({{"type", "message_stop"}})) == ProviderError::Kind::Malformed);
  CHECK(kindOf("{\"type\":\"message\"}") == ProviderError::Kind::Malformed);
  CHECK(kindOf("{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"bad\"}}") ==
        ProviderError::Kind::ErrorEvent);
}
