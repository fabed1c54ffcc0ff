#include "broker/skills.h"

#include <fstream>
#include <sstream>

#include "common/names.h"

namespace pine {
namespace {

std::string readSmall(const std::string& path, size_t cap) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::string out(cap, '\0');
  in.read(out.data(), static_cast<std::streamsize>(cap));
  out.resize(static_cast<size_t>(in.gcount()));
  return out;
}

bool hasControl(const std::string& s, bool allowNewlines) {
  for (unsigned char c : s)
    if ((c < 0x20 && !(allowNewlines && (c == '\n' || c == '\t'))) || c == 0x7f) return true;
  return false;
}

}  // namespace

std::string skillDescription(const std::string& md) {
  if (md.rfind("---\n", 0) != 0) return "";
  size_t end = md.find("\n---", 3);
  std::istringstream front(md.substr(4, end == std::string::npos ? std::string::npos : end - 3));
  for (std::string line; std::getline(front, line);) {
    if (line.rfind("description:", 0) != 0) continue;
    std::string d = line.substr(12);
    size_t a = d.find_first_not_of(" \t"), b = d.find_last_not_of(" \t\r");
    return a == std::string::npos ? "" : d.substr(a, b - a + 1);
  }
  return "";
}

std::string skillsIndex(const config::Home& cfg, const std::string& homeRoot, const std::string& agent) {
  std::string out;
  for (const auto& s : cfg.pine.skills) {
    if (!s.agent.empty() && s.agent != agent) continue;
    std::string path = homeRoot + "/skills/" + s.name + "/SKILL.md";
    std::string d = skillDescription(readSmall(path, 4096));
    out += "- " + s.name + (d.empty() ? "" : ": " + d) + " (read " + path + " when a task calls for it)\n";
  }
  return out;
}

std::optional<std::string> checkNewSkill(const NewSkill& s) {
  if (!isValidAgentId(s.name)) return "a skill's name is 1 to 64 characters of [a-z0-9_-], not starting with '-'";
  if (s.description.empty() || s.description.size() > 300 || hasControl(s.description, false))
    return "\"description\" is one line of at most 300 characters: it is what the skills index shows";
  if (s.instructions.empty() || s.instructions.size() > (32u << 10) || hasControl(s.instructions, true))
    return "\"instructions\" is the skill's text (Markdown, at most 32 KiB, no control characters)";
  if (s.description.find("---") != std::string::npos || s.instructions.rfind("---", 0) == 0)
    return "the description may not contain '---' and the instructions may not start with it (front matter)";
  return std::nullopt;
}

std::string skillFile(const NewSkill& s) {
  return "---\nname: " + s.name + "\ndescription: " + s.description + "\n---\n\n" + s.instructions +
         (s.instructions.back() == '\n' ? "" : "\n");
}

}  // namespace pine
