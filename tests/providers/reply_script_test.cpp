// The script model: rules, turns, tool calls, fall-through, errors with file:line, and
// its answers read by the real OpenAI decoder (directly and through egress).
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "tests/providers/support.h"
#include "providers/openai.h"
#include "providers/reply_script.h"

using namespace pine::model;
using namespace pine::model::test;
using nlohmann::json;

namespace {

const char* kScript = R"(# a test script
replies:
  - match: "morning-brief"
    text: "Nothing happened overnight — all calm ☕."
  - match: "notes"
    turns:
      - text: "Let me look."
        tool_calls:
          - name: read
            arguments: {path: "notes/été.txt", limit: 20, exact: true, label: "20"}
          - name: ls
        usage: {input: 1000, output: 50}
      - tool_calls:
          - {name: grep, arguments: '{"pattern": "todo"'}
      - text: "Your notes say: buy milk."
  - match: ""
    text: "This is the offline demo model."
)";

json request(std::vector<json> messages) {
  return {{"model", "demo"}, {"messages", std::move(messages)}, {"stream", true}};
}
json user(const std::string& t) { return {{"role", "user"}, {"content", t}}; }
json assistant() { return {{"role", "assistant"}, {"content", "x"}}; }
json tool() { return {{"role", "tool"}, {"tool_call_id", "c"}, {"content", "result"}}; }

Turn decode(const std::string& sse) { return decodePieces(OpenAIProvider(), {sse}); }

std::string errorOf(const std::string& yaml) {
  try {
    ReplyScript::parse(yaml, "providers/bad.yaml");
  } catch (const ScriptError& e) {
    return e.what();
  }
  return "(parsed)";
}

}  // namespace

