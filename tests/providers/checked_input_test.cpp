// What the decoders and the script refuse in a provider's (or a script's) numbers and
// shapes, each beside the legitimate twin that still works: counts outside 0..2^53,
// fractions, JSON nested too deep, numbers beyond a double, and the cases that used to
// throw something other than ProviderError. Each fuzz regression input of
// tests/fuzz/regressions/{openai_stream,anthropic_stream,reply_script}/ is here by name.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/providers/support.h"
#include "providers/anthropic.h"
#include "providers/openai.h"
#include "providers/reply_script.h"
#include "providers/stream_decoder.h"

using namespace pine::model;
using namespace pine::model::test;
using nlohmann::json;

namespace {

// The error finish() throws for `body` (fed whole, and again in two pieces: both must agree).
ProviderError refusal(const Provider& provider, const std::string& body) {
  std::optional<ProviderError> first;
  for (std::size_t cut : {body.size(), body.size() / 2}) {
    try {
      decodePieces(provider, {body.substr(0, cut), body.substr(cut)});
      FAIL("decoded without an error: " << body.substr(0, 200));
    } catch (const ProviderError& e) {
      if (!first) first = e;
      CHECK(std::string(e.what()) == first->what());
    }
  }
  REQUIRE(first);
  CHECK(validUtf8(first->what()));
  return *first;
}

bool says(const ProviderError& e, const std::string& words) { return std::string(e.what()).find(words) != std::string::npos; }

std::string finishChunk(const std::string& choiceExtra, const std::string& usage = "") {
  return "data: {\"choices\":[{\"index\":0" + choiceExtra + ",\"delta\":{\"content\":\"x\"},\"finish_reason\":\"stop\"}]" +
         (usage.empty() ? "" : ",\"usage\":" + usage) + "}\n\n";
}

std::string anthropicWith(const std::string& usage) {
  return "data: {\"type\":\"message_start\",\"message\":{\"usage\":" + usage +
         "}}\n\ndata: {\"type\":\"message_stop\"}\n\n";
}

// The turn, or the ProviderError's message; any other exception goes through (and fails the test).
std::string outcome(const Provider& provider, const std::string& body) {
  try {
    return "turn: " + describe(decodePieces(provider, {body}));
  } catch (const ProviderError& e) {
    return std::string("error: ") + e.what();
  }
}

std::string nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

std::string scriptError(const std::string& yaml) {
  try {
    ReplyScript::parse(yaml, "s.yaml");
  } catch (const ScriptError& e) {
    return e.what();
  }
  return "(parsed)";
}

Turn decodeScript(const ReplyScript& s, const json& request) { return decodePieces(OpenAIProvider(), {s.answer(request)}); }

const json kHello{{"model", "m"}, {"messages", json::array({{{"role", "user"}, {"content", "hello"}}})}};

}  // namespace

TEST_CASE("numbers: the one reader takes whole numbers 0..2^53 and refuses the rest, naming the field") {
  using detail::countAt;
  const json j = json::parse(R"({"a": 12, "b": 12.0, "c": 9007199254740992, "n": null,
      "neg": -3, "frac": 1.5, "big": 9007199254740993, "huge": 18446744073709551650, "inf": 1e300, "s": "12",
      "negfloat": -0.5, "u64": 18446744073709551615})");
  CHECK(countAt(j, "a", "a") == 12);
  CHECK(countAt(j, "b", "b") == 12);
  CHECK(countAt(j, "c", "c") == kMaxCount);
  CHECK(countAt(j, "n", "n", 7) == 7);        // null is absent
  CHECK(countAt(j, "missing", "m", 7) == 7);  // so is a missing key
  CHECK(countAt(json::array(), "a", "a", 3) == 3);
  for (const char* bad : {"neg", "frac", "big", "huge", "inf", "s", "negfloat", "u64"}) {
    CAPTURE(bad);
    try {
      countAt(j, bad, std::string("usage.") + bad);
      FAIL("accepted");
    } catch (const detail::Unreadable& e) {
      CHECK(std::string(e.what()).find(std::string("usage.") + bad + " is ") == 0);
    }
  }
}

TEST_CASE("numbers: sums of counts saturate at 2^53") {
  CHECK(addCounts(1, 2) == 3);
  CHECK(addCounts(kMaxCount, kMaxCount) == kMaxCount);
  CHECK(addCounts(kMaxCount - 1, 1) == kMaxCount);
  CHECK(addCounts(-5, 4) == 4);  // a negative never makes a total smaller
  CHECK(addCounts(LLONG_MAX, LLONG_MAX) == kMaxCount);
}

