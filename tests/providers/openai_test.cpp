// The OpenAI-compatible format: the request built field by field, and answers from a
// fake server through egress into the decoder, including the servers' differences.
#include <doctest/doctest.h>

#include "tests/providers/support.h"
#include "providers/openai.h"

using namespace pine::model;
using namespace pine::model::test;
using nlohmann::json;

namespace {

std::string chunk(const json& delta, const char* finish = nullptr) {
  json c{{"id", "chatcmpl-1"}, {"object", "chat.completion.chunk"}, {"created", 1}, {"model", "m"},
         {"choices", json::array({{{"index", 0}, {"delta", delta}, {"finish_reason", finish ? json(finish) : json(nullptr)}}})}};
  return "data: " + c.dump() + "\n\n";
}

std::string callPiece(int index, const char* id, const char* name, const std::string& args) {
  json tc{{"index", index}, {"function", {{"arguments", args}}}};
  if (id) {
    tc["id"] = id;
    tc["type"] = "function";
    tc["function"]["name"] = name;
  }
  return chunk({{"tool_calls", json::array({tc})}});
}

// Text with multi-byte characters, then two parallel calls whose pieces interleave.
std::string recordedTurn() {
  return chunk({{"role", "assistant"}, {"content", ""}}) + chunk({{"content", "Je vais lire "}}) +
         chunk({{"content", "les fichiers — café ☕."}}) + callPiece(0, "call_A", "read", "") +
         callPiece(0, nullptr, nullptr, "{\"path\":") + callPiece(1, "call_B", "ls", "") +
         callPiece(0, nullptr, nullptr, "\"notes/été.txt\"}") + callPiece(1, nullptr, nullptr, "{\"path\":\".\"}") +
         chunk(json::object(), "tool_calls") +
         "data: {\"id\":\"chatcmpl-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":1200,\"completion_tokens\":45,"
         "\"total_tokens\":1245,\"prompt_tokens_details\":{\"cached_tokens\":1024}}}\n\n"
         "data: [DONE]\n\n";
}

Turn expectedTurn() {
  Turn t;
  t.text = "Je vais lire les fichiers — café ☕.";
  t.toolCalls = {{"call_A", "read", "{\"path\":\"notes/été.txt\"}"}, {"call_B", "ls", "{\"path\":\".\"}"}};
  t.usage = {176, 45, 1024, 0};
  t.stopReason = kStopToolUse;
  return t;
}

ModelRequest fullRequest() {
  ModelRequest r;
  r.model = "gpt-4.1-mini";
  r.system = "You are pine.";
  r.maxTokens = 1000;
  Message user{Message::Role::User, "Read my notes", {}, "", "", false};
  Message asst{Message::Role::Assistant, "", {{"call_1", "read", "{\"path\":\"a.txt\"}"}}, "", "", false};
  Message result{Message::Role::Tool, "no such file", {}, "call_1", "read", true};
  Message asst2{Message::Role::Assistant, "It is missing.", {}, "", "", false};
  r.messages = {user, asst, result, asst2};
  r.tools = {{"read", "Read a file", json{{"type", "object"}, {"properties", {{"path", {{"type", "string"}}}}}}},
             {"now", "The time", nullptr}};
  return r;
}

}  // namespace

