// The tools of a `bundled: commands` MCP server (agent.yaml, docs/mcp.md): each is a command line
// the owner wrote, with {name} placeholders the model fills in. The broker checks a call's
// arguments before anyone is asked, and pined checks them again, with this same code, against
// its own copy of the configuration before it runs anything: a value is one word, never parsed
// by a shell, and may not pass for an option unless the owner's rule for it says so.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "config/model.h"

namespace pine::config {

// The argument names a word refers to, in order: "{name}" with name of [a-z0-9_], 1 to 64 long.
// Other braces are literal.
std::vector<std::string> placeholdersIn(const std::string& word);

// Why `value` is not allowed for `arg` (nullopt: it is).
std::optional<std::string> commandArgProblem(const std::string& name, const McpCommandArg& arg, const std::string& value);

// The words `command` runs with, each placeholder replaced by its argument's value; nullopt and
// `why` when an argument is missing, unknown, not a string or not allowed.
std::optional<std::vector<std::string>> commandToolWords(const McpCommand& command, const nlohmann::json& args,
                                                         std::string& why);

// The JSON schema of the command's arguments, as the model sees it.
nlohmann::json commandToolSchema(const McpCommand& command);

}  // namespace pine::config
