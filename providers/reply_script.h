// The script model: answers an OpenAI chat-completions request from a reply script, as
// the SSE stream a real server would send, so the worker runs the real OpenAI client
// path against it. A replay of written turns, not a model: it understands nothing.
// The format is in README.md.
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "providers/types.h"

namespace pine::model {

// "file:line:column: what is wrong (how to fix it)".
struct ScriptError : std::runtime_error {
  std::string file;
  int line, column;  // 1-based; 0 when unknown
  ScriptError(std::string file_, int line_, int column_, const std::string& message);
};

class ReplyScript {
 public:
  struct Call {
    std::string id;         // empty: made up per answer ("call_<n>_<i>")
    std::string name;
    std::string arguments;  // JSON text, sent as written
  };
  struct ScriptTurn {
    std::string text;
    std::vector<Call> toolCalls;
    std::optional<Usage> usage;  // unset: estimated, about 4 characters a token
  };
  struct Rule {
    std::string match;  // "" matches every message
    std::vector<ScriptTurn> turns;
    int line = 0;
  };

  // Throws ScriptError (malformed YAML, unknown keys, wrong types) with file:line.
  static ReplyScript parse(const std::string& yamlText, const std::string& fileForErrors);

  // The whole SSE body of the answer to a chat-completions request (the JSON the
  // OpenAI provider's buildCall sends).
  std::string answer(const nlohmann::json& chatCompletionsRequest) const;

  // The turn answer() replays for a request (for tests and diagnostics).
  ScriptTurn pick(const nlohmann::json& chatCompletionsRequest) const;

  const std::vector<Rule>& rules() const { return rules_; }

 private:
  std::vector<Rule> rules_;
};

}  // namespace pine::model
