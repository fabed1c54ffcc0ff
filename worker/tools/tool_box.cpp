#include "worker/tools/tool_box.h"

#include <algorithm>
#include <stdexcept>

#include "common/tool_table.h"
#include "sandbox/jail/path_jail.h"
#include "worker/tools/tool_parts.h"

namespace pine::tools {
namespace {

sandbox::JailRoot openRoot(const std::string& path, sandbox::RootAccess access, const char* what) {
  auto r = sandbox::JailRoot::open(path, access);
  if (!r) throw std::invalid_argument(std::string("tools: the ") + what + " cannot be opened: " + r.error().message);
  return std::move(r.value());
}

std::unique_ptr<sandbox::PathJail> makeJail(const ToolEnv& env) {
  if (env.workspace.empty()) throw std::invalid_argument("tools: no workspace given (ToolEnv::workspace is empty)");
  std::vector<sandbox::JailRoot> roots;
  roots.push_back(openRoot(env.workspace, sandbox::RootAccess::ReadWrite, "workspace"));
  for (const auto& p : env.extraWrite) roots.push_back(openRoot(p, sandbox::RootAccess::ReadWrite, "granted folder"));
  for (const auto& p : env.extraRead) roots.push_back(openRoot(p, sandbox::RootAccess::ReadOnly, "granted folder"));
  return std::make_unique<sandbox::PathJail>(std::move(roots), sandbox::NameRules::defaults(env.tainted));
}

}  // namespace

ToolBox::ToolBox(ToolEnv env) : env_(std::move(env)), jail_(makeJail(env_)) {
  if (env_.outputCap < 1024) env_.outputCap = 1024;  // room for at least the notes
}
ToolBox::~ToolBox() = default;
ToolBox::ToolBox(ToolBox&&) noexcept = default;
ToolBox& ToolBox::operator=(ToolBox&&) noexcept = default;

std::vector<std::string> ToolBox::names() { return {"read", "write", "edit", "grep", "find", "ls", "bash", "download"}; }

std::optional<std::string> ToolBox::saveAttachment(const std::string& path, const ByteStream& stream) {
  return detail::saveStreamed(*jail_, path, stream);
}

ToolResult ToolBox::run(const std::string& name, const nlohmann::json& args) {
  using namespace detail;
  const auto names = ToolBox::names();
  auto schema = env_.schemas.find(name);
  if (schema == env_.schemas.end() || std::find(names.begin(), names.end(), name) == names.end()) {
    std::string known;
    for (const auto& n : names)
      if (env_.schemas.count(n)) known += (known.empty() ? "" : ", ") + n;
    return fail("unknown tool '" + stripTerminalControls(name) + "'; the tools are: " + known);
  }
  if (auto why = tooltable::checkArguments(name, schema->second, args)) return fail(*why);
  // The "path" argument, where given, is judged by the jail's own validator
  // first (empty, NUL), so every path error reads the same.
  if (args.contains("path")) {
    auto p = sandbox::validatePathArgument(args, "path");
    if (!p) return fail(jailMessage(p.error()));
  }
  try {
    if (name == "read") return readTool(*jail_, env_, args);
    if (name == "write") return writeTool(*jail_, env_, args);
    if (name == "edit") return editTool(*jail_, env_, args);
    if (name == "grep") return grepTool(*jail_, env_, args);
    if (name == "find") return findTool(*jail_, env_, args);
    if (name == "ls") return lsTool(*jail_, env_, args);
    if (name == "download") return downloadTool(*jail_, env_, args);
    return bashTool(env_, args);
  } catch (const std::exception& e) {
    return fail(name + ": internal error: " + e.what());
  }
}

}  // namespace pine::tools
