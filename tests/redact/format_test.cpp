// Redaction that keeps JSON and event streams well-formed (FormatStreamRedactor): every
// corpus secret inside JSON strings in every escaping, inside OpenAI- and Anthropic-
// shaped event streams, over escaped newlines; malformed input at least as redacted as
// by redact(); the stream equal to the whole text over random splits; bounded memory;
// the audit log.
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/log.h"
#include "redact/detail.h"
#include "redact/redactor.h"

using pine::redact::Format;
using pine::redact::FormatStreamRedactor;
using pine::redact::kMarker;
using pine::redact::Redactor;
using pine::redact::detail::FormatTesting;
using nlohmann::json;

namespace {

struct FormatCase {
  int line;
  std::string input, expected;
};

std::vector<FormatCase> formatCorpus(const std::string& name) {
  std::ifstream f(std::string(REDACT_CORPUS_DIR) + "/" + name);
  REQUIRE_MESSAGE(f.good(), "missing corpus " << name);
  std::vector<FormatCase> cases;
  std::string line;
  int n = 0;
  auto nl = [](std::string s) {
    for (std::size_t p; (p = s.find("{NL}")) != std::string::npos;) s.replace(p, 4, "\n");
    return s;
  };
  while (std::getline(f, line)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    const std::size_t tab = line.find('\t');
    const std::string in = nl(line.substr(0, tab));
    cases.push_back({n, in, tab == std::string::npos ? in : nl(line.substr(tab + 1))});
  }
  return cases;
}

// The parts of `input` that `expected` replaces by markers (those of 6 bytes or more
// that do not occur in `expected` itself: a check for them means something).
std::vector<std::string> secretsOf(const FormatCase& c) {
  std::vector<std::string> pieces;
  for (std::size_t pos = 0;;) {
    const std::size_t m = c.expected.find(kMarker, pos);
    pieces.push_back(c.expected.substr(pos, m == std::string::npos ? std::string::npos : m - pos));
    if (m == std::string::npos) break;
    pos = m + kMarker.size();
  }
  std::vector<std::string> secrets;
  if (!c.input.starts_with(pieces[0])) return secrets;
  std::size_t at = pieces[0].size();
  for (std::size_t i = 1; i < pieces.size(); ++i) {
    const bool last = i + 1 == pieces.size();
    const std::size_t next = last ? c.input.size() - pieces[i].size() : c.input.find(pieces[i], at + 1);
    if (next == std::string::npos || next < at) break;
    std::string s = c.input.substr(at, next - at);
    if (s.size() >= 6 && c.expected.find(s) == std::string::npos) secrets.push_back(s);
    at = next + pieces[i].size();
  }
  return secrets;
}

// JSON string literals as encoders write them.
enum class Style { kDump, kAscii, kAllEscaped, kSlashes };
constexpr Style kStyles[] = {Style::kDump, Style::kAscii, Style::kAllEscaped, Style::kSlashes};

std::string everyCharEscaped(std::string_view s) {
  std::string out = "\"";
  char buf[16];
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    std::uint32_t cp = c;
    std::size_t n = 1;
    if (c >= 0xF0) {
      cp = c & 7, n = 4;
    } else if (c >= 0xE0) {
      cp = c & 15, n = 3;
    } else if (c >= 0xC0) {
      cp = c & 31, n = 2;
    }
    for (std::size_t k = 1; k < n && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 63);
    i += n;
    if (cp >= 0x10000) {
      cp -= 0x10000;
      std::snprintf(buf, sizeof buf, "\\u%04X", 0xD800 + (cp >> 10));
      out += buf;
      cp = 0xDC00 + (cp & 0x3FF);
    }
    std::snprintf(buf, sizeof buf, "\\u%04x", cp);
    out += buf;
  }
  return out + "\"";
}

std::string encode(std::string_view s, Style style) {
  switch (style) {
    case Style::kDump: return json(s).dump();
    case Style::kAscii: return json(s).dump(-1, ' ', true);
    case Style::kAllEscaped: return everyCharEscaped(s);
    case Style::kSlashes: {
      std::string out;
      for (char c : json(s).dump()) out += c == '/' ? std::string("\\/") : std::string(1, c);
      return out;
    }
  }
  return {};
}

// The form a secret takes inside a string of that style, quotes off.
std::string escapedForm(std::string_view s, Style style) {
  const std::string e = encode(s, style);
  return e.substr(1, e.size() - 2);
}

void collectStrings(const json& j, std::vector<std::string>& out) {
  if (j.is_string()) {
    out.push_back(j.get<std::string>());
  } else if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      out.push_back(k);
      collectStrings(v, out);
    }
  } else if (j.is_array()) {
    for (const auto& v : j) collectStrings(v, out);
  }
}

