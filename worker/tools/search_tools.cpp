// grep and find: a walk of the tree through the jail, one folder at a time.
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <re2/re2.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "worker/tools/tool_parts.h"

namespace pine::tools::detail {
namespace {

constexpr size_t kMaxWalkEntries = 200000;
constexpr int kMaxDepth = 64;
constexpr size_t kMaxGrepFileBytes = 8 * 1024 * 1024;
constexpr size_t kMaxMatches = 500;
constexpr size_t kMaxMatchLineChars = 500;
constexpr size_t kMaxFound = 1000;

struct Walker {
  const PathJail& jail;
  const std::function<bool(const std::string&, const std::string&, const struct stat&)>& visit;
  WalkStats stats;
  size_t seen = 0;

  // Returns false when the walk must stop.
  bool dir(const std::string& shown, const std::string& rel, int depth) {
    auto d = jail.openDir(shown);
    if (!d) {
      ++stats.unreadableDirs;
      return true;
    }
    const int dfd = d.value().get();
    int copy = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
    DIR* dp = copy < 0 ? nullptr : fdopendir(copy);
    if (dp == nullptr) {
      if (copy >= 0) ::close(copy);
      ++stats.unreadableDirs;
      return true;
    }
    std::vector<std::string> names;
    while (dirent* e = readdir(dp)) {
      std::string n = e->d_name;
      if (n != "." && n != ".." && n != ".git") names.push_back(std::move(n));
    }
    closedir(dp);
    std::sort(names.begin(), names.end());
    for (const auto& n : names) {
      if (++seen > kMaxWalkEntries) {
        stats.hitLimit = true;
        return false;
      }
      struct stat st;
      if (fstatat(dfd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      const std::string childShown = joinShown(shown, n);
      const std::string childRel = rel.empty() ? n : rel + "/" + n;
      if (!visit(childShown, childRel, st)) return false;
      if (S_ISDIR(st.st_mode) && depth < kMaxDepth && !dir(childShown, childRel, depth + 1)) return false;
    }
    return true;
  }
};

bool globMatch(const std::string& pattern, const std::string& rel, const std::string& name) {
  if (pattern.find('/') == std::string::npos) return fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
  // Without FNM_PATHNAME '*' also crosses '/', so "src/**/*.h" and "src/*.h"
  // both reach nested files; a leading "**/" may also match nothing.
  if (fnmatch(pattern.c_str(), rel.c_str(), 0) == 0) return true;
  return pattern.rfind("**/", 0) == 0 && fnmatch(pattern.c_str() + 3, rel.c_str(), 0) == 0;
}

std::string baseName(const std::string& rel) {
  size_t s = rel.rfind('/');
  return s == std::string::npos ? rel : rel.substr(s + 1);
}

}  // namespace

std::string joinShown(const std::string& start, const std::string& rel) {
  if (start.empty() || start == ".") return rel;
  return start.back() == '/' ? start + rel : start + "/" + rel;
}

WalkStats walkTree(const PathJail& jail, const std::string& start,
                   const std::function<bool(const std::string&, const std::string&, const struct stat&)>& visit) {
  Walker w{jail, visit, {}};
  w.dir(start, "", 0);
  return w.stats;
}

ToolResult grepTool(const PathJail& jail, const ToolEnv& env, const Json& args) {
  const std::string pattern = args["pattern"];
  const std::string path = strArg(args, "path", ".");
  const std::string glob = strArg(args, "glob");
  RE2::Options opts;
  opts.set_log_errors(false);
  opts.set_case_sensitive(!boolArg(args, "ignore_case", false));
  RE2 re(pattern, opts);
  if (!re.ok())
    return fail("grep: the pattern is not valid RE2 syntax (" + re.error() +
                "); RE2 has no backreferences or lookaround, and special characters need a backslash");

  std::string out;
  size_t matches = 0, filesWithMatch = 0, searched = 0, skippedBinary = 0, skippedLarge = 0, refused = 0;
  std::string stopNote;
  auto searchFile = [&](const std::string& shown) -> bool {
    auto fd = jail.openForRead(shown);
    if (!fd) {
      ++refused;  // e.g. .env: the jail does not open it
      return true;
    }
    std::string data;
    bool cut = false;
    if (!readUpTo(fd.value().get(), kMaxGrepFileBytes, &data, &cut)) {
      ++refused;
      return true;
    }
    if (looksBinary(data)) {
      ++skippedBinary;
      return true;
    }
    if (cut) ++skippedLarge;  // searched in part
    ++searched;
    bool any = false;
    size_t lineNo = 0;
    for (size_t pos = 0; pos < data.size();) {
      size_t end = data.find('\n', pos);
      if (end == std::string::npos) end = data.size();
      ++lineNo;
      re2::StringPiece line(data.data() + pos, end - pos);
      if (RE2::PartialMatch(line, re)) {
        std::string text = stripTerminalControls(std::string_view(line.data(), std::min(line.size(), kMaxMatchLineChars + 8)));
        if (line.size() > kMaxMatchLineChars) text = cutUtf8(text, kMaxMatchLineChars) + " [... line cut]";
        std::string entry = stripTerminalControls(shown) + ":" + std::to_string(lineNo) + ":" + text + "\n";
        if (matches == kMaxMatches || out.size() + entry.size() > env.outputCap) {
          stopNote = "[stopped after " + std::to_string(matches) + " matches; narrow the pattern, path or glob]";
          return false;
        }
        out += entry;
        ++matches;
        any = true;
      }
      pos = end + 1;
    }
    if (any) ++filesWithMatch;
    return true;
  };

  auto top = jail.stat(path);
  if (!top) return fail(jailMessage(top.error()));
  WalkStats walk;
  if (S_ISDIR(top.value().st_mode)) {
    walk = walkTree(jail, path, [&](const std::string& shown, const std::string& rel, const struct stat& st) {
      if (!S_ISREG(st.st_mode)) return true;  // links are not followed, folders are walked
      if (!glob.empty() && !globMatch(glob, rel, baseName(rel))) return true;
      return searchFile(shown);
    });
  } else {
    searchFile(path);
  }
  std::string summary;
  if (matches == 0)
    summary = "no matches for /" + pattern + "/ in '" + path + "' (" + std::to_string(searched) + " files searched)";
  else
    summary = std::to_string(matches) + " matches in " + std::to_string(filesWithMatch) + " files";
  if (skippedBinary) summary += "; " + std::to_string(skippedBinary) + " binary files skipped";
  if (skippedLarge) summary += "; " + std::to_string(skippedLarge) + " files searched only in their first 8 MiB";
  if (refused) summary += "; " + std::to_string(refused) + " files could not be opened";
  if (walk.unreadableDirs) summary += "; " + std::to_string(walk.unreadableDirs) + " folders could not be opened";
  if (walk.hitLimit) summary += "; the walk stopped after " + std::to_string(kMaxWalkEntries) + " entries";
  if (!stopNote.empty()) out += stopNote + "\n";
  return ok(out + summary + "\n");
}

ToolResult findTool(const PathJail& jail, const ToolEnv& env, const Json& args) {
  const std::string pattern = args["pattern"];
  const std::string path = strArg(args, "path", ".");
  if (pattern.empty()) return fail("find: the pattern is empty; give a glob such as *.md");
  auto top = jail.openDir(path);
  if (!top) return fail(jailMessage(top.error()));
  std::string out;
  size_t found = 0;
  std::string stopNote;
  WalkStats walk = walkTree(jail, path, [&](const std::string& shown, const std::string& rel, const struct stat& st) {
    if (!globMatch(pattern, rel, baseName(rel))) return true;
    std::string entry = stripTerminalControls(shown) + (S_ISDIR(st.st_mode) ? "/" : "") + "\n";
    if (found == kMaxFound || out.size() + entry.size() > env.outputCap) {
      stopNote = "[stopped after " + std::to_string(found) + " results; narrow the pattern or path]";
      return false;
    }
    out += entry;
    ++found;
    return true;
  });
  if (found == 0) out = "nothing matches '" + pattern + "' in '" + path + "'\n";
  if (!stopNote.empty()) out += stopNote + "\n";
  if (walk.unreadableDirs) out += "[" + std::to_string(walk.unreadableDirs) + " folders could not be opened]\n";
  if (walk.hitLimit) out += "[the walk stopped after " + std::to_string(kMaxWalkEntries) + " entries]\n";
  return ok(out);
}

}  // namespace pine::tools::detail