TEST_CASE("script: the first matching rule answers the latest user message; the last answers the rest") {
  const ReplyScript s = ReplyScript::parse(kScript, "replies.yaml");
  REQUIRE(s.rules().size() == 3);
  CHECK(s.rules()[1].line == 5);
  Turn t = decode(s.answer(request({{{"role", "system"}, {"content", "sys"}}, user("run the morning-brief")})));
  CHECK(t.text == "Nothing happened overnight — all calm ☕.");
  CHECK(t.stopReason == kStopEnd);
  CHECK(t.toolCalls.empty());
  // An earlier user message does not count, only the latest.
  t = decode(s.answer(request({user("morning-brief"), assistant(), user("hello")})));
  CHECK(t.text == "This is the offline demo model.");
  // Content as a list of parts.
  t = decode(s.answer(request({{{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", "morning-brief"}}})}}})));
  CHECK(t.text.find("Nothing happened") == 0);
  // No rule matches and the last rule is not a catch-all: the last rule still answers.
  const ReplyScript narrow = ReplyScript::parse("replies:\n  - match: a\n    text: A\n  - match: b\n    text: B\n", "n.yaml");
  CHECK(decode(narrow.answer(request({user("zzz")}))).text == "B");
  CHECK(decode(narrow.answer(request({user("a")}))).text == "A");
  CHECK(decode(narrow.answer(request({}))).text == "B");
}

TEST_CASE("script: turns replay in order, counted from the latest user message") {
  const ReplyScript s = ReplyScript::parse(kScript, "replies.yaml");
  json r = request({user("check my notes")});
  Turn t = decode(s.answer(r));
  CHECK(t.text == "Let me look.");
  REQUIRE(t.toolCalls.size() == 2);
  CHECK(t.toolCalls[0].name == "read");
  CHECK(json::parse(t.toolCalls[0].arguments) ==
        json{{"path", "notes/été.txt"}, {"limit", 20}, {"exact", true}, {"label", "20"}});
  CHECK(t.toolCalls[1].name == "ls");
  CHECK(t.toolCalls[1].arguments == "{}");
  CHECK(t.toolCalls[0].id != t.toolCalls[1].id);
  CHECK(t.stopReason == kStopToolUse);
  CHECK(t.usage.input == 1000);
  CHECK(t.usage.output == 50);

  // Second turn: arguments written as JSON text go out as written, even when broken.
  r["messages"].push_back(assistant());
  r["messages"].push_back(tool());
  t = decode(s.answer(r));
  REQUIRE(t.toolCalls.size() == 1);
  CHECK(t.toolCalls[0].name == "grep");
  CHECK(t.toolCalls[0].arguments == "{\"pattern\": \"todo\"");
  CHECK(t.usage.input > 0);  // estimated
  CHECK(t.usage.output > 0);

  r["messages"].push_back(assistant());
  r["messages"].push_back(tool());
  t = decode(s.answer(r));
  CHECK(t.text == "Your notes say: buy milk.");
  CHECK(t.toolCalls.empty());

  // Past the last turn: the last text again, never more tool calls.
  r["messages"].push_back(assistant());
  t = decode(s.answer(r));
  CHECK(t.text == "Your notes say: buy milk.");
  CHECK(t.toolCalls.empty());
  // A new user message starts the turns again.
  r["messages"].push_back(user("and my notes again"));
  t = decode(s.answer(r));
  CHECK(t.text == "Let me look.");
  REQUIRE(t.toolCalls.size() == 2);
  // ...with call ids that differ from the first round's.
  Turn first = decode(s.answer(request({user("check my notes")})));
  CHECK(first.toolCalls[0].id != t.toolCalls[0].id);
}

TEST_CASE("script: usage is estimated at about four characters a token when not given") {
  const ReplyScript s = ReplyScript::parse("replies:\n  - text: \"12345678\"\n", "u.yaml");
  Turn t = decode(s.answer(request({user(std::string(400, 'x'))})));
  CHECK(t.usage.output == 2);
  CHECK(t.usage.input == 100);
}

TEST_CASE("script: its stream is split like a real server's and survives egress") {
  const ReplyScript s = ReplyScript::parse(kScript, "replies.yaml");
  const json r = request({user("check my notes")});
  const std::string sse = s.answer(r);
  CHECK(sse.rfind("data: [DONE]\n\n") == sse.size() - 14);
  // Arguments arrive in more than one piece, as from a real server.
  int pieces = 0;
  for (std::size_t p = 0; (p = sse.find("\"arguments\":", p)) != std::string::npos; ++p) ++pieces;
  CHECK(pieces > 3);
  const Turn expected = decode(sse);
  for (const auto& f : checkEverySplit(OpenAIProvider(), sse, expected)) FAIL_CHECK(f);

  // Through the client path: the worker's request body answered by the script.
  ModelRequest mr;
  mr.model = "demo";
  mr.messages = {{Message::Role::User, "check my notes", {}, "", "", false}};
  const json body = json::parse(OpenAIProvider().buildCall(mr).body);
  FakeServer server;
  server.enqueue({200, {{"Content-Type", "text/event-stream"}}, {s.answer(body)}, true, false});
  const Outcome out = roundTrip(server, OpenAIProvider(), mr);
  REQUIRE_MESSAGE(out.turn, (out.error ? out.error->what() : "no turn"));
  CHECK(out.turn->text == "Let me look.");
  CHECK(out.turn->toolCalls.size() == 2);
  CHECK(out.turn->usage.input == 1000);
}

TEST_CASE("script: the example home's demo script parses and answers") {
  const char* root = std::getenv("PINE_SOURCE_DIR");
  REQUIRE(root);
  std::ifstream in(std::string(root) + "/config/examples/home/providers/demo-replies.yaml");
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  const ReplyScript s = ReplyScript::parse(ss.str(), "providers/demo-replies.yaml");
  CHECK(decode(s.answer(request({user("morning-brief please")}))).text.find("Nothing happened") == 0);
  CHECK(decode(s.answer(request({user("hi")}))).text.find("offline demo model") != std::string::npos);
}

TEST_CASE("script: bad scripts are refused with file:line:column") {
  // Malformed YAML.
  std::string e = errorOf("replies:\n  - match: a\n    text: [b\n");
  CHECK(e.find("providers/bad.yaml:") == 0);
  CHECK(e.find("not valid YAML") != std::string::npos);
  e = errorOf("replies:\n  - match: a\n    text: b\n   bad: c\n");
  CHECK(e.find("providers/bad.yaml:4:") == 0);
  CHECK(e.find("not valid YAML") != std::string::npos);
  // Wrong shapes, each at its own line.
  CHECK(errorOf("replies:\n  - match: a\n    txet: b\n") == "providers/bad.yaml:3:5: unknown key 'txet' in a rule (allowed: match, text, turns)");
  CHECK(errorOf("replies:\n  - match: a\n") == "providers/bad.yaml:2:5: a rule needs text or turns");
  CHECK(errorOf("replies:\n  - text: a\n    turns:\n      - text: b\n").find("providers/bad.yaml:4:7: a rule has either text or turns") == 0);
  CHECK(errorOf("replies:\n  - turns:\n      - usage: {input: 1}\n").find("providers/bad.yaml:3:9: a turn needs text, tool_calls or both") == 0);
  CHECK(errorOf("replies:\n  - turns:\n      - tool_calls:\n          - arguments: {}\n").find("providers/bad.yaml:4:13: a tool call needs a name") == 0);
  CHECK(errorOf("replies:\n  - turns:\n      - text: a\n        usage: {input: -3}\n").find("providers/bad.yaml:4:24: usage.input must be a whole number") == 0);
  CHECK(errorOf("replies:\n  - turns:\n      - tool_calls:\n          - name: x\n            arguments: [1, 2]\n").find("providers/bad.yaml:5:24: arguments must be a map") == 0);
  CHECK(errorOf("replys:\n  - text: a\n").find("providers/bad.yaml:1:1: unknown key 'replys'") == 0);
  CHECK(errorOf("replies: []\n").find("`replies:` must be a list of rules") != std::string::npos);
  CHECK(errorOf("") == "providers/bad.yaml: the script is empty; it needs a `replies:` list");
  CHECK(errorOf("- a\n").find("the script must be a map") != std::string::npos);
  // The legitimate twin of each shape parses.
  CHECK(errorOf("replies:\n  - match: a\n    text: b\n  - turns:\n      - text: c\n        usage: {input: 3, output: 0}\n"
                "      - tool_calls:\n          - name: x\n            arguments: {a: [1, 2]}\n") == "(parsed)");
}