std::vector<std::string> stringsOf(const json& j) {
  std::vector<std::string> out;
  collectStrings(j, out);
  return out;
}

bool anyContains(const std::vector<std::string>& strings, std::string_view needle) {
  for (const auto& s : strings) {
    if (s.find(needle) != std::string::npos) return true;
  }
  return false;
}

struct Event {
  std::vector<std::string> fields;  // "name:value" of the other fields
  std::string data;
  bool hasData = false;
};

// Events as a client reads them (the HTML Living Standard's rules).
std::vector<Event> readEvents(std::string_view s) {
  std::vector<Event> events;
  Event cur;
  bool any = false;
  std::size_t pos = 0;
  if (s.starts_with("\xEF\xBB\xBF")) pos = 3;
  while (pos < s.size()) {
    std::size_t e = s.find_first_of("\r\n", pos);
    const std::string_view line = s.substr(pos, e == std::string::npos ? std::string::npos : e - pos);
    pos = e == std::string::npos ? s.size() : e + (s[e] == '\r' && e + 1 < s.size() && s[e + 1] == '\n' ? 2 : 1);
    if (line.empty()) {
      if (any) events.push_back(cur);
      cur = Event{};
      any = false;
      continue;
    }
    if (line[0] == ':') continue;
    const std::size_t colon = line.find(':');
    const std::string_view name = line.substr(0, colon);
    std::string_view value = colon == std::string::npos ? std::string_view() : line.substr(colon + 1);
    if (value.starts_with(' ')) value.remove_prefix(1);
    any = true;
    if (name == "data") {
      if (cur.hasData) cur.data += '\n';
      cur.data += value;
      cur.hasData = true;
    } else {
      cur.fields.push_back(std::string(name) + ":" + std::string(value));
    }
  }
  if (any) events.push_back(cur);
  return events;
}

std::string feedPieces(FormatStreamRedactor& s, std::string_view text, std::mt19937_64& rng, std::size_t maxChunk) {
  std::string out;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t len = std::min<std::size_t>(1 + rng() % maxChunk, text.size() - pos);
    out += s.feed(text.substr(pos, len));
    pos += len;
  }
  return out + s.finish();
}

std::string shown(std::string_view s) {
  std::string v;
  for (unsigned char c : s) {
    if (c == '\n') {
      v += "\\n";
    } else if (c == '\r') {
      v += "\\r";
    } else if (c < 0x20 || c >= 0x7f) {
      char b[5];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      v += b;
    } else {
      v += static_cast<char>(c);
    }
  }
  return v;
}

// Recorded shapes (tests/providers): one answer carrying `text` as a text delta and as a
// tool argument `{"command": text}`, each in one delta.
std::string openAiChunk(const json& delta, const json& finish = nullptr) {
  json c{{"id", "chatcmpl-1"}, {"object", "chat.completion.chunk"}, {"created", 1}, {"model", "m"},
         {"choices", json::array({{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}})}};
  return "data: " + c.dump() + "\n\n";
}

std::string openAiStream(const std::string& text) {
  const json call{{"index", 0}, {"id", "call_A"}, {"type", "function"},
                  {"function", {{"name", "bash"}, {"arguments", json{{"command", text}}.dump()}}}};
  return ": keep-alive\n\n" + openAiChunk({{"role", "assistant"}, {"content", ""}}) + openAiChunk({{"content", text}}) +
         openAiChunk({{"tool_calls", json::array({call})}}) + openAiChunk(json::object(), "tool_calls") +
         "data: {\"id\":\"chatcmpl-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":1200,\"completion_tokens\":45}}\n\n"
         "data: [DONE]\n\n";
}

std::string anthropicEvent(const json& data) {
  return "event: " + data["type"].get<std::string>() + "\ndata: " + data.dump() + "\n\n";
}

std::string anthropicStream(const std::string& text) {
  return anthropicEvent({{"type", "message_start"},
                         {"message", {{"id", "msg_1"}, {"type", "message"}, {"role", "assistant"}, {"model", "claude"},
                                      {"content", json::array()}, {"usage", {{"input_tokens", 25}, {"output_tokens", 1}}}}}}) +
         anthropicEvent({{"type", "content_block_start"}, {"index", 0}, {"content_block", {{"type", "text"}, {"text", ""}}}}) +
         "event: ping\ndata: {\"type\": \"ping\"}\n\n" +
         anthropicEvent({{"type", "content_block_delta"}, {"index", 0}, {"delta", {{"type", "text_delta"}, {"text", text}}}}) +
         anthropicEvent({{"type", "content_block_stop"}, {"index", 0}}) +
         anthropicEvent({{"type", "content_block_start"}, {"index", 1},
                         {"content_block", {{"type", "tool_use"}, {"id", "toolu_A"}, {"name", "bash"}, {"input", json::object()}}}}) +
         anthropicEvent({{"type", "content_block_delta"}, {"index", 1},
                         {"delta", {{"type", "input_json_delta"}, {"partial_json", json{{"command", text}}.dump()}}}}) +
         anthropicEvent({{"type", "content_block_stop"}, {"index", 1}}) +
         anthropicEvent({{"type", "message_delta"}, {"delta", {{"stop_reason", "tool_use"}}}, {"usage", {{"output_tokens", 89}}}}) +
         anthropicEvent({{"type", "message_stop"}});
}

