#include "providers/reply_script.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>
#include <vector>

#include "config/yaml_load.h"

namespace pine::model {

using nlohmann::json;

ScriptError::ScriptError(std::string file_, int line_, int column_, const std::string& message)
    : std::runtime_error(file_ + (line_ > 0 ? ":" + std::to_string(line_) + ":" + std::to_string(column_) : "") + ": " +
                         message),
      file(std::move(file_)),
      line(line_),
      column(column_) {}

namespace {

struct Reader {
  const std::string& file;

  [[noreturn]] void fail(const YAML::Node& at, const std::string& message) const {
    const YAML::Mark m = at.Mark();
    if (m.is_null()) throw ScriptError(file, 0, 0, message);
    throw ScriptError(file, m.line + 1, m.column + 1, message);
  }

  void keys(const YAML::Node& map, const std::set<std::string>& allowed, const std::string& where) const {
    if (!map.IsMap()) fail(map, where + " must be a map");
    for (const auto& kv : map) {
      const std::string k = kv.first.Scalar();
      if (!allowed.count(k)) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        fail(kv.first, "unknown key '" + k + "' in " + where + " (allowed: " + list + ")");
      }
    }
  }

  std::string text(const YAML::Node& n, const std::string& what) const {
    if (!n.IsScalar()) fail(n, what + " must be text");
    return n.Scalar();
  }

  // Digits only, 0..kMaxCount: the same range the decoders accept from a provider, so the
  // stream the script sends always decodes and its sums cannot overflow.
  long long count(const YAML::Node& n, const std::string& what) const {
    if (!n.IsScalar()) fail(n, what + " must be a whole number");
    const std::string& s = n.Scalar();
    const std::string range = "0 to " + std::to_string(kMaxCount);
    long long v = 0;
    bool ok = !s.empty() && s.size() <= 16;  // kMaxCount has 16 digits
    for (char c : s) ok = ok && c >= '0' && c <= '9';
    if (ok)
      for (char c : s) v = v * 10 + (c - '0');
    if (!ok || v > kMaxCount)
      fail(n, what + " must be a whole number of tokens, " + range + " (not '" + s + "')");
    return v;
  }

  // Deepest arguments accepted: toJson and the JSON's dump recurse once per level.
  static constexpr int kMaxArgumentDepth = 64;

  // YAML to JSON: quoted scalars stay strings; plain ones are read as null, bool or number when they look it.
  json toJson(const YAML::Node& n, int depth = 0) const {
    if (depth > kMaxArgumentDepth)
      fail(n, "arguments nest more than " + std::to_string(kMaxArgumentDepth) + " levels deep");
    switch (n.Type()) {
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
        return nullptr;
      case YAML::NodeType::Sequence: {
        json a = json::array();
        for (const auto& e : n) a.push_back(toJson(e, depth + 1));
        return a;
      }
      case YAML::NodeType::Map: {
        json o = json::object();
        for (const auto& kv : n) o[kv.first.Scalar()] = toJson(kv.second, depth + 1);
        return o;
      }
      case YAML::NodeType::Scalar:
        break;
    }
    const std::string& s = n.Scalar();
    if (n.Tag() != "?") return s;  // quoted
    if (s == "null" || s == "~") return nullptr;
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
    auto number = json::parse(s, nullptr, false);
    if (!number.is_discarded() && number.is_number()) return number;
    return s;
  }

  ReplyScript::Call call(const YAML::Node& n) const {
    keys(n, {"id", "name", "arguments"}, "a tool call");
    ReplyScript::Call c;
    if (!n["name"]) fail(n, "a tool call needs a name (the tool to call)");
    c.name = text(n["name"], "name");
    // A nameless call is an answer no client can read (the decoder refuses it).
    if (c.name.empty()) fail(n["name"], "a tool call's name must not be empty");
    if (n["id"]) c.id = text(n["id"], "id");
    const YAML::Node a = n["arguments"];
    if (!a || a.IsNull()) {
      c.arguments = "{}";
    } else if (a.IsScalar()) {
      c.arguments = a.Scalar();  // JSON text as written: lets a script send what a model would get wrong
    } else if (a.IsMap()) {
      c.arguments = toJson(a).dump(-1, ' ', false, json::error_handler_t::replace);
    } else {
      fail(a, "arguments must be a map (or JSON text)");
    }
    return c;
  }

