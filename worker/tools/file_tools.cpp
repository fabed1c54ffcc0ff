// read, write, edit and ls: each path opened through the jail.
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "worker/tools/tool_parts.h"

namespace pine::tools::detail {
namespace {

constexpr size_t kMaxReadBytes = 64 * 1024 * 1024;  // read scans at most this much of a file
constexpr size_t kMaxEditBytes = 16 * 1024 * 1024;  // edit holds the whole file in memory
constexpr size_t kMaxLineChars = 2000;
constexpr long long kDefaultLines = 2000;
constexpr size_t kMaxListEntries = 2000;

size_t countLines(std::string_view s) {
  return size_t(std::count(s.begin(), s.end(), '\n')) + (s.empty() || s.back() == '\n' ? 0 : 1);
}

}  // namespace

ToolResult readTool(const PathJail& jail, const ToolEnv& env, const Json& args) {
  const std::string path = args["path"];
  const long long offset = intArg(args, "offset", 1), limit = intArg(args, "limit", kDefaultLines);
  auto fd = jail.openForRead(path);
  if (!fd) return fail(jailMessage(fd.error()));
  std::string data;
  bool cutFile = false;
  if (!readUpTo(fd.value().get(), kMaxReadBytes, &data, &cutFile))
    return fail("could not read '" + path + "': " + std::strerror(errno));
  if (looksBinary(data))
    return ok("'" + path + "' is a binary file (" + std::to_string(data.size()) + (cutFile ? "+" : "") +
              " bytes); not shown. Use bash (e.g. xxd, file) to inspect it.");
  if (data.empty()) return ok("'" + path + "' is empty.");

  std::string out;
  long long lineNo = 0, shown = 0;
  size_t pos = 0;
  std::string stopNote;
  while (pos < data.size()) {
    size_t end = data.find('\n', pos);
    if (end == std::string::npos) end = data.size();
    ++lineNo;
    if (lineNo >= offset) {
      if (shown == limit) {
        stopNote = "[more lines follow; read on with offset=" + std::to_string(lineNo) + "]";
        break;
      }
      std::string_view line(data.data() + pos, end - pos);
      std::string text = stripTerminalControls(line.substr(0, kMaxLineChars + 8));
      if (line.size() > kMaxLineChars)
        text = cutUtf8(text, kMaxLineChars) + " [... line cut: " + std::to_string(line.size()) + " bytes]";
      std::string num = std::to_string(lineNo);
      std::string entry = std::string(num.size() < 6 ? 6 - num.size() : 0, ' ') + num + "\t" + text + "\n";
      if (out.size() + entry.size() > env.outputCap) {
        stopNote = "[output limit reached; read on with offset=" + std::to_string(lineNo) + "]";
        break;
      }
      out += entry;
      ++shown;
    }
    pos = end + 1;
  }
  if (shown == 0 && stopNote.empty())
    return fail("'" + path + "' has " + std::to_string(lineNo) + " lines; offset " + std::to_string(offset) +
                " is past the end");
  if (stopNote.empty() && cutFile)
    stopNote = "[only the first " + std::to_string(kMaxReadBytes) + " bytes of this file can be read]";
  if (!stopNote.empty()) out += stopNote + "\n";
  return ok(out);
}

ToolResult writeTool(const PathJail& jail, const ToolEnv&, const Json& args) {
  const std::string path = args["path"];
  const std::string content = args["content"];
  bool created = false;
  if (auto err = writeFileAtomic(jail, path, content, true, &created)) return fail(*err);
  return ok(std::string(created ? "created '" : "replaced '") + path + "' (" + std::to_string(content.size()) +
            " bytes, " + std::to_string(countLines(content)) + " lines)");
}

ToolResult editTool(const PathJail& jail, const ToolEnv&, const Json& args) {
  const std::string path = args["path"];
  std::string oldText = args["old_text"], newText = args["new_text"];
  if (oldText.empty()) return fail("edit: old_text is empty; give the exact text to replace");
  if (oldText == newText) return fail("edit: old_text and new_text are the same; nothing would change");
  auto fd = jail.openForRead(path);
  if (!fd) return fail(jailMessage(fd.error()));
  std::string data;
  bool cut = false;
  if (!readUpTo(fd.value().get(), kMaxEditBytes, &data, &cut))
    return fail("could not read '" + path + "': " + std::strerror(errno));
  if (cut) return fail("edit: '" + path + "' is larger than " + std::to_string(kMaxEditBytes) + " bytes; use write or bash");
  if (looksBinary(data)) return fail("edit: '" + path + "' is a binary file");
  // Overlapping occurrences count too: "aa" occurs twice in "aaa".
  auto occurrences = [&](const std::string& needle, size_t* first) {
    size_t count = 0;
    for (size_t at = data.find(needle); at != std::string::npos; at = data.find(needle, at + 1))
      if (count++ == 0) *first = at;
    return count;
  };
  size_t first = std::string::npos;
  size_t count = occurrences(oldText, &first);
  // read shows CRLF lines without their CR: match such a file's line ends too.
  if (count == 0 && oldText.find('\r') == std::string::npos && oldText.find('\n') != std::string::npos &&
      data.find("\r\n") != std::string::npos) {
    auto crlf = [](const std::string& t) {
      std::string o;
      for (char ch : t) o += ch == '\n' ? std::string("\r\n") : std::string(1, ch);
      return o;
    };
    std::string oldCrlf = crlf(oldText);
    if ((count = occurrences(oldCrlf, &first)) != 0) {
      oldText = std::move(oldCrlf);
      newText = crlf(newText);
    }
  }
  if (count == 0)
    return fail("edit: old_text was not found in '" + path +
                "'; read the file again and copy the text exactly (spaces, tabs and line breaks included)");
  if (count > 1)
    return fail("edit: old_text occurs " + std::to_string(count) + " times in '" + path +
                "'; include more of the surrounding lines so that it occurs exactly once");
  const size_t line = size_t(std::count(data.begin(), data.begin() + long(first), '\n')) + 1;
  data.replace(first, oldText.size(), newText);
  bool created = false;
  if (auto err = writeFileAtomic(jail, path, data, false, &created)) return fail(*err);
  return ok("edited '" + path + "': replaced " + std::to_string(countLines(oldText)) + " line(s) at line " +
            std::to_string(line) + " with " + std::to_string(countLines(newText)));
}

ToolResult lsTool(const PathJail& jail, const ToolEnv& env, const Json& args) {
  const std::string path = strArg(args, "path", ".");
  auto dir = jail.openDir(path);
  if (!dir) return fail(jailMessage(dir.error()));
  const int dfd = dir.value().get();
  int copy = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
  DIR* d = copy < 0 ? nullptr : fdopendir(copy);
  if (d == nullptr) {
    if (copy >= 0) ::close(copy);
    return fail("could not list '" + path + "': " + std::strerror(errno));
  }
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  if (names.empty()) return ok("'" + path + "' is empty.");
  std::string out;
  size_t listed = 0;
  for (const auto& n : names) {
    struct stat st;
    std::string line;
    const std::string shownName = stripTerminalControls(n);
    if (fstatat(dfd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      line = "?     " + std::string(12, ' ') + "  " + shownName;
    } else if (S_ISDIR(st.st_mode)) {
      line = "dir   " + std::string(11, ' ') + "-  " + shownName + "/";
    } else if (S_ISLNK(st.st_mode)) {
      char buf[4096];
      ssize_t k = readlinkat(dfd, n.c_str(), buf, sizeof buf - 1);
      std::string target = k > 0 ? stripTerminalControls(std::string_view(buf, size_t(k))) : "?";
      line = "link  " + std::string(11, ' ') + "-  " + shownName + " -> " + target;
    } else {
      const char* type = S_ISREG(st.st_mode) ? "file  " : S_ISFIFO(st.st_mode) ? "fifo  " : S_ISSOCK(st.st_mode) ? "socket" : "device";
      std::string size = std::to_string(st.st_size);
      line = std::string(type) + std::string(size.size() < 12 ? 12 - size.size() : 0, ' ') + size + "  " + shownName;
    }
    if (listed == kMaxListEntries || out.size() + line.size() + 1 > env.outputCap) {
      out += "[... " + std::to_string(names.size() - listed) + " more entries not shown]\n";
      break;
    }
    out += line + "\n";
    ++listed;
  }
  return ok(out);
}

}  // namespace pine::tools::detail