// regressions/openai_stream/choice_index_beyond_long_long.{json,sse}: converting the float to long long was undefined.
TEST_CASE("numbers: an OpenAI choice index beyond long long is refused, not undefined") {
  ProviderError e = refusal(OpenAIProvider(), R"({"choices":[{"index":18446744073709551650}]})");
  CHECK(e.kind == ProviderError::Kind::Malformed);
  CHECK(says(e, "choices[].index is 1.8446744073709552e+19, more than 9007199254740992"));
  e = refusal(OpenAIProvider(), "data: {\"choices\":[{\"index\":18446744073709551650,\"delta\":{\"content\":\"x\"},"
                                "\"finish_reason\":\"stop\"}]}\n\n");
  CHECK(says(e, "choices[].index"));
  // The legitimate twin: index 0, and a second choice (n > 1) is skipped.
  Turn t = decodePieces(OpenAIProvider(), {"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}},"
                                           "{\"index\":1.0,\"delta\":{\"content\":\"y\"},\"finish_reason\":\"stop\"}]}\n\n"
                                           "data: [DONE]\n\n"});
  CHECK(t.text == "x");
}

// regressions/openai_stream/prompt_minus_cached_overflows.sse, negative_completion_tokens.json,
// fractional_and_huge_float_counts.sse.
TEST_CASE("numbers: OpenAI usage counts are checked before prompt minus cached") {
  ProviderError e = refusal(OpenAIProvider(), finishChunk("", R"({"prompt_tokens":9223372036854775807,"prompt_tokens_details":{"cached_tokens":-9223372036854775808}})"));
  CHECK(e.kind == ProviderError::Kind::Malformed);
  CHECK(says(e, "usage.prompt_tokens is 9223372036854775807, more than 9007199254740992"));
  e = refusal(OpenAIProvider(), finishChunk("", R"({"prompt_tokens":10,"prompt_tokens_details":{"cached_tokens":-1}})"));
  CHECK(says(e, "usage.prompt_tokens_details.cached_tokens is -1, below 0"));
  e = refusal(OpenAIProvider(), R"({"choices":[{"index":0,"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":-5000000}})");
  CHECK(says(e, "usage.completion_tokens is -5000000, below 0"));
  e = refusal(OpenAIProvider(), "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1e300,\"completion_tokens\":2.5}}\n\ndata: [DONE]\n\n");
  CHECK(says(e, "usage.prompt_tokens is 1e+300, more than"));
  e = refusal(OpenAIProvider(), finishChunk("", R"({"completion_tokens":2.5})"));
  CHECK(says(e, "usage.completion_tokens is 2.5, not a whole number"));
  e = refusal(OpenAIProvider(), finishChunk("", R"({"completion_tokens":"7"})"));
  CHECK(says(e, "usage.completion_tokens is \"7\", not a number"));
  // In a choice too (llama.cpp puts usage there).
  e = refusal(OpenAIProvider(), "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\",\"usage\":{\"prompt_tokens\":-1}}]}\n\n");
  CHECK(says(e, "choices[].usage.prompt_tokens is -1"));

  // The legitimate twins: the largest count, whole floats, more cached than prompt (the server's
  // inconsistency: no uncached input, never a negative one), DeepSeek's field.
  Turn t = decodePieces(OpenAIProvider(), {finishChunk("", R"({"prompt_tokens":9007199254740992,"completion_tokens":45.0,"prompt_tokens_details":{"cached_tokens":0}})")});
  CHECK(t.usage.input == kMaxCount);
  CHECK(t.usage.output == 45);
  t = decodePieces(OpenAIProvider(), {finishChunk("", R"({"prompt_tokens":10,"prompt_tokens_details":{"cached_tokens":9007199254740992}})")});
  CHECK(t.usage.input == 0);
  CHECK(t.usage.cacheRead == kMaxCount);
  t = decodePieces(OpenAIProvider(), {finishChunk("", R"({"prompt_tokens":100,"prompt_cache_hit_tokens":40,"completion_tokens":null})")});
  CHECK(t.usage.input == 60);
  CHECK(t.usage.cacheRead == 40);
  CHECK(t.usage.output == 0);
}