TEST_CASE("openai: the request is built as chat completions expects") {
  const HttpCall call = OpenAIProvider().buildCall(fullRequest());
  CHECK(call.method == "POST");
  CHECK(call.path == "/chat/completions");
  CHECK(call.headers == Headers{{"Content-Type", "application/json"}, {"Accept", "text/event-stream"}});
  const json b = json::parse(call.body);
  CHECK(b["model"] == "gpt-4.1-mini");
  CHECK(b["max_tokens"] == 1000);
  CHECK_FALSE(b.contains("max_completion_tokens"));
  CHECK(b["stream"] == true);
  CHECK(b["stream_options"] == json{{"include_usage", true}});
  const json& m = b["messages"];
  REQUIRE(m.size() == 5);
  CHECK(m[0] == json{{"role", "system"}, {"content", "You are pine."}});
  CHECK(m[1] == json{{"role", "user"}, {"content", "Read my notes"}});
  CHECK(m[2]["role"] == "assistant");
  CHECK(m[2]["content"].is_null());
  CHECK(m[2]["tool_calls"] == json::array({{{"id", "call_1"}, {"type", "function"},
                                            {"function", {{"name", "read"}, {"arguments", "{\"path\":\"a.txt\"}"}}}}}));
  CHECK(m[3] == json{{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "error: no such file"}});
  CHECK(m[4] == json{{"role", "assistant"}, {"content", "It is missing."}});
  REQUIRE(b["tools"].size() == 2);
  CHECK(b["tools"][0]["type"] == "function");
  CHECK(b["tools"][0]["function"]["name"] == "read");
  CHECK(b["tools"][0]["function"]["description"] == "Read a file");
  CHECK(b["tools"][0]["function"]["parameters"]["properties"]["path"]["type"] == "string");
  // A tool without a schema still gets a valid one.
  CHECK(b["tools"][1]["function"]["parameters"] == json{{"type", "object"}, {"properties", json::object()}});

  ModelRequest plain = fullRequest();
  plain.stream = false;
  plain.tools.clear();
  const json p = json::parse(OpenAIProvider({true}).buildCall(plain).body);
  CHECK(p["stream"] == false);
  CHECK_FALSE(p.contains("stream_options"));
  CHECK_FALSE(p.contains("tools"));
  CHECK(p["max_completion_tokens"] == 1000);
  CHECK_FALSE(p.contains("max_tokens"));
}

TEST_CASE("openai: makeProvider and keyHeaders") {
  pine::config::Provider cfg;
  cfg.kind = pine::config::ProviderKind::OpenAI;
  cfg.baseUrl = "https://api.openai.com/v1";
  cfg.keySecret = "OPENAI_KEY";
  CHECK(keyHeaders(cfg) == Headers{{"Authorization", "Bearer ${secret:OPENAI_KEY}"}});
  CHECK(json::parse(makeProvider(cfg)->buildCall(fullRequest()).body).contains("max_completion_tokens"));
  cfg.baseUrl = "http://127.0.0.1:8080/v1";  // llama.cpp and friends know max_tokens
  CHECK(json::parse(makeProvider(cfg)->buildCall(fullRequest()).body).contains("max_tokens"));
  cfg.keySecret.clear();
  CHECK(keyHeaders(cfg).empty());
  cfg.kind = pine::config::ProviderKind::Script;
  cfg.keySecret = "X";
  CHECK(keyHeaders(cfg).empty());
  CHECK(makeProvider(pine::config::ProviderKind::Script)->buildCall(fullRequest()).path == "/chat/completions");
  CHECK(makeProvider(pine::config::ProviderKind::OpenAI)->buildCall(fullRequest()).path == "/chat/completions");
}