// Every event's data still parses (or is what it was, [DONE]), the framing and the
// protocol fields are as they were, and no secret is left in any decoded string.
void checkStream(const std::string& label, const std::string& in, const std::string& out,
                 const std::vector<std::string>& secrets) {
  const auto before = readEvents(in), after = readEvents(out);
  REQUIRE_MESSAGE(before.size() == after.size(), label << ": events " << before.size() << " -> " << after.size());
  for (std::size_t i = 0; i < before.size(); ++i) {
    CHECK_MESSAGE(before[i].fields == after[i].fields, label << ": event " << i);
    if (before[i].data == "[DONE]") {
      CHECK(after[i].data == "[DONE]");
      continue;
    }
    const json a = json::parse(before[i].data, nullptr, false), b = json::parse(after[i].data, nullptr, false);
    REQUIRE(!a.is_discarded());
    if (b.is_discarded()) {
      FAIL_CHECK(label << ": event " << i << " is not valid JSON any more: " << shown(after[i].data));
      continue;
    }
    // What the decoders dispatch on and count with stays.
    for (const char* k : {"type", "id", "object", "model", "usage", "index"}) {
      if (a.is_object() && a.contains(k)) CHECK_MESSAGE(b.value(k, json()) == a[k], label << ": event " << i << " " << k);
    }
    const auto strings = stringsOf(b);
    for (const auto& s : secrets) {
      CHECK_MESSAGE(!anyContains(strings, s), label << ": event " << i << " keeps " << shown(s));
      // One level down: the tool argument is JSON text itself.
      CHECK_MESSAGE(!anyContains(strings, escapedForm(s, Style::kDump)), label << ": event " << i);
    }
  }
}

}  // namespace

TEST_CASE("format: every corpus secret inside a JSON string: valid JSON out, no secret left, in any escaping") {
  const Redactor r({});
  int docs = 0, first = 0, exact = 0, failures = 0;
  for (const FormatCase& c : formatCorpus("secrets.txt")) {
    const auto secrets = secretsOf(c);
    for (Style style : kStyles) {
      const std::string str = encode(c.input, style);
      const std::vector<std::string> shapes = {
          "{\"command\": " + str + ", \"n\": 1}",
          "[" + str + "," + str + "]\n",
          "{\"a\": {\"b\": [1, " + str + ", null]}, \"after\": \"kept\"}",
          "{" + str + ": true}",  // as a key
      };
      for (const std::string& doc : shapes) {
        ++docs;
        const std::string out = r.redact(doc, Format::kJson);
        const json j = json::parse(out, nullptr, false);
        if (j.is_discarded()) {
          if (++failures <= 10) FAIL_CHECK("secrets.txt:" << c.line << ": not JSON any more\n  in:  " << shown(doc) << "\n  out: " << shown(out));
          continue;
        }
        const auto strings = stringsOf(j);
        for (const auto& s : secrets) {
          if (anyContains(strings, s) || out.find(escapedForm(s, style)) != std::string::npos) {
            if (++failures <= 10) FAIL_CHECK("secrets.txt:" << c.line << ": keeps " << shown(s) << "\n  out: " << shown(out));
          }
        }
        if (doc == shapes[0]) {
          ++first;
          if (j["command"] == c.expected && j["n"] == 1) {
            ++exact;
          } else {
            MESSAGE("secrets.txt:" << c.line << " more than redact() takes: " << shown(out));
          }
        }
      }
      // A JSON-encoded tool argument: the secret is escaped twice.
      const std::string nested = json{{"arguments", "{\"command\": " + str + "}"}}.dump();
      ++docs;
      const std::string out = r.redact(nested, Format::kJson);
      const json j = json::parse(out, nullptr, false);
      REQUIRE_MESSAGE(!j.is_discarded(), shown(out));
      for (const auto& s : secrets) {
        CHECK_MESSAGE(j["arguments"].get<std::string>().find(escapedForm(s, style)) == std::string::npos,
                      "secrets.txt:" << c.line << ": " << shown(out));
      }
    }
  }
  CHECK(failures == 0);
  // The decoded scan is redact() of the decoded text: with no escape tricks the value
  // comes out as the corpus expects it (the raw scan may take a little more, never less).
  CHECK(exact * 100 >= first * 99);
  MESSAGE(docs << " documents, " << exact << " values exactly as redact() gives them");
}