// regressions/openai_stream/tool_call_index_uint64.sse
TEST_CASE("numbers: an OpenAI tool call index must be a count too") {
  const ProviderError e = refusal(
      OpenAIProvider(),
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":18446744073709551615,\"id\":\"a\","
      "\"function\":{\"name\":\"ls\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n");
  CHECK(says(e, "delta.tool_calls[].index is 18446744073709551615, more than"));
  const Turn t = decodePieces(
      OpenAIProvider(), {"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":3,\"id\":\"a\","
                         "\"function\":{\"name\":\"ls\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n"});
  REQUIRE(t.toolCalls.size() == 1);
  CHECK(t.toolCalls[0].name == "ls");
}

// regressions/{openai,anthropic}_stream/number_beyond_double_json_body.json, anthropic_stream/number_beyond_double_in_object.json:
// finish() let nlohmann's out_of_range escape.
TEST_CASE("numbers: a number beyond a double in a JSON body is a ProviderError, not nlohmann's out_of_range") {
  const OpenAIProvider openai;
  const AnthropicProvider anthropic;
  for (const Provider* p : {static_cast<const Provider*>(&openai), static_cast<const Provider*>(&anthropic)}) {
    ProviderError e = refusal(*p, "[7e807");
    CHECK(e.kind == ProviderError::Kind::Malformed);
    CHECK(says(e, "a number that cannot be read"));
    e = refusal(*p, R"({"type":"message","content":[],"usage":{"input_tokens":7e807}})");
    CHECK(e.kind == ProviderError::Kind::Malformed);
    // In an event the same number is malformed JSON, and the event the number lies in is named.
    e = refusal(*p, "data: {\"x\":7e807}\n\n");
    CHECK(says(e, "event 1 is not valid JSON"));
  }
  // The twin: a large but finite number where no count is expected is fine.
  const Turn t = decodePieces(AnthropicProvider(), {R"({"type":"message","content":[{"type":"text","text":"ok"}],"x":1e300})"});
  CHECK(t.text == "ok");
}

// regressions/anthropic_stream/negative_input_tokens.sse, block_index_huge_float.sse, output_tokens_beyond_2_53.sse
TEST_CASE("numbers: Anthropic counts and block indexes are checked") {
  ProviderError e = refusal(AnthropicProvider(), anthropicWith(R"({"input_tokens":-25,"output_tokens":1})"));
  CHECK(says(e, "usage.input_tokens is -25, below 0"));
  e = refusal(AnthropicProvider(),
              "data: {\"type\":\"message_start\",\"message\":{}}\n\ndata: {\"type\":\"content_block_start\",\"index\":1e300,"
              "\"content_block\":{\"type\":\"text\",\"text\":\"x\"}}\n\ndata: {\"type\":\"message_stop\"}\n\n");
  CHECK(says(e, "content_block_start.index is 1e+300"));
  e = refusal(AnthropicProvider(),
              "data: {\"type\":\"message_start\",\"message\":{}}\n\ndata: {\"type\":\"content_block_delta\",\"index\":-1,"
              "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\"}}\n\ndata: {\"type\":\"message_stop\"}\n\n");
  CHECK(says(e, "content_block_delta.index is -1"));
  e = refusal(AnthropicProvider(),
              "data: {\"type\":\"message_start\",\"message\":{}}\n\ndata: {\"type\":\"message_delta\",\"delta\":{},"
              "\"usage\":{\"output_tokens\":9007199254740993}}\n\ndata: {\"type\":\"message_stop\"}\n\n");
  CHECK(says(e, "usage.output_tokens is 9007199254740993, more than 9007199254740992"));
  e = refusal(AnthropicProvider(), R"({"type":"message","content":[],"usage":{"cache_read_input_tokens":0.5}})");
  CHECK(says(e, "usage.cache_read_input_tokens is 0.5, not a whole number"));
  // The twins: the largest count; a null count keeps what message_start said.
  Turn t = decodePieces(AnthropicProvider(), {anthropicWith(R"({"input_tokens":9007199254740992,"cache_creation_input_tokens":3})")});
  CHECK(t.usage.input == kMaxCount);
  CHECK(t.usage.cacheWrite == 3);
  t = decodePieces(AnthropicProvider(),
                   {"data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":25}}}\n\n"
                    "data: {\"type\":\"message_delta\",\"delta\":{},\"usage\":{\"input_tokens\":null,\"output_tokens\":9}}\n\n"
                    "data: {\"type\":\"message_stop\"}\n\n"});
  CHECK(t.usage.input == 25);
  CHECK(t.usage.output == 9);
}