TEST_CASE("openai: a full turn with text and two parallel tool calls, through egress, split awkwardly") {
  const std::string body = recordedTurn();
  // Awkward places: inside "é" of été (a two-byte character), inside the arguments' JSON, inside "☕".
  const std::size_t inE = body.find("été") + 1, inArgs = body.find("path", body.find("call_A")) + 2,
                    inCup = body.find("☕") + 2;
  REQUIRE(inCup < inArgs);
  REQUIRE(inArgs < inE);
  FakeServer server;
  server.enqueue({200, {{"Content-Type", "text/event-stream"}}, splitAt(body, {7, inCup, inArgs, inE}), true, false});
  pine::config::Provider cfg;
  cfg.kind = pine::config::ProviderKind::OpenAI;
  cfg.keySecret = "TEST_KEY";
  const Outcome out = roundTrip(server, OpenAIProvider(), fullRequest(), keyHeaders(cfg));
  REQUIRE_MESSAGE(!out.error, out.error->what());
  CHECK_FALSE(out.egressError);
  REQUIRE(out.turn);
  CHECK_MESSAGE(sameTurn(*out.turn, expectedTurn()), describe(*out.turn));
  for (const auto& p : out.textPieces) CHECK(validUtf8(p));
  // The key went out in the header egress filled in; the body is what buildCall made.
  const auto reqs = server.requests();
  REQUIRE(reqs.size() == 1);
  CHECK(reqs[0].head.find("POST /chat/completions HTTP/1.1") == 0);
  CHECK(reqs[0].head.find("Authorization: Bearer " + kTestKey) != std::string::npos);
  CHECK(reqs[0].body == OpenAIProvider().buildCall(fullRequest()).body);
}

TEST_CASE("openai: every split position decodes to the same turn") {
  const auto failures = checkEverySplit(OpenAIProvider(), recordedTurn(), expectedTurn());
  for (const auto& f : failures) FAIL_CHECK(f);
  // \r\n line endings decode the same.
  std::string crlf;
  for (char c : recordedTurn()) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  for (const auto& f : checkEverySplit(OpenAIProvider(), crlf, expectedTurn())) FAIL_CHECK(f);
  // An event's JSON over two data lines (joined with \n), with \r\n and lone \r endings.
  for (const char* eol : {"\r\n", "\r"}) {
    std::string multi;
    for (std::size_t pos = 0, end; (end = recordedTurn().find("\n\n", pos)) != std::string::npos; pos = end + 2) {
      std::string event = recordedTurn().substr(pos, end - pos);
      if (auto comma = event.find(','); comma != std::string::npos) event.replace(comma, 1, std::string(",") + eol + "data: ");
      multi += event + eol + eol;
    }
    for (const auto& f : checkEverySplit(OpenAIProvider(), multi, expectedTurn())) FAIL_CHECK(f);
  }
}

TEST_CASE("openai: servers' differences are tolerated") {
  // llama.cpp: usage in the last choice chunk, no [DONE] before close, keep-alive comments.
  std::string llama = ": keep-alive\n\n" + chunk({{"content", "Hi"}}) +
                      "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],"
                      "\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":2}}";  // not even a final newline
  Turn t = decodePieces(OpenAIProvider(), {llama});
  CHECK(t.text == "Hi");
  CHECK(t.stopReason == kStopEnd);
  CHECK(t.usage.input == 10);
  CHECK(t.usage.output == 2);
  // Ollama: no usage at all, reasoning beside the text, finish_reason "stop" with a tool call, no index.
  std::string ollama = chunk({{"reasoning_content", "thinking..."}}) + chunk({{"content", "ok"}}) +
                       chunk({{"tool_calls", json::array({{{"id", "c1"}, {"function", {{"name", "ls"}, {"arguments", {{"path", "."}}}}}}})}}) +
                       chunk(json::object(), "stop") + "data: [DONE]\n\n";
  t = decodePieces(OpenAIProvider(), {ollama});
  CHECK(t.text == "ok");
  CHECK(t.reasoning == "thinking...");
  REQUIRE(t.toolCalls.size() == 1);
  CHECK(t.toolCalls[0].id == "c1");
  CHECK(t.toolCalls[0].arguments == "{\"path\":\".\"}");
  CHECK(t.stopReason == kStopToolUse);
  CHECK(t.usage.input == 0);
  // finish_reason "length".
  t = decodePieces(OpenAIProvider(), {chunk({{"content", "cut"}}, "length")});
  CHECK(t.stopReason == kStopMaxTokens);
}