TEST_CASE("format: every corpus secret inside OpenAI- and Anthropic-shaped event streams, whole and split") {
  const Redactor r({});
  std::mt19937_64 rng(11);
  int streams = 0, splits = 0, mismatches = 0;
  for (const FormatCase& c : formatCorpus("secrets.txt")) {
    const auto secrets = secretsOf(c);
    for (const auto& [name, in] : {std::pair<std::string, std::string>{"openai", openAiStream(c.input)},
                                   {"anthropic", anthropicStream(c.input)}}) {
      // As sent, with \r\n line ends, and with each event's JSON over two data lines.
      std::string crlf, multi;
      for (char ch : in) crlf += ch == '\n' ? std::string("\r\n") : std::string(1, ch);
      for (std::size_t pos = 0, e; (e = in.find("\n\n", pos)) != std::string::npos; pos = e + 2) {
        std::string event = in.substr(pos, e - pos);
        if (auto open = event.find("data: {"); open != std::string::npos) event.insert(open + 7, "\ndata: ");
        multi += event + "\n\n";
      }
      for (const std::string* text : std::initializer_list<const std::string*>{&in, &crlf, &multi}) {
        ++streams;
        const std::string label = name + " secrets.txt:" + std::to_string(c.line);
        const std::string whole = r.redact(*text, Format::kEventStream);
        checkStream(label, *text, whole, secrets);
        for (std::size_t maxChunk : {1u, 7u, 64u, 4096u}) {
          ++splits;
          FormatStreamRedactor s(r, Format::kEventStream);
          const std::string got = feedPieces(s, *text, rng, maxChunk);
          if (got != whole && ++mismatches <= 5) {
            FAIL_CHECK(label << " chunk " << maxChunk << "\n  whole:  " << shown(whole) << "\n  stream: " << shown(got));
          }
        }
      }
    }
  }
  CHECK(mismatches == 0);
  MESSAGE(streams << " streams, " << splits << " splits");
}

TEST_CASE("format: secrets over escaped newlines, spelled with escapes, and at escape boundaries") {
  const Redactor r({"known-secret-value-42", "\xA9" "abcdefghij", "nABCDEFGHIJ"});
  auto j = [&](const std::string& s) { return r.redact(s, Format::kJson); };
  // A PEM block whose line ends are escapes, in every spelling, and lines around it stay.
  for (const std::string nl : {"\\n", "\\u000a", "\\r\\n", "\\u000D\\u000A"}) {
    const std::string doc = "{\"file\":\"line one" + nl + "-----BEGIN RSA PRIVATE KEY-----" + nl + "MIIEowIBAAKCAQEAx1" + nl +
                            "abcd+/==" + nl + "-----END RSA PRIVATE KEY-----" + nl + "line three\"}";
    const std::string out = j(doc);
    CHECK_MESSAGE(out == "{\"file\":\"line one" + nl + "[redacted]" + nl + "line three\"}", out);
  }
  // Dashes as escapes: only the decoded scan can see the header.
  CHECK(j(R"({"k":"\u002d\u002d\u002d\u002d\u002dBEGIN PRIVATE KEY\u002d\u002d\u002d\u002d\u002d\nMIIEvQIBADAN\n-----END PRIVATE KEY-----"})") ==
        R"({"k":"[redacted]"})");
  CHECK(j(R"({"a":"\u0041PI_KEY=abcdefghijklmnop1234"})") == R"({"a":"\u0041PI_KEY=[redacted]"})");
  CHECK(j(R"({"a":"https:\/\/user:pa55w0rdXYZ@host.example.com\/x"})") == R"({"a":"https:\/\/user:[redacted]@host.example.com\/x"})");
  CHECK(j(R"({"a":"known-\u0073ecret-value-42!"})") == R"({"a":"[redacted]!"})");
  CHECK(j(R"({"a":"password: hunter2\nnext line"})") == R"({"a":"password: [redacted]\nnext line"})");
  CHECK(j(R"({"a":"tok ghp_\u0061BcDeFgHiJkLmNoPqRsTuVwXyZ0123456789 end"})") == R"({"a":"tok [redacted] end"})");
  // A match that starts inside an escape or a UTF-8 character takes all of it: the plain
  // redaction would leave "\[redacted]" (a broken escape) or half a character.
  CHECK(r.redact(R"({"a":"x\nABCDEFGHIJ"})") == R"({"a":"x\[redacted]"})");
  CHECK(j(R"({"a":"x\nABCDEFGHIJ"})") == R"({"a":"x[redacted]"})");
  CHECK(j("{\"a\":\"x\xC2\xA9" "abcdefghij\"}") == R"({"a":"x[redacted]"})");
  CHECK(json::accept(j("{\"a\":\"x\xC2\xA9" "abcdefghij\"}")));
  CHECK_FALSE(json::accept(r.redact("{\"a\":\"x\xC2\xA9" "abcdefghij\"}")));
  // Surrogate pairs stay whole next to a secret.
  CHECK(j(R"({"a":"\ud83d\ude00ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789\ud83d\ude00"})") ==
        R"({"a":"\ud83d\ude00[redacted]\ud83d\ude00"})");
  // The unquoted --token value no longer takes the quote that closes its string.
  CHECK(r.redact(R"({"command":"vault login --token cc92VE4HPcJireNuuE5LZHPC"})") ==
        R"({"command":"vault login --token [redacted]"})");
  CHECK(r.redact(R"({\"command\":\"vault login --token cc92VE4HPcJireNuuE5LZHPC\"})") ==
        R"({\"command\":\"vault login --token [redacted]\"})");
  CHECK(r.redact("vault login --token cc92VE4HPcJireNuuE5LZHPC") == "vault login --token [redacted]");
}