  ReplyScript::ScriptTurn turn(const YAML::Node& n) const {
    keys(n, {"text", "tool_calls", "usage"}, "a turn");
    ReplyScript::ScriptTurn t;
    if (n["text"]) t.text = text(n["text"], "text");
    if (const YAML::Node calls = n["tool_calls"]) {
      if (!calls.IsSequence()) fail(calls, "tool_calls must be a list of {name, arguments}");
      for (const auto& c : calls) t.toolCalls.push_back(call(c));
    }
    if (!n["text"] && t.toolCalls.empty()) fail(n, "a turn needs text, tool_calls or both");
    if (const YAML::Node u = n["usage"]) {
      keys(u, {"input", "output"}, "usage");
      Usage usage;
      if (u["input"]) usage.input = count(u["input"], "usage.input");
      if (u["output"]) usage.output = count(u["output"], "usage.output");
      t.usage = usage;
    }
    return t;
  }
};

// The text of a message's content: a string or a list of {type: text, text} parts.
std::string messageText(const json& m) {
  auto it = m.find("content");
  if (it == m.end()) return {};
  if (it->is_string()) return it->get<std::string>();
  std::string out;
  if (it->is_array())
    for (const auto& p : *it)
      if (p.is_object() && p.contains("text") && p["text"].is_string()) out += p["text"].get<std::string>();
  return out;
}

std::string roleOf(const json& m) {
  return m.is_object() && m.contains("role") && m["role"].is_string() ? m["role"].get<std::string>() : "";
}

// Pieces of at most n bytes, never inside a UTF-8 character.
std::vector<std::string> pieces(const std::string& s, std::size_t n) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < s.size()) {
    std::size_t end = std::min(s.size(), pos + n);
    while (end < s.size() && end > pos + 1 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
    out.push_back(s.substr(pos, end - pos));
    pos = end;
  }
  return out;
}

long long estimate(std::size_t chars) {
  return std::clamp<long long>(static_cast<long long>(chars / 4 + (chars % 4 != 0)), 1, kMaxCount);
}

// About the length of j.dump(), without its recursion: the request comes from the
// worker, and a deeply nested one must not overflow the stack that answers it.
std::size_t dumpedSize(const json& j) {
  std::size_t size = 0;
  std::vector<const json*> todo{&j};
  while (!todo.empty()) {
    const json* v = todo.back();
    todo.pop_back();
    if (v->is_object()) {
      size += 1 + v->size();  // braces and commas
      for (auto it = v->begin(); it != v->end(); ++it) {
        size += it.key().size() + 3;  // "key":
        todo.push_back(&it.value());
      }
    } else if (v->is_array()) {
      size += 1 + v->size();
      for (const auto& e : *v) todo.push_back(&e);
    } else if (v->is_string()) {
      size += v->get_ref<const std::string&>().size() + 2;
    } else {
      size += v->dump().size();  // a scalar: no recursion
    }
  }
  return size;
}

}  // namespace

ReplyScript ReplyScript::parse(const std::string& yamlText, const std::string& file) {
  Reader r{file};
  YAML::Node root;
  try {
    root = config::loadYaml(yamlText);  // bounded: no input loops or expands (config/yaml_load.h)
  } catch (const YAML::Exception& e) {
    throw ScriptError(file, e.mark.is_null() ? 0 : e.mark.line + 1, e.mark.is_null() ? 0 : e.mark.column + 1,
                      "not valid YAML: " + e.msg);
  }
  if (!root || root.IsNull()) throw ScriptError(file, 0, 0, "the script is empty; it needs a `replies:` list");
  try {
    r.keys(root, {"replies"}, "the script");
    const YAML::Node replies = root["replies"];
    if (!replies || !replies.IsSequence() || replies.size() == 0)
      r.fail(replies ? replies : root, "`replies:` must be a list of rules, at least one");
    ReplyScript script;
    for (const auto& n : replies) {
      r.keys(n, {"match", "text", "turns"}, "a rule");
      Rule rule;
      rule.line = n.Mark().line + 1;
      if (n["match"] && !n["match"].IsNull()) rule.match = r.text(n["match"], "match");
      if (n["text"] && n["turns"]) r.fail(n["turns"], "a rule has either text or turns, not both");
      if (n["text"]) {
        rule.turns.push_back({r.text(n["text"], "text"), {}, std::nullopt});
      } else if (const YAML::Node turns = n["turns"]) {
        if (!turns.IsSequence() || turns.size() == 0) r.fail(turns, "turns must be a list of turns, at least one");
        for (const auto& t : turns) rule.turns.push_back(r.turn(t));
      } else {
        r.fail(n, "a rule needs text or turns");
      }
      script.rules_.push_back(std::move(rule));
    }
    return script;
  } catch (const YAML::Exception& e) {  // a conversion inside a well-formed document
    throw ScriptError(file, e.mark.is_null() ? 0 : e.mark.line + 1, e.mark.is_null() ? 0 : e.mark.column + 1, e.msg);
  }
}