TEST_CASE("openai: a non-streaming answer decodes too") {
  json body{{"id", "x"},
            {"object", "chat.completion"},
            {"choices", json::array({{{"index", 0},
                                      {"message", {{"role", "assistant"}, {"content", "Done — ✓"},
                                                   {"tool_calls", json::array({{{"id", "c9"}, {"type", "function"},
                                                                                {"function", {{"name", "read"}, {"arguments", "{\"path\":\"x\"}"}}}}})}}},
                                      {"finish_reason", "tool_calls"}}})},
            {"usage", {{"prompt_tokens", 50}, {"completion_tokens", 7}}}};
  FakeServer server;
  const std::string text = body.dump();
  server.enqueue({200, {{"Content-Type", "application/json"}}, splitAt(text, {text.find("✓") + 1}), false, false});
  const Outcome out = roundTrip(server, OpenAIProvider(), fullRequest());
  REQUIRE_MESSAGE(out.turn, (out.error ? out.error->what() : "no turn"));
  CHECK(out.turn->text == "Done — ✓");
  REQUIRE(out.turn->toolCalls.size() == 1);
  CHECK(out.turn->toolCalls[0].name == "read");
  CHECK(out.turn->usage.input == 50);
  CHECK(out.turn->stopReason == kStopToolUse);
}

TEST_CASE("openai: HTTP errors are clear, with the provider's message") {
  FakeServer server;
  server.enqueue({401, {{"Content-Type", "application/json"}},
                  {"{\"error\":{\"message\":\"Incorrect API key provided\",\"type\":\"invalid_request_error\"}}"}, true, false});
  server.enqueue({429, {{"Content-Type", "application/json"}, {"Retry-After", "20"}},
                  {"{\"error\":{\"message\":\"Rate limit reached for requests\",\"type\":\"requests\"}}"}, true, false});
  server.enqueue({500, {{"Content-Type", "text/plain"}}, {"upstream\ncrashed"}, true, false});

  Outcome out = roundTrip(server, OpenAIProvider(), fullRequest());
  REQUIRE(out.error);
  CHECK(out.error->status == 401);
  CHECK(out.error->kind == ProviderError::Kind::Status);
  CHECK_FALSE(out.error->retryable);
  CHECK(std::string(out.error->what()).find("refused the key (401)") != std::string::npos);
  CHECK(std::string(out.error->what()).find("Incorrect API key provided") != std::string::npos);
  CHECK(std::string(out.error->what()).find("keySecret") != std::string::npos);

  out = roundTrip(server, OpenAIProvider(), fullRequest());
  REQUIRE(out.error);
  CHECK(out.error->rateLimited);
  CHECK(out.error->retryable);
  CHECK(out.error->retryAfterSec == 20);
  CHECK(std::string(out.error->what()) == "rate limited by the provider (429), retry after 20 s: Rate limit reached for requests");

  out = roundTrip(server, OpenAIProvider(), fullRequest());
  REQUIRE(out.error);
  CHECK(out.error->status == 500);
  CHECK(out.error->retryable);
  CHECK_FALSE(out.error->rateLimited);
  CHECK(out.error->retryAfterSec == -1);
  CHECK(std::string(out.error->what()).find("upstream crashed") != std::string::npos);  // control characters cleaned

  // retry-after-ms wins, and an HTTP date in the past counts as now.
  CHECK(OpenAIProvider().errorFor(429, {{"retry-after-ms", "1500"}, {"Retry-After", "9"}}, "").retryAfterSec == 2);
  CHECK(OpenAIProvider().errorFor(429, {{"Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT"}}, "").retryAfterSec == 0);
  CHECK(OpenAIProvider().errorFor(429, {{"Retry-After", "soon"}}, "").retryAfterSec == -1);
  CHECK(std::string(OpenAIProvider().errorFor(404, {}, "{\"error\":\"model 'x' not found\"}").what()).find("model 'x' not found") != std::string::npos);
}

