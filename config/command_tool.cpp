#include "config/command_tool.h"

#include <re2/re2.h>

namespace pine::config {
namespace {

bool argNameChar(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

}  // namespace

std::vector<std::string> placeholdersIn(const std::string& word) {
  std::vector<std::string> out;
  for (size_t open = word.find('{'); open != std::string::npos; open = word.find('{', open + 1)) {
    size_t close = open + 1;
    while (close < word.size() && argNameChar(word[close])) ++close;
    if (close < word.size() && word[close] == '}' && close > open + 1 && close - open - 1 <= 64)
      out.push_back(word.substr(open + 1, close - open - 1));
  }
  return out;
}

std::optional<std::string> commandArgProblem(const std::string& name, const McpCommandArg& arg, const std::string& value) {
  const std::string what = "\"" + name + "\"";
  if (value.size() > size_t(arg.maxLength)) return what + " is at most " + std::to_string(arg.maxLength) + " bytes";
  if (value.find('\0') != std::string::npos) return what + " holds a NUL byte";
  if (!arg.oneOf.empty()) {
    for (const auto& v : arg.oneOf)
      if (v == value) return std::nullopt;
    std::string list;
    for (const auto& v : arg.oneOf) list += (list.empty() ? "" : ", ") + v;
    return what + " is one of: " + list;
  }
  if (!arg.pattern.empty()) {
    RE2 re(arg.pattern, RE2::Quiet);
    if (!re.ok() || !RE2::FullMatch(value, re)) return what + " must match " + arg.pattern;
    return std::nullopt;
  }
  // Free text: one word of the command line, which must not pass for an option or a line break.
  if (value.empty()) return what + " is empty";
  if (value[0] == '-') return what + " may not start with '-' (it would be read as an option)";
  for (unsigned char c : value)
    if (c < 0x20 || c == 0x7f) return what + " holds a control character";
  return std::nullopt;
}

std::optional<std::vector<std::string>> commandToolWords(const McpCommand& command, const nlohmann::json& args,
                                                         std::string& why) {
  if (!args.is_object()) {
    why = "the arguments are an object";
    return std::nullopt;
  }
  for (auto& [key, value] : args.items())
    if (!command.args.count(key)) {
      why = "'" + command.name + "' takes no argument \"" + key + "\"";
      return std::nullopt;
    }
  for (const auto& [name, arg] : command.args) {
    if (!args.contains(name) || !args[name].is_string()) {
      why = "\"" + name + "\" (a string) is required";
      return std::nullopt;
    }
    if (auto problem = commandArgProblem(name, arg, args[name].get<std::string>())) {
      why = *problem;
      return std::nullopt;
    }
  }
  std::vector<std::string> words;
  for (const auto& word : command.words) {
    std::string out;
    size_t at = 0;
    for (size_t open = word.find('{'); open != std::string::npos; open = word.find('{', open + 1)) {
      size_t close = open + 1;
      while (close < word.size() && argNameChar(word[close])) ++close;
      if (close >= word.size() || word[close] != '}' || close == open + 1) continue;
      const std::string name = word.substr(open + 1, close - open - 1);
      if (!command.args.count(name)) continue;  // literal braces (the configuration check refuses unknown names)
      out += word.substr(at, open - at) + args[name].get<std::string>();
      at = close + 1;
      open = close;
    }
    words.push_back(out + word.substr(at));
  }
  return words;
}

nlohmann::json commandToolSchema(const McpCommand& command) {
  nlohmann::json props = nlohmann::json::object(), required = nlohmann::json::array();
  for (const auto& [name, arg] : command.args) {
    nlohmann::json p = {{"type", "string"}, {"description", arg.description}, {"maxLength", arg.maxLength}};
    if (!arg.oneOf.empty()) p["enum"] = arg.oneOf;
    if (!arg.pattern.empty()) p["pattern"] = arg.pattern;
    props[name] = p;
    required.push_back(name);
  }
  return {{"type", "object"}, {"properties", props}, {"required", required}, {"additionalProperties", false}};
}

}  // namespace pine::config
