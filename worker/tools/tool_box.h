// The worker's own tools: read, write, edit, grep, find, ls, bash and download. They run
// inside the worker, which runs inside the OS sandbox, so the sandbox applies
// at the moment of access. Every path goes through the PathJail (a second
// layer); every shell command through the bash guard first (defence in depth).
#pragma once
#include <cstddef>
#include <functional>
#include <optional>
#include <string_view>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/outside_text.h"

namespace pine::sandbox {
class PathJail;
}

namespace pine::tools {

struct ToolResult {
  std::string text;
  bool isError = false;
};

// The download tool's way out: the worker asks the broker, which decides (and may ask the owner),
// and pined fetches. `onChunk` gets the body as it arrives; returning false stops the transfer.
struct FetchResult {
  bool allowed = false;  // false: `message` says why it was refused
  std::string message;   // the refusal, or why the fetch failed (empty when it did not)
  unsigned status = 0;   // the HTTP status
  std::string location;  // a redirect's target (redirects are never followed)
};
using Fetcher = std::function<FetchResult(const std::string& url, const std::string& path,
                                          const std::function<bool(std::string_view)>& onChunk)>;

struct ToolEnv {
  std::string workspace;                          // read-write; relative paths start here
  std::vector<std::string> extraRead, extraWrite;  // folders granted (read-only / read-write)
  bool tainted = false;                           // protected instruction files (NameRules::defaults(tainted))
  int shellTimeoutSec = 300;                      // upper bound for any bash call
  size_t outputCap = 64 * 1024;                   // bytes of tool output handed back
  std::string home, tmpdir;                       // HOME and TMPDIR of the shell
  Fetcher fetch;                                  // the download tool's fetcher; unset: no download tool
  // The JSON Schema of each tool's arguments, as the broker's tool table gave them (getTask);
  // a tool without one is not offered, whatever the worker implements.
  std::map<std::string, nlohmann::json> schemas;
};

class ToolBox {
 public:
  // Opens the workspace and granted folders as jail roots. Throws
  // std::invalid_argument naming the folder when one cannot be opened.
  explicit ToolBox(ToolEnv env);
  ~ToolBox();
  ToolBox(ToolBox&&) noexcept;
  ToolBox& operator=(ToolBox&&) noexcept;

  // Unknown tool or bad arguments: isError with a text saying what to fix.
  // Never throws.
  ToolResult run(const std::string& name, const nlohmann::json& args);

  // Saves a file that came with the task at `path` (in the workspace's inbox/), through the jail
  // like the write tool: `stream` feeds the bytes to the writer it is given and says whether all
  // arrived. Why not, or nullopt when saved.
  using ByteStream = std::function<bool(const std::function<bool(std::string_view)>& onChunk)>;
  std::optional<std::string> saveAttachment(const std::string& path, const ByteStream& stream);

  // The tools implemented here: read write edit grep find ls bash download.
  static std::vector<std::string> names();

  const ToolEnv& env() const { return env_; }

 private:
  ToolEnv env_;
  std::unique_ptr<sandbox::PathJail> jail_;
};

}  // namespace pine::tools