TEST_CASE("openai: an error event mid-stream fails the turn and stops the transfer") {
  const std::string body = chunk({{"content", "Half an ans"}}) +
                           "data: {\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\"}}\n\n" +
                           chunk({{"content", "wer"}}, "stop") + "data: [DONE]\n\n";
  FakeServer server;
  server.enqueue({200, {{"Content-Type", "text/event-stream"}}, splitAt(body, {body.find("error") + 3}), true, false});
  const Outcome out = roundTrip(server, OpenAIProvider(), fullRequest());
  CHECK_FALSE(out.turn);
  REQUIRE(out.error);
  CHECK(out.error->kind == ProviderError::Kind::ErrorEvent);
  CHECK(out.error->status == 500);
  CHECK(out.error->retryable);
  CHECK(std::string(out.error->what()).find("The server had an error") != std::string::npos);
  // The same stream without the error event is a good answer.
  Turn t = decodePieces(OpenAIProvider(), {chunk({{"content", "Half an ans"}}) + chunk({{"content", "wer"}}, "stop")});
  CHECK(t.text == "Half an answer");
}

TEST_CASE("openai: a stream cut before its end is an error, not half an answer") {
  const std::string body = recordedTurn();
  const std::string cutBody = body.substr(0, body.find("\"finish_reason\":\"tool_calls\"") - 40);
  FakeServer server;
  // The server closes cleanly mid-stream: only the decoder can tell.
  server.enqueue({200, {{"Content-Type", "text/event-stream"}}, {cutBody}, false, false});
  // The chunked transfer breaks: egress reports it, and the decoder refuses too.
  server.enqueue({200, {{"Content-Type", "text/event-stream"}}, {cutBody}, true, true});
  for (int i = 0; i < 2; ++i) {
    const Outcome out = roundTrip(server, OpenAIProvider(), fullRequest());
    CHECK_FALSE(out.turn);
    REQUIRE(out.error);
    CHECK(out.error->kind == ProviderError::Kind::Truncated);
    CHECK(std::string(out.error->what()).find("cut off") != std::string::npos);
    if (i == 1) CHECK(out.egressError);
  }
  CHECK_THROWS_AS(decodePieces(OpenAIProvider(), {""}), ProviderError);
  // The whole body through the same closing server is fine.
  server.enqueue({200, {{"Content-Type", "text/event-stream"}}, {body}, false, false});
  const Outcome ok = roundTrip(server, OpenAIProvider(), fullRequest());
  REQUIRE(ok.turn);
  CHECK(sameTurn(*ok.turn, expectedTurn()));
}

TEST_CASE("openai: malformed JSON is an error") {
  auto kindOf = [](const std::string& body) {
    try {
      decodePieces(OpenAIProvider(), {body});
    } catch (const ProviderError& e) {
      return e.kind;
    }
    FAIL("no error");
    return ProviderError::Kind::Status;
  };
  CHECK(kindOf(chunk({{"content", "a"}}) + "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}\n\ndata: [DONE]\n\n") ==
        ProviderError::Kind::Malformed);
  CHECK(kindOf("{\"choices\": [}") == ProviderError::Kind::Malformed);
  CHECK(kindOf("{\"choices\": [") == ProviderError::Kind::Truncated);  // a JSON answer cut short
  CHECK(kindOf("{\"object\":\"chat.completion\"}") == ProviderError::Kind::Malformed);
  // A tool call piece that never names its function.
  CHECK(kindOf(callPiece(0, nullptr, nullptr, "{}") + chunk(json::object(), "tool_calls")) == ProviderError::Kind::Malformed);
  // vLLM's older error event.
  CHECK(kindOf(chunk({{"content", "a"}}) + "data: {\"object\":\"error\",\"message\":\"bad\",\"code\":400}\n\n") ==
        ProviderError::Kind::ErrorEvent);
  // A 200 JSON body that is an error.
  CHECK(kindOf("{\"error\":{\"message\":\"bad\",\"code\":400}}") == ProviderError::Kind::ErrorEvent);
}
