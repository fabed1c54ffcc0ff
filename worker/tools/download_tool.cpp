// download: the broker decides and pined fetches; the bytes land here, through the jail, so the
// sandbox decides where a download may be written, exactly as for the write tool.
#include "common/outside_text.h"
#include "worker/tools/sha256.h"
#include "worker/tools/tool_parts.h"

namespace pine::tools::detail {
namespace {

std::string shown(std::string_view outside, size_t max = 512) { return cutUtf8(stripTerminalControls(outside), max); }

}  // namespace

ToolResult downloadTool(const PathJail& jail, const ToolEnv& env, const Json& args) {
  if (!env.fetch) return fail("download is not a tool of this run");
  const std::string url = strArg(args, "url");
  const std::string path = strArg(args, "path");
  if (url.empty()) return fail("download: 'url' is empty; give the address to fetch");
  // The place is prepared first: a path the jail refuses is refused before the broker (or the owner) is asked.
  ReplacingFile file;
  if (auto err = file.open(jail, path, true)) return fail(*err);
  Sha256 sha;
  uint64_t size = 0;
  std::optional<std::string> writeError;
  FetchResult r = env.fetch(url, path, [&](std::string_view chunk) {
    if (writeError) return false;
    writeError = file.append(chunk);
    sha.update(chunk);
    size += chunk.size();
    return !writeError;
  });
  if (!r.allowed) return fail(shown(r.message, 4096));
  if (writeError) return fail("download of " + shown(url) + " could not be saved: " + *writeError);
  if (!r.message.empty()) return fail("download of " + shown(url) + " failed: " + shown(r.message, 2048) + "; nothing was saved");
  if (r.status >= 300 && r.status < 400)
    return fail(shown(url) + " answered HTTP " + std::to_string(r.status) + ", a redirect" +
                (r.location.empty() ? std::string() : " to " + shown(r.location)) +
                ". Redirects are not followed; nothing was saved. Download the new address if you trust it.");
  if (r.status < 200 || r.status >= 300)
    return fail(shown(url) + " answered HTTP " + std::to_string(r.status) + "; nothing was saved");
  if (auto err = file.commit()) return fail(*err);
  return ok("saved " + path + ": " + std::to_string(size) + " bytes, SHA-256 " + sha.hexDigest());
}

std::optional<std::string> saveStreamed(
    const PathJail& jail, const std::string& path,
    const std::function<bool(const std::function<bool(std::string_view)>&)>& stream) {
  ReplacingFile file;
  if (auto err = file.open(jail, path, true)) return err;
  std::optional<std::string> writeError;
  bool complete = stream([&](std::string_view chunk) {
    if (!writeError) writeError = file.append(chunk);
    return !writeError;
  });
  if (writeError) return writeError;
  if (!complete) return std::string("the file did not arrive whole");
  return file.commit();
}

}  // namespace pine::tools::detail
