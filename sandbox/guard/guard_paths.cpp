#include "sandbox/guard/guard_paths.h"
#include "sandbox/guard/name_fold.h"
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


// A component that is the protected name, or a glob pattern that names it
// (~/.ss?/id_*, /etc/sha*). A pattern that matches anything (*, .*) is not
// taken for a particular name, and a leading dot must be matched by a dot, as
// bash's globbing requires.
bool compIs(std::string_view comp, std::string_view name) {
  if (comp == name) return true;
  if (comp.find_first_of("*?[") == std::string_view::npos || pureGlob(comp)) return false;
  if (!name.empty() && name[0] == '.' && (comp.empty() || comp[0] != '.')) return false;
  return shellPatternMatch(comp, name);
}

template <size_t N>
bool oneOf(std::string_view s, const std::array<std::string_view, N>& set) {
  return std::any_of(set.begin(), set.end(), [&](std::string_view n) { return compIs(s, n); });
}

bool isEnvFile(std::string_view base) {
  if (base.find_first_of("*?[") != std::string_view::npos)
    return compIs(base, ".env") || compIs(base, ".env.local") || compIs(base, ".env.production");
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
    if ((startsWith(base, k) || compIs(base, k)) && !endsWith(base, ".pub")) return true;
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
  // comps keep the spelling (for messages), folded the name as the file
  // system and the path jail compare it (.SSH is .ssh on macOS).
  std::vector<std::string> comps, folded;
  if (anchor == Home) comps = folded = {"home", "\x02"};
  int ups = 0;
  for (auto& c : split(full)) {
    if (c.empty() || c == ".") continue;
    if (c == "..") {
      if (!comps.empty()) {
        comps.pop_back();
        folded.pop_back();
      } else if (anchor == Rel) {
        ++ups;
      }
      continue;
    }
    comps.push_back(c);
    folded.push_back(foldName(c));
  }
  if (anchor == Rel) {
    info.comps = folded;
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
  const auto& f = folded;
  size_t homeStart = 0;
  if (f.size() >= 2 && (f[0] == "home" || f[0] == "users") && !pureGlob(f[1])) homeStart = 2;
  if (!f.empty() && f[0] == "root") homeStart = 1;
  if (f.size() >= 3 && f[0] == "var" && f[1] == "root") homeStart = 2;  // macOS root home
  if (f.size() >= 4 && f[0] == "private" && f[1] == "var" && f[2] == "root") homeStart = 3;
  if (homeStart > 0) {
    info.comps.assign(f.begin() + static_cast<long>(homeStart), f.end());
    std::vector<std::string> shown(comps.begin() + static_cast<long>(homeStart), comps.end());
    info.display = shown.empty() ? "~" : "~/" + join(shown);
    info.where = info.comps.empty() || (info.comps.size() == 1 && pureGlob(info.comps[0])) ? Where::HomeRoot
                                                                                            : Where::Home;
    return info;
  }
  info.comps = folded;
  info.display = "/" + join(comps);
  if (f.empty() || pureGlob(f[0])) {
    info.where = Where::Root;
    return info;
  }
  if (f[0] == "home" || f[0] == "users") {
    info.where = Where::HomeRoot;
    return info;
  }
  // macOS: /private/etc is /etc (and /private/tmp, /private/var below are tmp).
  std::vector<std::string> sys = f;
  if (sys.size() >= 2 && sys[0] == "private" && (sys[1] == "etc" || sys[1] == "var")) sys.erase(sys.begin());
  info.comps = sys;
  const auto& comps2 = sys;
  if (comps2[0] == "dev") {
    static const std::array<std::string_view, 9> safe = {"null",   "zero",    "stdout", "stderr", "stdin",
                                                         "tty",    "urandom", "random", "full"};
    if (comps2.size() >= 2 && (oneOf(comps2[1], safe) || comps2[1] == "fd" || comps2[1] == "pts"))
      info.where = Where::DevSafe;
    else if (comps2.size() >= 3 && comps2[1] == "shm")
      info.where = Where::Tmp;
    else if (comps2.size() >= 2)
      info.where = Where::Device;
    else
      info.where = Where::System;
    return info;
  }
  if (comps2.size() >= 4 && comps2[0] == "proc" && comps2[1] == "self" && comps2[2] == "fd") {
    info.where = Where::DevSafe;
    return info;
  }
  bool tmp = (comps2[0] == "tmp" && comps2.size() >= 2) ||
             (comps2.size() >= 3 && comps2[0] == "var" && (comps2[1] == "tmp" || comps2[1] == "folders")) ||
             (comps2.size() >= 3 && comps2[0] == "private" && comps2[1] == "tmp") ||
             (comps2.size() >= 4 && comps2[0] == "private" && comps2[1] == "var" && comps2[2] == "folders");
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
  // The temp folder itself as a destination (cp f "$TMPDIR"/): what is written lands inside it.
  // Deleting it stays refused (destructiveReason).
  const auto& d = p.comps;
  const bool tmpRoot = (d.size() == 1 && compIs(d[0], "tmp")) ||
                       (d.size() == 2 && (compIs(d[0], "var") || compIs(d[0], "private")) && compIs(d[1], "tmp"));
  if (p.where == Where::System && tmpRoot) return std::nullopt;
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
  // Components are folded (guard_paths.h): compare with lower-case names.
  const auto& c = p.comps;
  for (size_t k = 0; k < c.size(); ++k) {
    if (compIs(c[k], ".git")) {
      // What makes git run programs, at any depth below .git (modules/x/hooks,
      // worktrees/y/config), as the path jail protects it; and .git itself.
      if (k + 1 == c.size()) return "replaces a repository's .git (" + p.display + ")";
      if (compIs(c[k + 1], "info")) return "writes into git's hooks or config (" + p.display + ")";
      for (size_t j = k + 1; j < c.size(); ++j)
        if (compIs(c[j], "hooks") || compIs(c[j], "config") || compIs(c[j], "config.worktree"))
          return "writes into git's hooks or config (" + p.display + ")";
    }
    if (compIs(c[k], ".pine")) return "writes into pine's own state (" + p.display + ")";
    if (compIs(c[k], ".pi") || compIs(c[k], ".agents")) return "writes an agent instruction folder (" + p.display + ")";
  }
  if (c.empty()) return std::nullopt;
  const std::string& base = c.back();
  if (isEnvFile(base) || compIs(base, ".envrc")) return "writes a secrets file (" + p.display + ")";
  static const std::array<std::string_view, 10> instructions = {
      "agents.md", "claude.md", "gemini.md", ".cursorrules", ".windsurfrules", "copilot-instructions.md",
      "agent.md",  "soul.md",   "memory.md", "user.md"};
  if (oneOf(base, instructions)) return "writes an agent instruction file (" + p.display + ")";
  return std::nullopt;
}

// Another application's private data: mail, messages, browsers, password
// managers, the macOS privacy database. Components are folded.
static bool otherApplicationData(const PathInfo& p) {
  const auto& c = p.comps;
  if (p.where == Where::Home || p.where == Where::HomeRoot) {
    if (c.size() >= 2 && compIs(c[0], "library")) {
      static const std::array<std::string_view, 18> library = {
          "messages", "mail",    "safari",   "calendars", "accounts",        "suggestions", "containers",
          "webkit",   "homekit", "passes",   "identityservices", "group containers", "cookies",
          "mobile documents", "biome", "reminders", "daemon containers", "sharing"};
      if (oneOf(c[1], library)) return true;
      if (compIs(c[1], "application support") && c.size() >= 3) {
        static const std::array<std::string_view, 26> support = {
            "google",       "firefox",      "com.apple.tcc", "addressbook", "callhistorydb", "knowledge",
            "mobilesync",   "slack",        "discord",       "signal",      "telegram desktop", "1password",
            "microsoft edge", "bravesoftware", "arc",        "vivaldi",     "chromium",      "com.apple.sharedfilelist",
            "whatsapp",     "keepassxc",    "bitwarden",     "thunderbird", "zoom.us",       "com.operasoftware.opera",
            "callhistorytransactions", "dashlane"};
        if (oneOf(c[2], support)) return true;
      }
    }
    if (!c.empty() && (compIs(c[0], ".thunderbird") || compIs(c[0], ".mozilla") || compIs(c[0], ".purple") || compIs(c[0], ".pki")))
      return true;
    if (c.size() >= 2 && compIs(c[0], "pictures") && endsWith(c[1], ".photoslibrary")) return true;
    if (c.size() >= 2 && compIs(c[0], ".config")) {
      static const std::array<std::string_view, 12> config = {
          "google-chrome", "chromium", "bravesoftware", "signal",    "discord",   "slack",
          "microsoft-edge", "vivaldi", "opera",        "evolution", "keepassxc", "bitwarden"};
      if (oneOf(c[1], config)) return true;
    }
    if (c.size() >= 3 && compIs(c[0], ".local") && compIs(c[1], "share") &&
        (compIs(c[2], "telegramdesktop") || compIs(c[2], "evolution") || compIs(c[2], "keyrings")))
      return true;
  }
  if (p.where == Where::System) {
    if (c.size() >= 3 && compIs(c[0], "library") && compIs(c[1], "application support") && compIs(c[2], "com.apple.tcc")) return true;
    if (c.size() >= 3 && compIs(c[0], "var") && compIs(c[1], "db") && compIs(c[2], "dslocal")) return true;  // account hashes
  }
  return false;
}

std::optional<std::string> credentialReason(const PathInfo& p) {
  if (p.where == Where::Dynamic || p.comps.empty()) return std::nullopt;
  const auto& c = p.comps;  // folded: lower-case names
  const std::string& base = c.back();
  auto why = [&] { return "reads credentials (" + p.display + ")"; };
  if (otherApplicationData(p)) return "reads another application's data (" + p.display + ")";
  // Anywhere: key stores and secret files whatever directory they sit in.
  static const std::array<std::string_view, 12> dirs = {".ssh",   ".gnupg",          ".aws",      ".azure",
                                                        ".password-store", ".git-credentials", ".netrc", "_netrc",
                                                        ".pgpass", ".vault-token",   ".s3cfg",    ".boto"};
  for (size_t k = 0; k < c.size(); ++k) {
    if (oneOf(c[k], dirs)) return why();
    if (compIs(c[k], ".docker") && k + 1 < c.size() && compIs(c[k + 1], "config.json")) return why();
    if (compIs(c[k], ".kube") && k + 1 < c.size() && compIs(c[k + 1], "config")) return why();
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
      if (compIs(top, ".cargo") || compIs(top, ".gem")) {
        if (c.size() >= 2 && startsWith(c[1], "credentials")) return why();
      } else {
        return why();
      }
    }
    if (compIs(top, ".config") && c.size() >= 2) {
      static const std::array<std::string_view, 9> cfg = {"gh",     "gcloud", "hub",      "google-chrome", "chromium",
                                                           "op",     "rclone", "keyrings", "bravesoftware"};
      if (oneOf(c[1], cfg)) return why();
      if (compIs(c[1], "git") && c.size() >= 3 && compIs(c[2], "credentials")) return why();
      if (compIs(c[1], "composer") && c.size() >= 3 && compIs(c[2], "auth.json")) return why();
    }
    if (compIs(top, "library") && c.size() >= 2 && (compIs(c[1], "keychains") || compIs(c[1], "cookies"))) return why();
    if (compIs(top, ".local") && c.size() >= 3 && compIs(c[1], "share") && compIs(c[2], "keyrings")) return why();
    if (compIs(top, ".m2") && compIs(base, "settings.xml")) return why();
    if (compIs(top, ".gradle") && compIs(base, "gradle.properties")) return why();
    if (compIs(top, ".composer") && compIs(base, "auth.json")) return why();
  }
  if (p.where == Where::System || p.where == Where::Device || p.where == Where::Root) {
    if (compIs(c[0], "etc") && c.size() >= 2) {
      static const std::array<std::string_view, 9> etc = {"shadow",  "gshadow",       "shadow-", "gshadow-",
                                                          "passwd",  "master.passwd", "sudoers", "sudoers.d",
                                                          "krb5.keytab"};
      if (oneOf(c[1], etc)) return why();
      if (compIs(c[1], "ssh") && endsWith(base, "_key")) return why();
      if (compIs(c[1], "security") && compIs(base, "opasswd")) return why();
    }
    if (compIs(c[0], "proc") && c.size() >= 3 && (compIs(base, "environ") || compIs(base, "mem") || compIs(base, "maps"))) return why();
    if (compIs(c[0], "proc") && c.size() == 2 && compIs(c[1], "kcore")) return why();
    if (compIs(c[0], "dev") && c.size() == 2 && (compIs(c[1], "mem") || compIs(c[1], "kmem"))) return why();
    if ((compIs(c[0], "run") && c.size() >= 2 && compIs(c[1], "secrets")) ||
        (compIs(c[0], "var") && c.size() >= 3 && compIs(c[1], "run") && compIs(c[2], "secrets")))
      return why();
  }
  return std::nullopt;
}

}  // namespace pine::guard
