// What the model is told about each tool, and the argument check that holds
// calls to it. One schema serves both, so they cannot disagree.
#include <map>

#include "worker/tools/tool_parts.h"

namespace pine::tools {
namespace {

using Json = nlohmann::json;

Json prop(const char* type, const char* description) { return Json{{"type", type}, {"description", description}}; }

Json schema(Json properties, std::vector<std::string> required) {
  return Json{{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)},
              {"additionalProperties", false}};
}

const std::map<std::string, Json>& specs() {
  static const std::map<std::string, Json> table = [] {
    std::map<std::string, Json> t;
    auto add = [&](const char* name, const char* description, Json parameters) {
      t[name] = Json{{"name", name}, {"description", description}, {"parameters", std::move(parameters)}};
    };
    Json offset = prop("integer", "First line to show, counting from 1 (default 1).");
    offset["minimum"] = 1;
    Json limit = prop("integer", "How many lines to show (default 2000).");
    limit["minimum"] = 1;
    add("read",
        "Read a text file. Lines come numbered; long files are shown in parts (use offset and limit to go on). "
        "Binary files are not shown. Control characters are removed from what is shown.",
        schema({{"path", prop("string", "File to read, relative to the workspace or absolute.")},
                {"offset", offset},
                {"limit", limit}},
               {"path"}));
    add("write",
        "Create or replace a file with the given content. Missing parent folders are created. The file is "
        "replaced as a whole (written beside it, then renamed over it).",
        schema({{"path", prop("string", "File to write, relative to the workspace or absolute.")},
                {"content", prop("string", "The complete new content of the file.")}},
               {"path", "content"}));
    add("edit",
        "Replace one exact piece of text in a file. old_text must occur exactly once (include surrounding lines "
        "to make it unique); whitespace and line breaks must match.",
        schema({{"path", prop("string", "File to edit.")},
                {"old_text", prop("string", "The exact text to replace; must occur exactly once.")},
                {"new_text", prop("string", "The text to put in its place.")}},
               {"path", "old_text", "new_text"}));
    add("grep",
        "Search file contents with a regular expression (RE2 syntax: no backreferences or lookaround). "
        "Skips .git folders and binary files. Prints path:line:text.",
        schema({{"pattern", prop("string", "RE2 regular expression.")},
                {"path", prop("string", "File or folder to search (default: the workspace).")},
                {"glob", prop("string", "Only files whose name matches this glob, e.g. *.cpp (a glob with / is "
                                        "matched against the path below the search folder).")},
                {"ignore_case", prop("boolean", "Match without regard to case.")}},
               {"pattern"}));
    add("find",
        "Find files and folders by name with a glob (e.g. *.md, src/**/*.h). Skips .git folders.",
        schema({{"pattern", prop("string", "Glob matched against the name, or against the path below the "
                                           "search folder when it contains /.")},
                {"path", prop("string", "Folder to search (default: the workspace).")}},
               {"pattern"}));
    add("ls", "List a folder: each entry with its type and size.",
        schema({{"path", prop("string", "Folder to list (default: the workspace).")}}, {}));
    Json timeout = prop("integer", "Seconds before the command is stopped (capped by the agent's limit).");
    timeout["minimum"] = 1;
    add("bash",
        "Run a shell command with /bin/bash in the workspace, without network or secrets. stdout and stderr "
        "come back together with the exit code; long output is cut in the middle. Some commands are refused "
        "(destructive ones aimed at home or /, inline interpreter code, publishing, git escape hatches).",
        schema({{"command", prop("string", "The command line.")}, {"timeout_sec", timeout}}, {"command"}));
    add("download",
        "Fetch a web address into a file, byte for byte; reports the size and SHA-256. pine does the fetching and "
        "decides by the address: a server of your MCP servers, any public https address when you have web tools, "
        "else only with network access for this conversation (ask with request_access). Redirects are not "
        "followed; the size is capped.",
        schema({{"url", prop("string", "The address, https://...")},
                {"path", prop("string", "Where to save it (relative to the workspace); replaced if it exists.")}},
               {"url", "path"}));
    return t;
  }();
  return table;
}

}  // namespace

std::vector<std::string> ToolBox::names() { return {"read", "write", "edit", "grep", "find", "ls", "bash", "download"}; }

nlohmann::json ToolBox::spec(const std::string& name) {
  auto it = specs().find(name);
  return it == specs().end() ? Json() : it->second;
}

namespace detail {

std::optional<std::string> checkArgs(const std::string& tool, const Json& args) {
  const Json& params = specs().at(tool)["parameters"];
  const std::string where = tool + ": ";
  if (!args.is_object()) return where + "the arguments must be a JSON object, got " + std::string(args.type_name());
  for (const auto& key : params["required"])
    if (!args.contains(key.get<std::string>()))
      return where + "missing required argument '" + key.get<std::string>() + "'";
  const Json& props = params["properties"];
  for (const auto& [key, value] : args.items()) {
    if (!props.contains(key)) {
      std::string known;
      for (const auto& [k, v] : props.items()) known += (known.empty() ? "" : ", ") + k;
      return where + "unknown argument '" + key + "'; it takes: " + known;
    }
    const Json& p = props[key];
    const std::string type = p["type"];
    bool good = (type == "string" && value.is_string()) || (type == "boolean" && value.is_boolean()) ||
                (type == "integer" && value.is_number_integer());
    if (!good) return where + "argument '" + key + "' must be " + (type == "integer" ? "an " : "a ") + type +
                      ", got " + std::string(value.type_name());
    if (type == "integer" && p.contains("minimum")) {
      if (value.is_number_unsigned() ? false : value.get<long long>() < p["minimum"].get<long long>())
        return where + "argument '" + key + "' must be at least " + p["minimum"].dump();
    }
  }
  return std::nullopt;
}

std::string strArg(const Json& args, const char* key, std::string fallback) {
  auto it = args.find(key);
  return it == args.end() ? fallback : it->get<std::string>();
}

long long intArg(const Json& args, const char* key, long long fallback) {
  auto it = args.find(key);
  if (it == args.end()) return fallback;
  if (it->is_number_unsigned()) {
    auto u = it->get<unsigned long long>();
    return u > (1ULL << 62) ? (1LL << 62) : (long long)u;
  }
  return it->get<long long>();
}

bool boolArg(const Json& args, const char* key, bool fallback) {
  auto it = args.find(key);
  return it == args.end() ? fallback : it->get<bool>();
}

}  // namespace detail
}  // namespace pine::tools