ReplyScript::ScriptTurn ReplyScript::pick(const json& request) const {
  static const json kNone = json::array();
  const json& messages = request.is_object() && request.contains("messages") && request["messages"].is_array()
                             ? request["messages"]
                             : kNone;
  // The latest user message picks the rule; the assistant messages after it, the turn.
  std::string latest;
  std::size_t after = 0;
  for (const auto& m : messages) {
    const std::string role = roleOf(m);
    if (role == "user") {
      latest = messageText(m);
      after = 0;
    } else if (role == "assistant") {
      ++after;
    }
  }
  if (rules_.empty()) return {};      // only a default-constructed script has no rules
  const Rule* rule = &rules_.back();  // fall-through: the last rule answers everything else
  for (const auto& r : rules_) {
    if (latest.find(r.match) != std::string::npos) {
      rule = &r;
      break;
    }
  }
  if (after < rule->turns.size()) return rule->turns[after];
  // Past the last turn: the last text again, without tool calls, so a replay always ends.
  ScriptTurn end;
  for (auto it = rule->turns.rbegin(); it != rule->turns.rend(); ++it) {
    if (!it->text.empty()) {
      end.text = it->text;
      break;
    }
  }
  return end;
}

std::string ReplyScript::answer(const json& request) const {
  const ScriptTurn turn = pick(request);
  std::string model = "script";
  if (request.is_object() && request.contains("model") && request["model"].is_string()) model = request["model"];
  std::size_t assistants = 0, promptChars = 0;
  if (request.is_object() && request.contains("messages") && request["messages"].is_array()) {
    for (const auto& m : request["messages"]) {
      if (roleOf(m) == "assistant") ++assistants;
      promptChars += messageText(m).size();
      if (m.is_object() && m.contains("tool_calls")) promptChars += dumpedSize(m["tool_calls"]);
    }
  }
  if (request.is_object() && request.contains("tools")) promptChars += dumpedSize(request["tools"]);

  const std::string id = "chatcmpl-script-" + std::to_string(assistants);
  std::string out;
  auto emit = [&](json delta, json finish) {
    json chunk{{"id", id},
               {"object", "chat.completion.chunk"},
               {"created", 0},
               {"model", model},
               {"choices", json::array({{{"index", 0}, {"delta", std::move(delta)}, {"finish_reason", std::move(finish)}}})}};
    out += "data: " + chunk.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
  };
  emit({{"role", "assistant"}, {"content", ""}}, nullptr);
  std::size_t outChars = turn.text.size();
  for (const auto& p : pieces(turn.text, 24)) emit({{"content", p}}, nullptr);
  for (std::size_t i = 0; i < turn.toolCalls.size(); ++i) {
    const Call& c = turn.toolCalls[i];
    const std::string callId =
        c.id.empty() ? "call_" + std::to_string(assistants) + "_" + std::to_string(i) : c.id;
    outChars += c.name.size() + c.arguments.size();
    // As real servers do: id and name first, then the arguments in pieces.
    emit({{"tool_calls", json::array({{{"index", i},
                                        {"id", callId},
                                        {"type", "function"},
                                        {"function", {{"name", c.name}, {"arguments", ""}}}}})}},
         nullptr);
    for (const auto& p : pieces(c.arguments, 16))
      emit({{"tool_calls", json::array({{{"index", i}, {"function", {{"arguments", p}}}}})}}, nullptr);
  }
  emit(json::object(), turn.toolCalls.empty() ? "stop" : "tool_calls");
  const Usage u = turn.usage ? *turn.usage : Usage{estimate(promptChars), estimate(outChars), 0, 0};
  json usage{{"id", id},
             {"object", "chat.completion.chunk"},
             {"created", 0},
             {"model", model},
             {"choices", json::array()},
             {"usage", {{"prompt_tokens", u.input}, {"completion_tokens", u.output},
                        {"total_tokens", addCounts(u.input, u.output)}}}};
  out += "data: " + usage.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
  out += "data: [DONE]\n\n";
  return out;
}

}  // namespace pine::model