// regressions/openai_stream/deeply_nested_arguments.sse, error_body_deeply_nested.json,
// anthropic_stream/deeply_nested_input.json: dumping them again recursed once per level (a stack overflow).
TEST_CASE("shapes: JSON nested deeper than 256 levels is refused; 200 levels still decode") {
  const std::string tooDeep = nested(100000);
  ProviderError e = refusal(OpenAIProvider(), "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"id\":\"a\","
                                              "\"function\":{\"name\":\"ls\",\"arguments\":" + tooDeep + "}}]},\"finish_reason\":\"stop\"}]}\n\n");
  CHECK(e.kind == ProviderError::Kind::Malformed);
  CHECK(says(e, "event 1 nests JSON more than 256 levels deep"));
  e = refusal(AnthropicProvider(), R"({"type":"message","content":[{"type":"tool_use","id":"t","name":"n","input":)" + tooDeep + "}]}");
  CHECK(says(e, "the JSON answer nests more than 256 levels deep"));
  // Brackets inside strings are text, not nesting.
  Turn t = decodePieces(OpenAIProvider(), {finishChunk("").replace(finishChunk("").find("\"x\""), 3, "\"" + tooDeep + "\"")});
  CHECK(t.text == tooDeep);
  // 200 levels of arguments sent as JSON (Ollama's way) still go through.
  t = decodePieces(OpenAIProvider(), {"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"id\":\"a\","
                                      "\"function\":{\"name\":\"ls\",\"arguments\":" + nested(200) + "}}]},\"finish_reason\":\"stop\"}]}\n\n"});
  REQUIRE(t.toolCalls.size() == 1);
  CHECK(t.toolCalls[0].arguments == nested(200));
  // A non-2xx body nested that deep is reported as text, without recursing.
  const ProviderError status = OpenAIProvider().errorFor(500, {}, "{\"error\":" + tooDeep + "}");
  CHECK(status.status == 500);
  CHECK(says(status, "failed (500); trying again later may work: {\"error\":[[[["));
  CHECK(says(OpenAIProvider().errorFor(500, {}, "{\"error\":" + nested(10) + "}"), "[[[[[[[[[[]]]]]]]]]]"));
}

// regressions/openai_stream/error_code_beyond_int.sse: get<int>() truncated 4294967725 to 429 (rate limited).
TEST_CASE("shapes: an error event's numeric code counts as a status only when it looks like one") {
  ProviderError e = refusal(OpenAIProvider(), "data: {\"error\":{\"message\":\"m\",\"code\":4294967725}}\n\n");
  CHECK(e.kind == ProviderError::Kind::ErrorEvent);
  CHECK(e.status == 0);
  CHECK_FALSE(e.rateLimited);
  e = refusal(OpenAIProvider(), "data: {\"error\":{\"message\":\"m\",\"code\":429}}\n\n");
  CHECK(e.status == 429);
  CHECK(e.rateLimited);
}

// regressions/openai_stream/invalid_utf8_in_error_message.sse: the message's quote of the event was cut inside a character.
TEST_CASE("shapes: error messages are valid UTF-8, whatever the answer held") {
  std::string cups;
  for (int i = 0; i < 18; ++i) cups += "☕";
  const ProviderError e = refusal(OpenAIProvider(), "data: {\"choices\":[{\"delta\":{\"content\":\"é" + cups + "\n\n");
  // 60 bytes would end inside the ninth cup: the quote stops before it.
  CHECK(says(e, "it starts '{\"choices\":[{\"delta\":{\"content\":\"é" + cups.substr(0, 8 * 3) + "...'"));
  // Bytes that are not UTF-8 at all (a Latin-1 error page) become '?'.
  const ProviderError page = OpenAIProvider().errorFor(502, {}, "Passerelle d\xe9" "faillante \xff\xfe");
  CHECK(validUtf8(page.what()));
  CHECK(says(page, "Passerelle d?faillante ??"));
  CHECK(detail::cleanText("\xed\xa0\x80 \xc0\xaf \xf4\x90\x80\x80 ok") == "??? ?? ???? ok");  // surrogate, overlong, > U+10FFFF
  CHECK(detail::cleanText("été", 3) == "ét...");
}

