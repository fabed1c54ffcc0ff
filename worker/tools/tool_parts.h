// Shared by the tool implementations; not part of the public API.
#pragma once
#include <sys/stat.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/refusal.h"
#include "sandbox/jail/path_jail.h"
#include "worker/tools/tool_box.h"

namespace pine::tools::detail {

using Json = nlohmann::json;
using sandbox::PathJail;

inline ToolResult ok(std::string text) { return {std::move(text), false}; }
inline ToolResult fail(std::string text) { return {std::move(text), true}; }

// The jail's answer as the agent reads it: a refusal by pine's rules (outside the folders,
// read-only, protected, a link) ends with the hint to ask instead of probing; a missing
// file or an OS error does not.
inline std::string jailMessage(const sandbox::JailError& e) {
  switch (e.code) {
    case sandbox::JailErrc::OutsideRoots:
    case sandbox::JailErrc::Symlink:
    case sandbox::JailErrc::Protected:
    case sandbox::JailErrc::ReadOnly:
    case sandbox::JailErrc::HardLinked: return withAskHint(e.message);
    default: return e.message;
  }
}

// Optional arguments, after the schema check (tooltable::checkArguments) has vouched for their types.
std::string strArg(const Json& args, const char* key, std::string fallback = "");
long long intArg(const Json& args, const char* key, long long fallback);
bool boolArg(const Json& args, const char* key, bool fallback);

// `.` and `..` resolved on the text (as the jail does); a relative path that
// climbs above its start keeps its leading `..` for the jail to refuse.
std::string lexicalNormal(std::string_view path);

// A file's bytes through a jailed descriptor, at most `max` (then *cut).
bool readUpTo(int fd, size_t max, std::string* out, bool* cut);
// NUL among the first 8 KiB: not text.
bool looksBinary(std::string_view head);
// `text` cut to at most `max` bytes on a UTF-8 boundary.
std::string cutUtf8(std::string_view text, size_t max);

// A file being replaced through the jail: open() judges `path` and makes a
// temporary file beside it (and `path` itself, empty, when it is new, so the
// jail checks the final entry like any write); append() fills the temporary;
// commit() puts it in place by rename. Abandoned (temporary and a file made
// here removed) by the destructor unless committed. Errors come back as text.
class ReplacingFile {
 public:
  ReplacingFile() = default;
  ReplacingFile(const ReplacingFile&) = delete;
  ReplacingFile& operator=(const ReplacingFile&) = delete;
  ~ReplacingFile() { abandon(); }
  // `createParents` makes missing folders beneath a writable root.
  std::optional<std::string> open(const PathJail& jail, const std::string& path, bool createParents);
  std::optional<std::string> append(std::string_view content);
  std::optional<std::string> commit();
  void abandon();
  bool created() const { return created_; }  // `path` did not exist before

 private:
  std::string path_, name_, tmpName_;
  sandbox::JailFd dir_, tmp_;
  struct stat target_ {};
  bool created_ = false;
};

// Replaces the file at `path` with `content` (a ReplacingFile). *created says
// whether the file is new. Returns the jail's refusal (or another error) as text.
std::optional<std::string> writeFileAtomic(const PathJail& jail, const std::string& path, std::string_view content,
                                           bool createParents, bool* created);

// Walks the tree at `start` (a folder, via the jail), depth first, names
// sorted. Symbolic links are reported, never followed; `.git` folders are
// skipped. `visit(shown, rel, st)` gets the path to show/open, the path
// relative to `start`, and lstat; it returns false to stop the walk.
struct WalkStats {
  size_t unreadableDirs = 0;
  bool hitLimit = false;  // too many entries; the walk stopped early
};
WalkStats walkTree(const PathJail& jail, const std::string& start,
                   const std::function<bool(const std::string& shown, const std::string& rel, const struct stat& st)>& visit);
// `start` joined with a relative name, for display and for the jail.
std::string joinShown(const std::string& start, const std::string& rel);

ToolResult readTool(const PathJail& jail, const ToolEnv& env, const Json& args);
ToolResult writeTool(const PathJail& jail, const ToolEnv& env, const Json& args);
ToolResult editTool(const PathJail& jail, const ToolEnv& env, const Json& args);
ToolResult lsTool(const PathJail& jail, const ToolEnv& env, const Json& args);
ToolResult grepTool(const PathJail& jail, const ToolEnv& env, const Json& args);
ToolResult findTool(const PathJail& jail, const ToolEnv& env, const Json& args);
ToolResult bashTool(const ToolEnv& env, const Json& args);
ToolResult downloadTool(const PathJail& jail, const ToolEnv& env, const Json& args);
// Writes what `stream` feeds at `path` through the jail, replacing the file only once all arrived.
std::optional<std::string> saveStreamed(
    const PathJail& jail, const std::string& path,
    const std::function<bool(const std::function<bool(std::string_view)>&)>& stream);

}  // namespace pine::tools::detail
