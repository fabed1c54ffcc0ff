#include "sandbox/guard/guard_paths.h"
#include "sandbox/guard/text.h"

#include <algorithm>
#include <array>

namespace pine::guard {
namespace {

std::vector<std::string> split(std::string_view s) {
  std::vector<std::string> out;
  size_t k = 0;
  while (k <= s.size()) {
    size_t e = s.find('/', k);
    if (e == std::string_view::npos) e = s.size();
    out.emplace_back(s.substr(k, e - k));
    k = e + 1;
  }
  return out;
}

std::string join(const std::vector<std::string>& c, size_t from = 0) {
  std::string out;
  for (size_t k = from; k < c.size(); ++k) {
    if (k > from) out += '/';
    out += c[k];
  }
  return out;
}

// "*", ".*", "?*", "[a-z]*": a component that matches whatever is there.
bool pureGlob(std::string_view c) {
  bool wild = false;
  bool inBracket = false;
  for (char ch : c) {
    if (inBracket) {
      if (ch == ']') inBracket = false;
      continue;
    }
    if (ch == '[') {
      inBracket = true;
      wild = true;
    } else if (ch == '*' || ch == '?') {
      wild = true;
    } else if (ch != '.') {
      return false;
    }
  }
  return wild;
}


template <size_t N>
bool oneOf(std::string_view s, const std::array<std::string_view, N>& set) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

bool isEnvFile(std::string_view base) {
  if (base == ".env") return true;
  if (!startsWith(base, ".env.")) return false;
  static const std::array<std::string_view, 6> harmless = {"example", "sample", "template", "dist", "defaults",
                                                            "schema"};
  std::string_view suffix = base.substr(5);
  for (auto h : harmless)
    if (suffix == h || startsWith(suffix, std::string(h) + ".")) return false;
  return true;
}

bool isPrivateKeyName(std::string_view base) {
  static const std::array<std::string_view, 4> keys = {"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"};
  for (auto k : keys)
    if (startsWith(base, k) && !endsWith(base, ".pub")) return true;
  return false;
}

}  // namespace

PathInfo classifyPath(std::string_view path, std::string_view cwd, bool cwdKnown) {
  PathInfo info;
  if (path.empty()) return info;
  if (path.front() == kDynamic) {
    info.where = Where::Dynamic;
    info.display = "$...";
    return info;
  }
  enum { Rel, Home, Abs } anchor = Rel;
  std::string full;
  if (path.front() == '~') {
    anchor = Home;
    full = std::string(path.substr(1));
  } else if (path.front() == '/') {
    anchor = Abs;
    full = std::string(path);
  } else {
    if (!cwdKnown) return info;  // relative to a directory we cannot name: leave it to the sandbox
    if (!cwd.empty()) return classifyPath(std::string(cwd) + "/" + std::string(path), "", true);
    full = std::string(path);
  }
  // Home is modelled as /home/<you> so that "~/.." leaves it like the real thing.
  std::vector<std::string> comps;
  if (anchor == Home) comps = {"home", "\x02"};
  int ups = 0;
  for (auto& c : split(full)) {
    if (c.empty() || c == ".") continue;
    if (c == "..") {
      if (!comps.empty())
        comps.pop_back();
      else if (anchor == Rel)
        ++ups;
      continue;
    }
    comps.push_back(c);
  }
  if (anchor == Rel) {
    info.comps = comps;
    std::string prefix;
    for (int k = 0; k < ups; ++k) prefix += "../";
    info.display = prefix + join(comps);
    if (info.display.empty()) info.display = ".";
    if (ups > 0)
      info.where = Where::Outside;
    else if (comps.empty() || (comps.size() == 1 && pureGlob(comps[0])))
      info.where = Where::WorkspaceRoot;
    else
      info.where = Where::Workspace;
    return info;
  }
  // Absolute from here on.
  size_t homeStart = 0;
  if (comps.size() >= 2 && (comps[0] == "home" || comps[0] == "Users") && !pureGlob(comps[1])) homeStart = 2;
  if (!comps.empty() && comps[0] == "root") homeStart = 1;
  if (comps.size() >= 3 && comps[0] == "var" && comps[1] == "root") homeStart = 2;  // macOS root home
  if (homeStart > 0) {
    info.comps.assign(comps.begin() + static_cast<long>(homeStart), comps.end());
    info.display = info.comps.empty() ? "~" : "~/" + join(info.comps);
    info.where = info.comps.empty() || (info.comps.size() == 1 && pureGlob(info.comps[0])) ? Where::HomeRoot
                                                                                            : Where::Home;
    return info;
  }
  info.comps = comps;
  info.display = "/" + join(comps);
  if (comps.empty() || pureGlob(comps[0])) {
    info.where = Where::Root;
    return info;
  }
  if (comps[0] == "home" || comps[0] == "Users") {
    info.where = Where::HomeRoot;
    return info;
  }
  if (comps[0] == "dev") {
    static const std::array<std::string_view, 9> safe = {"null",   "zero",    "stdout", "stderr", "stdin",
                                                         "tty",    "urandom", "random", "full"};
    if (comps.size() >= 2 && (oneOf(comps[1], safe) || comps[1] == "fd" || comps[1] == "pts"))
      info.where = Where::DevSafe;
    else if (comps.size() >= 3 && comps[1] == "shm")
      info.where = Where::Tmp;
    else if (comps.size() >= 2)
      info.where = Where::Device;
    else
      info.where = Where::System;
    return info;
  }
  if (comps.size() >= 4 && comps[0] == "proc" && comps[1] == "self" && comps[2] == "fd") {
    info.where = Where::DevSafe;
    return info;
  }
  bool tmp = (comps[0] == "tmp" && comps.size() >= 2) ||
             (comps.size() >= 3 && comps[0] == "var" && (comps[1] == "tmp" || comps[1] == "folders")) ||
             (comps.size() >= 3 && comps[0] == "private" && comps[1] == "tmp") ||
             (comps.size() >= 4 && comps[0] == "private" && comps[1] == "var" && comps[2] == "folders");
  info.where = tmp ? Where::Tmp : Where::System;
  return info;
}

std::optional<std::string> destructiveReason(const PathInfo& p, bool recursive) {
  switch (p.where) {
    case Where::Root: return "aimed at the root of the file system (" + p.display + ")";
    case Where::System: return "aimed at a system path (" + p.display + ")";
    case Where::HomeRoot:
    case Where::Home: return "aimed at the home directory (" + p.display + ")";
    case Where::Outside: return "aimed outside the workspace (" + p.display + ")";
    case Where::Device: return "aimed at a device (" + p.display + ")";
    case Where::WorkspaceRoot:
      if (recursive) return "aimed at the whole workspace (" + p.display + ")";
      return std::nullopt;
    case Where::Dynamic:
      if (recursive) return "aimed at a path computed at run time";
      return std::nullopt;
    default: return std::nullopt;
  }
}

std::optional<std::string> writeReason(const PathInfo& p) {
  switch (p.where) {
    case Where::Root:
    case Where::System: return "writes to a system path (" + p.display + ")";
    case Where::HomeRoot:
    case Where::Home: return "writes into the home directory (" + p.display + ")";
    case Where::Outside: return "writes outside the workspace (" + p.display + ")";
    case Where::Device: return "writes to a device (" + p.display + ")";
    case Where::Workspace:
    case Where::WorkspaceRoot: break;
    default: return std::nullopt;
  }
  const auto& c = p.comps;
  for (size_t k = 0; k < c.size(); ++k) {
    if (c[k] == ".git" && k + 1 < c.size() && (c[k + 1] == "hooks" || c[k + 1] == "config" || c[k + 1] == "info"))
      return "writes into git's hooks or config (" + p.display + ")";
    if (c[k] == ".pine") return "writes into pine's own state (" + p.display + ")";
  }
  if (c.empty()) return std::nullopt;
  const std::string& base = c.back();
  if (isEnvFile(base) || base == ".envrc") return "writes a secrets file (" + p.display + ")";
  static const std::array<std::string_view, 7> instructions = {
      "AGENTS.md", "CLAUDE.md", "GEMINI.md", ".cursorrules", ".windsurfrules", "copilot-instructions.md",
      "AGENT.md"};
  if (oneOf(base, instructions)) return "writes an agent instruction file (" + p.display + ")";
  return std::nullopt;
}

std::optional<std::string> credentialReason(const PathInfo& p) {
  if (p.where == Where::Dynamic || p.comps.empty()) return std::nullopt;
  const auto& c = p.comps;
  const std::string& base = c.back();
  auto why = [&] { return "reads credentials (" + p.display + ")"; };
  // Anywhere: key stores and secret files whatever directory they sit in.
  static const std::array<std::string_view, 12> dirs = {".ssh",   ".gnupg",          ".aws",      ".azure",
                                                        ".password-store", ".git-credentials", ".netrc", "_netrc",
                                                        ".pgpass", ".vault-token",   ".s3cfg",    ".boto"};
  for (size_t k = 0; k < c.size(); ++k) {
    if (oneOf(c[k], dirs)) return why();
    if (c[k] == ".docker" && k + 1 < c.size() && c[k + 1] == "config.json") return why();
    if (c[k] == ".kube" && k + 1 < c.size() && c[k + 1] == "config") return why();
  }
  if (isPrivateKeyName(base) || isEnvFile(base)) return why();
  if (endsWith(base, ".keychain") || endsWith(base, ".keychain-db")) return why();
  static const std::array<std::string_view, 7> history = {".bash_history", ".zsh_history", ".python_history",
                                                          ".node_repl_history", ".psql_history", ".mysql_history",
                                                          ".sh_history"};
  if (oneOf(base, history)) return why();
  if (p.where == Where::Home || p.where == Where::HomeRoot) {
    const std::string& top = c[0];
    static const std::array<std::string_view, 12> homeFiles = {
        ".npmrc", ".pypirc", ".yarnrc", ".yarnrc.yml", ".pine", ".mozilla", ".terraform.d", ".docker",
        ".kube",  ".my.cnf", ".cargo",  ".gem"};
    if (oneOf(top, homeFiles)) {
      if (top == ".cargo" || top == ".gem") {
        if (c.size() >= 2 && startsWith(c[1], "credentials")) return why();
      } else {
        return why();
      }
    }
    if (top == ".config" && c.size() >= 2) {
      static const std::array<std::string_view, 9> cfg = {"gh",     "gcloud", "hub",      "google-chrome", "chromium",
                                                           "op",     "rclone", "keyrings", "BraveSoftware"};
      if (oneOf(c[1], cfg)) return why();
      if (c[1] == "git" && c.size() >= 3 && c[2] == "credentials") return why();
      if (c[1] == "composer" && c.size() >= 3 && c[2] == "auth.json") return why();
    }
    if (top == "Library" && c.size() >= 2 && (c[1] == "Keychains" || c[1] == "Cookies")) return why();
    if (top == ".local" && c.size() >= 3 && c[1] == "share" && c[2] == "keyrings") return why();
    if (top == ".m2" && base == "settings.xml") return why();
    if (top == ".gradle" && base == "gradle.properties") return why();
    if (top == ".composer" && base == "auth.json") return why();
  }
  if (p.where == Where::System || p.where == Where::Device || p.where == Where::Root) {
    if (c[0] == "etc" && c.size() >= 2) {
      static const std::array<std::string_view, 9> etc = {"shadow",  "gshadow",       "shadow-", "gshadow-",
                                                          "passwd",  "master.passwd", "sudoers", "sudoers.d",
                                                          "krb5.keytab"};
      if (oneOf(c[1], etc)) return why();
      if (c[1] == "ssh" && endsWith(base, "_key")) return why();
      if (c[1] == "security" && base == "opasswd") return why();
    }
    if (c[0] == "proc" && c.size() >= 3 && (base == "environ" || base == "mem" || base == "maps")) return why();
    if (c[0] == "proc" && c.size() == 2 && c[1] == "kcore") return why();
    if (c[0] == "dev" && c.size() == 2 && (c[1] == "mem" || c[1] == "kmem")) return why();
    if ((c[0] == "run" && c.size() >= 2 && c[1] == "secrets") ||
        (c[0] == "var" && c.size() >= 3 && c[1] == "run" && c[2] == "secrets"))
      return why();
  }
  return std::nullopt;
}

}  // namespace pine::guard