// regressions/openai_stream/double_bom_split.sse: a second BOM was stripped too when the first came alone.
TEST_CASE("shapes: a BOM is stripped once, however the body is split") {
  const std::string body = "\xEF\xBB\xBF\xEF\xBB\xBF" + finishChunk("");
  std::vector<std::string> outcomes;
  for (std::size_t cut = 0; cut <= 7; ++cut) {
    try {
      outcomes.push_back(describe(decodePieces(OpenAIProvider(), {body.substr(0, cut), body.substr(cut)})));
    } catch (const ProviderError& e) {
      outcomes.push_back(e.what());
    }
    CHECK(outcomes.back() == outcomes.front());
  }
  // One BOM is the legitimate case: stripped, however split.
  const std::string one = "\xEF\xBB\xBF" + finishChunk("");
  for (std::size_t cut = 0; cut <= 4; ++cut)
    CHECK(decodePieces(OpenAIProvider(), {one.substr(0, cut), one.substr(cut)}).text == "x");
}

TEST_CASE("shapes: the line and white-space limits do not depend on how the body was split") {
  const std::size_t max = detail::EventStreamDecoder::kMaxLine;
  const std::string head = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"";
  const std::string tail = "\"},\"finish_reason\":\"stop\"}]}";
  const std::string fits = head + std::string(max - head.size() - tail.size(), 'a') + tail + "\n\n";
  const std::string tooLong = head + std::string(max + 1 - head.size() - tail.size(), 'a') + tail + "\n\n";
  CHECK(says(refusal(OpenAIProvider(), tooLong), "a line of the stream is longer than 8 MB"));
  CHECK(decodePieces(OpenAIProvider(), {fits.substr(0, 100), fits.substr(100)}).text.size() == max - head.size() - tail.size());
  CHECK(says(refusal(OpenAIProvider(), std::string(max + 1, '\n') + finishChunk("")), "more than 8 MB of white space"));
  CHECK(decodePieces(OpenAIProvider(), {std::string(1000, '\n') + finishChunk("")}).text == "x");
  // White space that trickles in a byte at a time is scanned once, not again with every byte
  // (300000 bytes would take 4.5e10 steps that way).
  auto d = OpenAIProvider().decoder();
  for (int i = 0; i < 300000; ++i) d->feed(i % 2 ? "\n" : " ");
  d->feed(finishChunk(""));
  CHECK(d->finish().text == "x");
}

// regressions/anthropic_stream/tool_use_without_id.sse
TEST_CASE("shapes: an Anthropic tool_use without an id gets one, as OpenAI calls do") {
  const Turn t = decodePieces(AnthropicProvider(),
                              {"data: {\"type\":\"message_start\",\"message\":{}}\n\ndata: {\"type\":\"content_block_start\",\"index\":0,"
                               "\"content_block\":{\"type\":\"tool_use\",\"name\":\"ls\"}}\n\ndata: {\"type\":\"message_stop\"}\n\n"});
  REQUIRE(t.toolCalls.size() == 1);
  CHECK(t.toolCalls[0].id == "toolu_0");
  CHECK(t.toolCalls[0].arguments == "{}");
}

TEST_CASE("shapes: feed() and finish() turn whatever a format's reader throws into one ProviderError") {
  // Odd but valid JSON in every slot the readers look at: a turn or a ProviderError (outcome()
  // lets anything else through, which fails the test).
  CHECK(outcome(OpenAIProvider(), R"({"choices":[{"index":0,"message":{"content":7,"tool_calls":[{"function":3}]},"finish_reason":[]}],"usage":[]})") ==
        "error: the OpenAI-compatible answer could not be read: tool call 1 has no function name; the answer was not used");
  CHECK(outcome(OpenAIProvider(), R"({"choices":[{"index":0,"message":{"content":[7,{"text":3},{"text":"a"}]},"finish_reason":[]}],"usage":[]})") ==
        "turn: text='a' stop=end_turn usage=0/0/0/0");
  CHECK(outcome(OpenAIProvider(), R"({"choices":"x"})") ==
        "error: the OpenAI-compatible answer could not be read: the JSON answer has no choices; the answer was not used");
  CHECK(outcome(OpenAIProvider(), R"({"error":7})") == "error: the provider reported an error in its answer: {\"error\":7}");
  CHECK(outcome(AnthropicProvider(), R"({"type":"message","content":[1,{"type":"tool_use","name":"n","input":7}],"usage":"x","stop_reason":3})") ==
        "turn: text='' stop=tool_use usage=0/0/0/0 call[toolu_1 n 7]");
  CHECK(outcome(AnthropicProvider(), "data: {\"type\":\"content_block_start\",\"content_block\":7}\n\ndata: {\"type\":\"message_stop\"}\n\n") ==
        "turn: text='' stop=end_turn usage=0/0/0/0");
  // A throwing onText (a broken caller) cannot escape feed() either: it is the answer's error.
  auto d = OpenAIProvider().decoder();
  d->onText = [](std::string_view) { throw std::runtime_error("sink full"); };
  CHECK_NOTHROW(d->feed(finishChunk("")));
  CHECK(d->failed());
  try {
    d->finish();
    FAIL("no error");
  } catch (const ProviderError& e) {
    CHECK(e.kind == ProviderError::Kind::Malformed);
    CHECK(says(e, "sink full"));
  }
}