TEST_CASE("format: numbers, keys and structure") {
  const Redactor r({"12345678901", "known-key-value-1"});
  auto j = [&](const std::string& s) { return r.redact(s, Format::kJson); };
  CHECK(j(R"({"pin": 12345678901, "n": 1234567890})") == R"({"pin": "[redacted]", "n": 1234567890})");
  CHECK(j(R"([9123456789012e5])") == R"(["[redacted]"])");  // a known value inside a number
  CHECK(j(R"({"known-key-value-1": 1, "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789": [true, false, null]})") ==
        R"({"[redacted]": 1, "[redacted]": [true, false, null]})");
  // Only the value of a secret-named key goes; the key and what follows stay.
  CHECK(j(R"({"password": "p@ss w0rd with spaces", "user": "bob"})") == R"({"password": "[redacted]", "user": "bob"})");
  CHECK(j(R"({"password":"with \"escaped\" quote","ok":true})") == R"({"password":"[redacted]","ok":true})");
  CHECK(j("") == "");
  CHECK(j("  \n") == "  \n");
  CHECK(j("\xEF\xBB\xBF{\"a\":\"ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789\"}") == "\xEF\xBB\xBF{\"a\":\"[redacted]\"}");
  CHECK(j(R"({"a":"x"} {"b":"sk-proj-abcdefghijklmnopqrstuvwx1234"})") == R"({"a":"x"} {"b":"[redacted]"})");
}

TEST_CASE("format: a plain match running past its field reaches only the same field, not the protocol around it") {
  const Redactor r({});
  // llama.cpp puts id, model and usage after the delta: a private key header without its
  // END runs to the end of the line in the plain scan, which must not blank them.
  const std::string llama =
      R"(data: {"choices":[{"finish_reason":null,"index":0,"delta":{"content":"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx1"}}],)"
      R"("created":1712345678,"id":"chatcmpl-x","model":"m","object":"chat.completion.chunk","usage":{"prompt_tokens":10,"completion_tokens":2}})"
      "\n\n";
  const std::string out = r.redact(llama, Format::kEventStream);
  CHECK(out == R"(data: {"choices":[{"finish_reason":null,"index":0,"delta":{"content":"[redacted]"}}],)"
               R"("created":1712345678,"id":"chatcmpl-x","model":"m","object":"chat.completion.chunk","usage":{"prompt_tokens":10,"completion_tokens":2}})"
               "\n\n");
  // A key streamed over several events: the plain scan finds BEGIN...END across them, and
  // every later piece of the same field goes too, while "type" and "index" stay.
  auto delta = [](const std::string& piece) {
    return anthropicEvent({{"type", "content_block_delta"}, {"index", 1},
                           {"delta", {{"type", "input_json_delta"}, {"partial_json", piece}}}});
  };
  const std::string stream = delta("{\"command\": \"cat > k <<EOF\\n-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1r") +
                             delta("ZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW") +
                             "event: ping\ndata: {\"type\": \"ping\"}\n\n" +
                             delta("QyNTUxOQAAACBzdWJzdGFudGlhbGx5\\n-----END OPENSSH PRIVATE KEY-----\\nEOF\"}") +
                             anthropicEvent({{"type", "content_block_stop"}, {"index", 1}});
  const std::string got = r.redact(stream, Format::kEventStream);
  const auto events = readEvents(got);
  REQUIRE(events.size() == 5);
  std::string args;
  for (const auto& e : events) {
    const json d = json::parse(e.data);
    CHECK(d.contains("type"));
    if (d["type"] == "content_block_delta") {
      CHECK(d["index"] == 1);
      CHECK(d["delta"]["type"] == "input_json_delta");
      args += d["delta"]["partial_json"].get<std::string>();
    }
  }
  CHECK(args.find("b3BlbnNzaC1r") == std::string::npos);
  CHECK(args.find("ZXktdjEAAAAABG5vbmU") == std::string::npos);
  CHECK(args.find("QyNTUxOQAAACBzdWJz") == std::string::npos);
  CHECK(args.starts_with("{\"command\": \"cat > k <<EOF\\n[redacted]"));
}

