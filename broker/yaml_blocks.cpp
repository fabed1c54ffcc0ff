#include "broker/yaml_blocks.h"

namespace pine {
namespace {

bool blankOrComment(const std::string& line) {
  size_t first = line.find_first_not_of(" \t");
  return first == std::string::npos || line[first] == '#';
}

}  // namespace

std::optional<std::string> appendToBlock(const std::string& text, const std::string& key, const std::string& entry,
                                         std::string& error) {
  size_t at = std::string::npos;
  if (text.rfind(key + ":", 0) == 0) at = 0;
  else if (auto p = text.find("\n" + key + ":"); p != std::string::npos) at = p + 1;
  if (at == std::string::npos)
    return text + (text.empty() || text.back() == '\n' ? "" : "\n") + key + ":\n  " + entry + "\n";
  size_t lineEnd = text.find('\n', at);
  std::string head = text.substr(at, lineEnd == std::string::npos ? std::string::npos : lineEnd - at);
  std::string rest = head.substr(key.size() + 1);
  if (auto hash = rest.find(" #"); hash != std::string::npos) rest.resize(hash);
  if (rest.find_first_not_of(" \t") != std::string::npos) {
    error = "the file writes " + key + " on one line (flow style); the owner has to add this one by hand";
    return std::nullopt;
  }
  // The block ends at the next line that starts at column 0 (another key), comments and blanks
  // aside; a list's entries may themselves start at column 0 ("- ...").
  size_t pos = lineEnd == std::string::npos ? text.size() : lineEnd + 1;
  size_t insert = pos;
  std::string indent;
  bool seen = false;
  while (pos < text.size()) {
    size_t e = text.find('\n', pos);
    std::string l = text.substr(pos, e == std::string::npos ? std::string::npos : e - pos);
    bool blank = blankOrComment(l);
    if (!blank && l[0] != ' ' && l[0] != '-') break;
    if (!blank && !seen) {
      indent = l.substr(0, l.find_first_not_of(' '));
      seen = true;
    }
    pos = e == std::string::npos ? text.size() : e + 1;
    if (!blank) insert = pos;
  }
  if (!seen) indent = "  ";
  std::string out = text.substr(0, insert);
  if (!out.empty() && out.back() != '\n') out += "\n";
  return out + indent + entry + "\n" + text.substr(insert);
}

}  // namespace pine