// regressions/reply_script/usage_sum_overflows.yaml, usage_beyond_2_53.yaml: total_tokens was input + output in long long.
TEST_CASE("script: usage counts are 0..2^53 and their total cannot overflow") {
  CHECK(scriptError("replies:\n  - turns:\n      - text: a\n        usage: {input: 9223372036854775807, output: 9223372036854775807}\n") ==
        "s.yaml:4:24: usage.input must be a whole number of tokens, 0 to 9007199254740992 (not '9223372036854775807')");
  CHECK(scriptError("replies:\n  - turns:\n      - text: a\n        usage: {input: 9007199254740993}\n").find("s.yaml:4:24: usage.input must be") == 0);
  CHECK(scriptError("replies:\n  - turns:\n      - text: a\n        usage: {output: 99999999999999999999}\n").find("s.yaml:4:25: usage.output must be") == 0);
  for (const char* bad : {"+5", "5.0", "0x10", " ", "1e3"}) {
    CAPTURE(bad);
    CHECK(scriptError(std::string("replies:\n  - turns:\n      - text: a\n        usage: {input: '") + bad + "'}\n").find("usage.input must be") != std::string::npos);
  }
  // The largest counts parse, and the stream they make decodes with them (its total saturates).
  const ReplyScript s = ReplyScript::parse("replies:\n  - turns:\n      - text: a\n        usage: {input: 9007199254740992, output: 9007199254740992}\n", "s.yaml");
  const std::string sse = s.answer(kHello);
  CHECK(sse.find("\"total_tokens\":9007199254740992") != std::string::npos);
  const Turn t = decodePieces(OpenAIProvider(), {sse});
  CHECK(t.usage.input == kMaxCount);
  CHECK(t.usage.output == kMaxCount);
}

// regressions/reply_script/empty_tool_name.yaml: the script sent a call the decoder refuses.
TEST_CASE("script: a tool call's name must not be empty") {
  CHECK(scriptError("replies:\n  - turns:\n      - tool_calls:\n          - name: \"\"\n") ==
        "s.yaml:4:19: a tool call's name must not be empty");
  const ReplyScript s = ReplyScript::parse("replies:\n  - turns:\n      - tool_calls:\n          - name: x\n", "s.yaml");
  const Turn t = decodeScript(s, kHello);
  REQUIRE(t.toolCalls.size() == 1);
  CHECK(t.toolCalls[0].name == "x");
}

// regressions/reply_script/deeply_nested_arguments.yaml
TEST_CASE("script: arguments nest at most 64 levels; the worker's request may nest any depth") {
  auto script = [](int depth) {
    return "replies:\n  - turns:\n      - tool_calls:\n          - name: x\n            arguments: {a: " + nested(depth) + "}\n";
  };
  CHECK(scriptError(script(200)).find("arguments nest more than 64 levels deep") != std::string::npos);
  const ReplyScript s = ReplyScript::parse(script(60), "s.yaml");
  const Turn t = decodeScript(s, kHello);
  REQUIRE(t.toolCalls.size() == 1);
  CHECK(t.toolCalls[0].arguments == "{\"a\":" + nested(60) + "}");
  // The request comes from the worker: its size is estimated without recursing.
  json deep = json::array();
  for (int i = 0; i < 100000; ++i) deep = json::array({std::move(deep)});
  json request = kHello;
  request["tools"] = std::move(deep);
  CHECK(decodeScript(s, request).usage.input > 50000);
}

TEST_CASE("script: a script without rules answers with an empty turn instead of reading past its end") {
  const ReplyScript none;
  CHECK(none.pick(kHello).text.empty());
  const Turn t = decodeScript(none, kHello);
  CHECK(t.text.empty());
  CHECK(t.stopReason == kStopEnd);
}