TEST_CASE("format: event stream framing, other fields and non-JSON data") {
  const Redactor r({"known-secret-value-42"});
  auto e = [&](const std::string& s) { return r.redact(s, Format::kEventStream); };
  CHECK(e(": keep-alive known-secret-value-42\n\n") == ": keep-alive [redacted]\n\n");
  CHECK(e("event: known-secret-value-42\nid: known-secret-value-42\ndata: {}\n\n") == "event: [redacted]\nid: [redacted]\ndata: {}\n\n");
  CHECK(e("data: [DONE]\n\n") == "data: [DONE]\n\n");
  // Data that is not JSON is plain text, to the end of its event.
  CHECK(e("data: password=hunter2xyz\ndata: {\"a\":\"known-secret-value-42\"}\n\ndata: {\"b\":\"known-secret-value-42\"}\n\n") ==
        "data: password=[redacted]\ndata: {\"a\":\"[redacted]\"}\n\ndata: {\"b\":\"[redacted]\"}\n\n");
  // One JSON value over data lines, with other fields between them; \r and \r\n ends.
  CHECK(e("data: {\"a\":\r\nevent: x\r\ndata: \"known-secret-value-42\"}\r\r") ==
        "data: {\"a\":\r\nevent: x\r\ndata: \"[redacted]\"}\r\r");
  // A line that is no field is plain text; a field name alone is a field.
  CHECK(e("sk-proj-abcdefghijklmnopqrstuvwx1234\ndata\n\n") == "[redacted]\ndata\n\n");
  CHECK(e("datum: known-secret-value-42\n") == "datum: [redacted]\n");
  // A string cannot run past its line: the rest of the event is plain text.
  CHECK(e("data: {\"a\":\"open\ndata: known-secret-value-42\"}\n\n") == "data: {\"a\":\"open\ndata: [redacted]\"}\n\n");
}

TEST_CASE("format: malformed JSON is redacted at least as strongly as redact() does") {
  const Redactor r({"known-secret-value-42"});
  std::mt19937_64 rng(5);
  int checked = 0, failures = 0;
  for (const FormatCase& c : formatCorpus("secrets.txt")) {
    const auto secrets = secretsOf(c);
    const std::string good = "{\"command\": " + encode(c.input, Style::kDump) + ", \"k\": \"known-secret-value-42\"}";
    for (int k = 0; k < 4; ++k) {
      std::string bad = good;
      switch (k) {
        case 0: bad.erase(bad.find('"'), 1); break;                       // a key without its quote
        case 1: bad = bad.substr(0, 10 + rng() % (bad.size() - 10)); break;  // cut off
        case 2: bad.insert(1 + rng() % (bad.size() - 1), 1, "\x01'}\\\"{x"[rng() % 7]); break;
        default: bad = "data: " + bad; break;  // not JSON at all
      }
      const std::string plain = r.redact(bad), out = r.redact(bad, Format::kJson);
      ++checked;
      for (const std::string& s : secrets) {
        const std::string form = escapedForm(s, Style::kDump);
        if (plain.find(form) == std::string::npos && out.find(form) != std::string::npos && ++failures <= 10) {
          FAIL_CHECK("secrets.txt:" << c.line << ": plain redact() removes " << shown(s) << ", this keeps it\n  in:  "
                                    << shown(bad) << "\n  out: " << shown(out));
        }
      }
      if (bad.find("known-secret-value-42") != std::string::npos) CHECK(out.find("known-secret-value-42") == std::string::npos);
    }
  }
  CHECK(failures == 0);
  CHECK(checked > 1500);
  // After a syntax error the rest of the line is plain text, and the next line is JSON again.
  CHECK(r.redact("{\"a\": x \"password\": \"hunter2\"}\n{\"b\":\"known-secret-value-42\"}\n", Format::kJson) ==
        "{\"a\": x \"password\": \"[redacted]\"}\n{\"b\":\"[redacted]\"}\n");
}

