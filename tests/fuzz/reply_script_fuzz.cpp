// The script model: any text as a reply script is a ReplyScript or a ScriptError, never
// another exception; a script that parses answers every request with a stream the real
// OpenAI decoder reads back to the turn the script picked (text, tool calls, usage).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "tests/providers/stream_fuzz.h"
#include "providers/openai.h"
#include "providers/reply_script.h"

namespace {

using namespace pine::model;
using nlohmann::json;

void checkAnswer(const ReplyScript& script, const json& request) {
  ReplyScript::ScriptTurn want;
  std::string sse;
  try {
    want = script.pick(request);
    sse = script.answer(request);
  } catch (...) {
    FUZZ_CHECK(false, "pick() or answer() threw");
  }
  Turn got;
  try {
    auto d = OpenAIProvider().decoder();
    d->feed(sse);
    got = d->finish();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    FUZZ_CHECK(false, "the script's answer does not decode");
  }
  if (fuzz::validUtf8(want.text)) FUZZ_CHECK(got.text == want.text, "the decoded text is not the script's");
  FUZZ_CHECK(got.toolCalls.size() == want.toolCalls.size(), "the decoded tool calls are not the script's");
  for (std::size_t i = 0; i < want.toolCalls.size(); ++i) {
    const auto& w = want.toolCalls[i];
    if (fuzz::validUtf8(w.name)) FUZZ_CHECK(got.toolCalls[i].name == w.name, "a tool call's name changed");
    if (fuzz::validUtf8(w.arguments) && !w.arguments.empty())
      FUZZ_CHECK(got.toolCalls[i].arguments == w.arguments, "a tool call's arguments changed");
    if (!w.id.empty() && fuzz::validUtf8(w.id)) FUZZ_CHECK(got.toolCalls[i].id == w.id, "a tool call's id changed");
  }
  FUZZ_CHECK(fuzz::countOk(got.usage.input) && fuzz::countOk(got.usage.output), "a usage count out of range");
  if (want.usage) {
    FUZZ_CHECK(got.usage.input == want.usage->input && got.usage.output == want.usage->output,
               "the decoded usage is not the script's");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  ReplyScript script;
  try {
    script = ReplyScript::parse(text, "fuzz.yaml");
  } catch (const ScriptError& e) {
    FUZZ_CHECK(std::string_view(e.what()).substr(0, 9) == "fuzz.yaml", "a ScriptError that does not name the file");
    return 0;
  } catch (...) {
    FUZZ_CHECK(false, "parse() threw something other than ScriptError");
  }
  FUZZ_CHECK(!script.rules().empty(), "a script without rules parsed");
  // Each rule's own words as the user's message, then its later turns and past its end.
  for (const auto& rule : script.rules()) {
    json request{{"model", "m"}, {"messages", json::array({{{"role", "user"}, {"content", rule.match}}})}};
    if (!fuzz::validUtf8(rule.match)) request["messages"][0]["content"] = "x";
    for (std::size_t turn = 0; turn <= rule.turns.size() && turn < 4; ++turn) {
      checkAnswer(script, request);
      request["messages"].push_back({{"role", "assistant"}, {"content", "ok"}});
    }
  }
  checkAnswer(script, json::object());
  checkAnswer(script, json::array());
  return 0;
}