namespace {

// Documents and event streams from the corpus, with odd bytes, long strings and
// numbers, for the stream-equals-whole checks.
std::string formatSample(std::mt19937_64& rng, const std::vector<FormatCase>& corpus, Format format) {
  auto pick = [&] { return corpus[rng() % corpus.size()].input; };
  std::string s;
  for (int k = 1 + static_cast<int>(rng() % 5); k > 0; --k) {
    std::string piece;
    switch (rng() % 6) {
      case 0: piece = format == Format::kJson ? json{{"a", pick()}, {"n", rng() % 100000}}.dump() + "\n" : openAiStream(pick()); break;
      case 1: piece = format == Format::kJson ? json::array({pick(), 12345678901ll, nullptr}).dump(2) + "\n" : anthropicStream(pick()); break;
      case 2: piece = encode(pick() + std::string(200 + rng() % 3000, 'x') + pick(), kStyles[rng() % 4]); break;
      case 3: piece = "{\"k\": \"" + pick(); break;  // unterminated
      case 4: piece = pick() + "\n"; break;
      default:
        for (int i = static_cast<int>(rng() % 30); i > 0; --i) piece += "{}[]\",:\\nu \r\n-0e.x"[rng() % 19];
    }
    s += piece;
  }
  return s;
}

}  // namespace

TEST_CASE("format: the stream gives the whole text's output for thousands of random splits, at the caps too") {
  const auto corpus = formatCorpus("secrets.txt");
  const Redactor r({"known-secret-value-42", "12345678901", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"});
  std::mt19937_64 rng(99);
  int splits = 0, failures = 0;
  for (int n = 0; n < 1200; ++n) {
    const Format format = n % 2 ? Format::kJson : Format::kEventStream;
    const std::string text = formatSample(rng, corpus, format);
    const bool shrunk = n % 3 == 0;
    const std::size_t maxHold = 64 + rng() % 1500, tail = maxHold / (2 + rng() % 6), context = maxHold / (2 + rng() % 12);
    const std::size_t hold = 1 + rng() % 300;
    const std::string whole = shrunk ? FormatTesting::whole(r, format, text, maxHold, tail, context, hold)
                                     : r.redact(text, format);
    for (std::size_t maxChunk : {1u, 3u, 17u, 200u, 100000u}) {
      ++splits;
      FormatStreamRedactor s = shrunk ? FormatTesting::make(r, format, maxHold, tail, context, hold)
                                      : FormatStreamRedactor(r, format);
      const std::string got = feedPieces(s, text, rng, maxChunk);
      if (got != whole && ++failures <= 5) {
        FAIL_CHECK((shrunk ? "shrunk " : "") << "chunk " << maxChunk << "\n  input:  " << shown(text)
                                             << "\n  whole:  " << shown(whole) << "\n  stream: " << shown(got));
      }
      // A stream is ready for the next input after finish().
      if (maxChunk == 17u) CHECK(feedPieces(s, text, rng, 50) == whole);
    }
  }
  CHECK(failures == 0);
  MESSAGE(splits << " splits");
}

TEST_CASE("format: memory stays bounded on long strings, long lines and deep nesting") {
  const Redactor r({"Kn0wn-Secret-Value"});
  // Every text below is at least twice this bound (kMaxHold is 1 MiB), so that holding it whole fails.
  const std::size_t bound = 2 * pine::redact::StreamRedactor::kMaxHold + 128 * 1024;
  auto run = [&](Format format, const std::function<std::string(int)>& piece, int count, std::size_t& maxHeld) {
    FormatStreamRedactor s(r, format);
    std::string text, out;
    for (int i = 0; i < count; ++i) {
      const std::string p = piece(i);
      text += p;
      out += s.feed(p);
      maxHeld = std::max(maxHeld, FormatTesting::held(s));
    }
    out += s.finish();
    CHECK(out == r.redact(text, format));
    MESSAGE("held at most " << maxHeld << " bytes of " << text.size());
    return out;
  };
  SUBCASE("one 6 MiB string with secrets in it, in \\u escapes too") {
    std::size_t maxHeld = 0;
    const std::string out = run(Format::kJson, [](int i) {
      if (i == 0) return std::string("{\"content\": \"");
      if (i == 601) return std::string("\"}\n");
      std::string p;
      while (p.size() < 10 * 1024) p += i % 3 ? "lorem ipsum \\u0064olor \\n" : "abc\\u00e9\\ud83d\\ude00 ";
      return p + (i % 50 == 0 ? "Kn0wn-\\u0053ecret-Value " : i % 7 == 0 ? "password=Hunter2Secret9 " : "");
    }, 602, maxHeld);
    CHECK(maxHeld <= bound);
    CHECK(json::accept(out));
    CHECK(out.find("Hunter2Secret9") == std::string::npos);
    CHECK(json::parse(out)["content"].get<std::string>().find("Kn0wn-Secret-Value") == std::string::npos);
  }
  SUBCASE("a 5 MiB string of nothing but \\u escapes: six raw bytes for every byte scanned") {
    std::size_t maxHeld = 0;
    const std::string out = run(Format::kJson, [](int i) {
      if (i == 0) return std::string("[\"");
      if (i == 501) return std::string("\"]");
      std::string p;
      for (int k = 0; k < 1700; ++k) p += "\\u0041";
      return p + (i % 100 == 0 ? "Kn0wn-Secret-Value" : "");
    }, 502, maxHeld);
    CHECK(maxHeld <= bound);
    CHECK(json::accept(out));
    CHECK(out.find("Kn0wn-Secret-Value") == std::string::npos);
  }
  SUBCASE("a 7 MiB data line of many small values") {
    std::size_t maxHeld = 0;
    run(Format::kEventStream, [](int i) {
      if (i == 0) return std::string("data: [");
      if (i == 2001) return std::string("0]\n\n");
      std::string p;
      for (int k = 0; k < 100; ++k) p += "1,\"a\",{\"password\":\"Hunter2Secret9\"},";
      return p;
    }, 2002, maxHeld);
    CHECK(maxHeld <= bound);
  }
  SUBCASE("nesting deeper than kMaxDepth is a syntax error, and the rest is plain") {
    std::size_t maxHeld = 0;
    const std::string out = run(Format::kJson, [](int i) {
      if (i < 100) return std::string(1000, '[');
      return std::string("\"password\": \"Hunter2Secret9\"\n");
    }, 101, maxHeld);
    CHECK(maxHeld <= bound);
    CHECK(out.find("Hunter2Secret9") == std::string::npos);
  }
}

TEST_CASE("format: a Content-Type chooses the format") {
  using pine::redact::formatFor;
  CHECK(formatFor("application/json") == Format::kJson);
  CHECK(formatFor("Application/JSON; charset=utf-8") == Format::kJson);
  CHECK(formatFor("application/problem+json") == Format::kJson);
  CHECK(formatFor("application/vnd.api+json;v=2") == Format::kJson);
  CHECK(formatFor("application/x-ndjson") == Format::kJson);
  CHECK(formatFor("application/jsonl") == Format::kJson);
  CHECK(formatFor("text/event-stream") == Format::kEventStream);
  CHECK(formatFor(" text/event-stream ; charset=utf-8") == Format::kEventStream);
  CHECK(formatFor("text/plain") == Format::kPlain);
  CHECK(formatFor("application/jsonx") == Format::kPlain);
  CHECK(formatFor("+json") == Format::kPlain);
  CHECK(formatFor("") == Format::kPlain);
  // kPlain is redact() itself.
  const Redactor r({});
  const std::string t = "{\"a\":\"x\\nABCDEFGHIJ ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789\"}";
  CHECK(r.redact(t, Format::kPlain) == r.redact(t));
  FormatStreamRedactor s(r, Format::kPlain);
  std::string out = s.feed(t);
  out += s.finish();
  CHECK(out == r.redact(t));
}

TEST_CASE("format: an audit line with secret-shaped arguments stays valid JSON, and the secrets are gone") {
  char dir[] = "/tmp/pine-redact-audit-XXXXXX";
  REQUIRE(mkdtemp(dir));
  const std::string aud = std::string(dir) + "/audit.jsonl";
  pine::setupAudit(aud);
  auto r = std::make_shared<const Redactor>(std::vector<std::string>{"known-secret-value-42"});
  pine::setLogFilter([r](std::string_view line) { return r->redact(line); },
                     [r](std::string_view line) { return r->redact(line, Format::kJson); });
  const std::string key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n";  // no END
  pine::audit("tool.call", {{"tool", "bash"},
                            {"args", json{{"command", "cat > id <<EOF\n" + key}}.dump()},
                            {"env", "API_KEY=abcdefghijklmnop1234"},
                            {"cmd", "vault login --token cc92VE4HPcJireNuuE5LZHPC"},
                            {"k", "known-\u00e9-known-secret-value-42"},
                            {"after", "kept"}});
  // What the plain filter does to that line: the key runs to the end of the line.
  const std::string sample = json{{"args", json{{"command", key}}.dump()}, {"after", "kept"}}.dump();
  CHECK_FALSE(json::accept(r->redact(sample)));
  pine::setLogFilter({});
  std::ifstream a(aud);
  std::stringstream as;
  as << a.rdbuf();
  std::filesystem::remove_all(dir);
  const json line = json::parse(as.str(), nullptr, false);
  REQUIRE_MESSAGE(!line.is_discarded(), as.str());
  CHECK(line["event"] == "tool.call");
  CHECK(line["tool"] == "bash");
  CHECK(line["after"] == "kept");
  CHECK(line["env"] == "API_KEY=[redacted]");
  CHECK(line["cmd"] == "vault login --token [redacted]");
  CHECK(line["k"] == "known-\u00e9-[redacted]");
  CHECK(as.str().find("b3BlbnNzaC1rZXkt") == std::string::npos);
  CHECK(as.str().find("abcdefghijklmnop1234") == std::string::npos);
  CHECK(line["args"].get<std::string>().starts_with("{\"command\":\"cat > id <<EOF\\n[redacted]"));
}
