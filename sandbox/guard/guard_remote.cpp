#include "sandbox/guard/guard_remote.h"
#include "sandbox/guard/guard_paths.h"
#include "sandbox/guard/text.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace pine::guard {
namespace {

bool remIsOption(const std::string& s) { return s.size() > 1 && s[0] == '-'; }

// A word for a message: what was computed at run time shows as $...
std::string shown(const std::string& s) {
  std::string out;
  for (char c : s) out += c == kDynamic ? std::string("$...") : std::string(1, c);
  return out;
}

bool remOneOf(const std::string& s, std::initializer_list<const char*> set) {
  return std::any_of(set.begin(), set.end(), [&](const char* x) { return s == x; });
}

// The value of option `opt` (separate or attached with '='; short options
// also glued: -ihttp://...), or nullopt when it is not given.
std::optional<std::string> remValue(const std::vector<std::string>& args, std::initializer_list<const char*> opts) {
  for (size_t k = 1; k < args.size(); ++k) {
    for (const char* o : opts) {
      std::string ov(o);
      if (args[k] == ov) return k + 1 < args.size() ? args[k + 1] : std::string();
      if (startsWith(args[k], ov + "=")) return args[k].substr(ov.size() + 1);
      if (ov.size() == 2 && ov[0] == '-' && ov[1] != '-' && startsWith(args[k], ov) && args[k].size() > 2)
        return args[k].substr(2);
    }
  }
  return std::nullopt;
}

// Words after the verb at `from`, skipping options and the values of those that take one.
std::vector<std::string> remPositional(const std::vector<std::string>& args, size_t from,
                                       std::initializer_list<const char*> valueOpts = {}) {
  std::vector<std::string> out;
  for (size_t k = from; k < args.size(); ++k) {
    const std::string& t = args[k];
    if (t == "--") {
      out.insert(out.end(), args.begin() + static_cast<long>(k) + 1, args.end());
      break;
    }
    if (!remIsOption(t)) {
      out.push_back(t);
      continue;
    }
    if (t.find('=') != std::string::npos) continue;
    if (remOneOf(t, valueOpts)) ++k;
  }
  return out;
}

// The first positional word (the verb), its index in args.
size_t remVerbIndex(const std::vector<std::string>& args, std::initializer_list<const char*> valueOpts = {}) {
  for (size_t k = 1; k < args.size(); ++k) {
    const std::string& t = args[k];
    if (!remIsOption(t)) return k;
    if (t.find('=') == std::string::npos && remOneOf(t, valueOpts)) ++k;
  }
  return args.size();
}

// npm's owner/repo shorthand for a GitHub repository (not @scope/name, not a path or tarball).
bool githubShorthand(const std::string& s) {
  if (s.empty() || s[0] == '@' || s[0] == '.' || s[0] == '/' || s[0] == '~' || s[0] == '-') return false;
  std::string l = lower(s);
  if (endsWith(l, ".tgz") || endsWith(l, ".tar.gz") || endsWith(l, ".tar")) return false;
  size_t slash = s.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 >= s.size()) return false;
  std::string repo = s.substr(slash + 1);
  repo = repo.substr(0, repo.find('#'));
  if (repo.empty() || repo.find('/') != std::string::npos) return false;
  auto ok = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'; };
  return std::all_of(s.begin(), s.begin() + static_cast<long>(slash), ok) && std::all_of(repo.begin(), repo.end(), ok);
}

// A spec that is itself an address: a URL (not file://), a VCS URL, a hosted shorthand.
bool addressSpec(const std::string& l) {
  if (l.find("://") != std::string::npos && !startsWith(l, "file://")) return true;
  for (const char* p : {"git+", "hg+", "svn+", "bzr+", "git@", "github:", "gitlab:", "bitbucket:", "gist:",
                        "sourcehut:", "git:", "tarball+", "https:", "http:"})
    if (startsWith(l, p)) return true;
  return false;
}

// A package spec that names code outside the configured registry (or one
// computed at run time, which may). name@spec aliases are judged by the spec.
bool remoteSpec(const std::string& s, bool npmStyle) {
  std::string l = lower(s);
  if (l.find(kDynamic) != std::string::npos || addressSpec(l)) return true;
  size_t at = l.find('@', 1);
  if (at != std::string::npos && at + 1 < l.size()) {
    std::string spec = l.substr(at + 1);
    size_t b = spec.find_first_not_of(' ');  // PEP 508: name @ url
    if (b != std::string::npos && addressSpec(spec.substr(b))) return true;
  }
  return npmStyle && githubShorthand(s);
}

bool anyRemoteSpec(const std::vector<std::string>& words, bool npmStyle) {
  return std::any_of(words.begin(), words.end(), [&](const std::string& w) { return remoteSpec(w, npmStyle); });
}

std::optional<std::string> nodePackages(const std::string& name, const std::vector<std::string>& args) {
  auto why = [&](const std::string& what) { return name + " " + what; };
  if (auto reg = remValue(args, {"--registry"})) return why("uses another registry (" + shown(*reg) + ")");
  for (const auto& a : args)
    if (startsWith(lower(a), "--@") && a.find(":registry") != std::string::npos) return why("uses another registry");
  bool runner = name == "npx" || name == "bunx" || name == "pnpx";
  size_t v = runner ? 0 : remVerbIndex(args, {"--prefix", "-C", "--dir", "--filter", "--cwd", "-w", "--workspace"});
  std::string verb = v < args.size() && !runner ? args[v] : "";
  if (runner || remOneOf(verb, {"install", "i", "in", "ins", "inst", "insta", "instal", "isnt", "isnta", "isntal",
                                "isntall", "add", "update", "up", "upgrade", "exec", "x", "dlx", "create", "init",
                                "link", "ln", "global"})) {
    auto pos = remPositional(args, runner ? 1 : v + 1,
                             {"-p", "--package", "-c", "--call", "--prefix", "-C", "--dir", "--filter", "--tag",
                              "--workspace", "-w"});
    // A runner's (npx, npm exec, create) first word is the package, the rest its arguments.
    bool oneSpec = runner || remOneOf(verb, {"exec", "x", "dlx", "create", "init"});
    if (oneSpec && pos.size() > 1) pos.resize(1);
    if (auto pkg = remValue(args, {"-p", "--package"})) pos.push_back(*pkg);
    for (const auto& p : pos)
      if (remoteSpec(p, true)) return why("installs code from outside the registry (" + shown(p) + ")");
  }
  if (verb == "config" || verb == "set" || verb == "c") {
    auto pos = remPositional(args, v + 1);
    if (!pos.empty() && (pos[0] == "set" || pos[0] == "edit")) pos.erase(pos.begin());
    for (const auto& p : pos) {
      std::string key = lower(p.substr(0, p.find('=')));
      if (key == "registry" || endsWith(key, ":registry") || key == "script-shell" || key == "shell" ||
          key == "node-options" || key == "userconfig" || key == "globalconfig" || key == "git" ||
          key == "onload-script" || key == "init-module" || key == "npmregistryserver" ||
          key == "npmscopes" || key == "unsafehttpwhitelist")
        return why("config sets " + key + " (a registry or a program it runs)");
      break;
    }
  }
  return std::nullopt;
}

std::optional<std::string> pythonPackages(const std::string& name, const std::vector<std::string>& args) {
  auto why = [&](const std::string& what) { return name + " " + what; };
  for (const char* opt : {"-i", "--index-url", "--extra-index-url", "--index", "--default-index", "--extra-index",
                          "--trusted-host", "--pypi-mirror"})
    if (auto v = remValue(args, {opt})) return why("uses another package index (" + std::string(opt) + " " + *v + ")");
  if (auto links = remValue(args, {"-f", "--find-links"}))
    if (remoteSpec(*links, false)) return why("installs from a remote address (" + shown(*links) + ")");
  if (name == "conda" || name == "mamba" || name == "micromamba") {
    if (auto ch = remValue(args, {"-c", "--channel"}))
      if (remoteSpec(*ch, false)) return why("installs from a remote channel (" + shown(*ch) + ")");
    if (std::find(args.begin(), args.end(), "config") != args.end() && anyRemoteSpec(args, false))
      return why("config adds a remote channel");
  }
  size_t v = remVerbIndex(args, {"-C", "--directory", "--project"});
  std::string verb = v < args.size() ? args[v] : "";
  if (verb == "config" || verb == "source") {
    for (const auto& a : args) {
      std::string l = lower(a);
      if (l.find("index") != std::string::npos || l.find("trusted-host") != std::string::npos ||
          l.find("find-links") != std::string::npos || l.find("repositories") != std::string::npos ||
          (verb == "source" && (l == "add")))
        return why(verb + " points at another package index");
    }
  }
  auto pos = remPositional(args, 1, {"-r", "--requirement", "-c", "--constraint", "--python", "-p", "--with",
                                     "--from", "--spec", "--target", "-t", "--prefix", "--root"});
  for (const char* opt : {"-e", "--editable", "--with", "--from", "--spec", "-r", "--requirement", "--constraint"})
    if (auto val = remValue(args, {opt})) pos.push_back(*val);
  for (const auto& p : pos)
    if (remoteSpec(p, false)) return why("installs code from a remote address (" + shown(p) + ")");
  return std::nullopt;
}

std::optional<std::string> otherPackages(const std::string& name, const std::vector<std::string>& args) {
  auto why = [&](const std::string& what) { return name + " " + what; };
  size_t v = remVerbIndex(args);
  std::string verb = v < args.size() ? args[v] : "";
  auto after = remPositional(args, v < args.size() ? v + 1 : args.size());
  if (name == "gem" || ((name == "bundle" || name == "bundler") && remOneOf(verb, {"add", "inject", "config", "install"}))) {
    if (auto s = name == "gem" ? remValue(args, {"--source", "-s", "--clear-sources"}) : remValue(args, {"--source", "--git", "--github"}))
      return why("installs from " + *s);
    if (std::find(args.begin(), args.end(), "--clear-sources") != args.end()) return why("replaces its sources");
    if (verb == "sources" && (std::find(args.begin(), args.end(), "--add") != args.end() ||
                              std::find(args.begin(), args.end(), "-a") != args.end()))
      return why("sources adds a remote index");
    if (verb == "config")
      for (const auto& a : after)
        if (startsWith(lower(a), "mirror") || startsWith(lower(a), "set")) {
          if (a != "set") return why("config sets a mirror");
          if (after.size() >= 2 && startsWith(lower(after[1]), "mirror")) return why("config sets a mirror");
        }
    if (anyRemoteSpec(after, false)) return why("installs from a remote address");
  }
  if (name == "cargo") {
    if (auto s = remValue(args, {"--git", "--index"})) return why("installs from " + *s);
    if (remValue(args, {"--config"})) return why("--config can name registries and programs cargo runs");
  }
  if (name == "go") {
    if (std::find(args.begin(), args.end(), "-insecure") != args.end()) return why("-insecure fetches without TLS");
    if ((verb == "install" || verb == "run") &&
        std::any_of(after.begin(), after.end(), [](const std::string& p) { return p.find('@') != std::string::npos; }))
      return why(verb + " fetches and runs a remote module (" + after.front() + ")");
    if (verb == "env" && (std::find(args.begin(), args.end(), "-w") != args.end()))
      for (const auto& a : after) {
        std::string key = a.substr(0, a.find('='));
        if (remOneOf(key, {"GOPROXY", "GOSUMDB", "GONOSUMDB", "GONOSUMCHECK", "GOINSECURE", "GOPRIVATE",
                           "GONOPROXY", "GOFLAGS", "GOTOOLCHAIN", "GOVCS", "GOAUTH"}))
          return why("env -w " + key + " changes where modules come from or what builds them");
      }
  }
  if (name == "brew") {
    if (verb == "tap" && !after.empty()) return why("tap adds a third-party formula repository");
    if (remOneOf(verb, {"install", "reinstall", "upgrade", "fetch", "extract"}))
      for (const auto& p : after)
        if (remoteSpec(p, false) || std::count(p.begin(), p.end(), '/') >= 2)
          return why("installs from outside Homebrew's own repositories (" + shown(p) + ")");
  }
  if (name == "composer") {
    if (remValue(args, {"--repository", "--repository-url"})) return why("uses another repository");
    if (verb == "config" && !after.empty() && (startsWith(after[0], "repositories") || startsWith(after[0], "repo")))
      return why("config adds a repository");
  }
  if (name == "dotnet" || name == "nuget") {
    if (auto s = remValue(args, {"--source", "-s", "--add-source", "-Source"}))
      if (remoteSpec(*s, false)) return why("uses another package source (" + shown(*s) + ")");
    if ((verb == "nuget" || verb == "sources") && std::find(args.begin(), args.end(), "add") != args.end())
      return why("adds a package source");
  }
  if (name == "dart" || name == "flutter") {
    if (remValue(args, {"--git-url", "--hosted-url", "--hosted"})) return why("installs from another source");
    if (auto s = remValue(args, {"-s", "--source"}))
      if (*s == "git" || *s == "hosted") return why("activates a package from another source");
    if (anyRemoteSpec(after, false)) return why("installs from a remote address");
  }
  if (name == "helm") {
    if ((verb == "repo" && !after.empty() && after[0] == "add") || (verb == "plugin" && !after.empty() && after[0] == "install"))
      return why(verb + " " + after[0] + " adds a remote source");
    if (anyRemoteSpec(after, false)) return why("installs a chart from a remote address");
  }
  if (name == "dpkg" && (std::find(args.begin(), args.end(), "-i") != args.end() ||
                         std::find(args.begin(), args.end(), "--install") != args.end() ||
                         std::find(args.begin(), args.end(), "--unpack") != args.end()))
    return why("installs a package file system-wide");
  if (name == "rpm")
    for (const auto& a : args)
      if (a == "--install" || a == "--upgrade" || a == "--freshen" ||
          (a.size() > 1 && a[0] == '-' && a[1] != '-' && a.find_first_of("iUF") != std::string::npos))
        return why("installs a package file system-wide");
  if (name == "pacman")
    for (const auto& a : args)
      if (a.size() > 1 && a[0] == '-' && a[1] == 'U') return why("installs a package file");
  if (name == "apt" || name == "apt-get" || name == "aptitude" || name == "yum" || name == "dnf" || name == "zypper" ||
      name == "apk" || name == "snap" || name == "flatpak" || name == "port" || name == "pkg") {
    if (remOneOf(verb, {"ar", "addrepo", "remote-add", "config-manager"}) ||
        std::find(args.begin(), args.end(), "--add-repo") != args.end() || remValue(args, {"--repository", "-X"}))
      return why("adds a package repository");
    if (std::find(args.begin(), args.end(), "--dangerous") != args.end() ||
        std::find(args.begin(), args.end(), "--devmode") != args.end())
      return why("installs an unsigned package");
    for (const auto& p : after) {
      std::string l = lower(p);
      if (remoteSpec(p, false) || endsWith(l, ".deb") || endsWith(l, ".rpm") || endsWith(l, ".snap") ||
          endsWith(l, ".flatpakref") || endsWith(l, ".apk"))
        return why("installs a package file or address (" + shown(p) + ")");
    }
  }
  if (name == "yum-config-manager") return why("adds a package repository");
  if (name == "nix" || name == "nix-env" || name == "nix-build" || name == "nix-channel" || name == "nix-shell") {
    if (name == "nix-channel" && std::find(args.begin(), args.end(), "--add") != args.end())
      return why("adds a channel");
    for (const auto& a : args)
      if (remoteSpec(a, false)) return why("builds or runs code from a remote source (" + shown(a) + ")");
  }
  if ((name == "code" || name == "codium" || name == "cursor" || name == "code-insiders" || name == "windsurf") &&
      remValue(args, {"--install-extension"}))
    return why("installs an editor extension from the marketplace");
  if (name == "cpan" || name == "cpanm") {
    if (remValue(args, {"--mirror", "-M", "--from"})) return why("uses another mirror");
    if (anyRemoteSpec(after, false) || anyRemoteSpec(std::vector<std::string>{verb}, false))
      return why("installs from a remote address");
  }
  if (name == "luarocks" && remValue(args, {"--server", "--only-server", "--from"})) return why("uses another server");
  if (name == "opam" && (verb == "repository" || verb == "repo" || (verb == "pin" && anyRemoteSpec(after, false))))
    return why(verb + " adds a remote source");
  if (name == "conan" && verb == "remote" && !after.empty() && after[0] == "add") return why("remote add");
  if (name == "deno" && remOneOf(verb, {"install", "compile", "cache", "add", "run", "x"}) && anyRemoteSpec(after, false))
    return why(verb + " fetches code from a remote address");
  if (name == "gh" || name == "glab" || name == "hub" || name == "tea") {
    std::string object = verb, action = after.empty() ? "" : after[0];
    if ((object == "repo" && (action == "clone" || (action == "fork" && std::find(args.begin(), args.end(), "--clone") != args.end()))) ||
        object == "clone")
      return why("clones code from a remote repository");
    if ((object == "extension" || object == "ext" || object == "extensions") &&
        remOneOf(action, {"install", "upgrade", "exec"}))
      return why(object + " " + action + " installs or runs code from a remote repository");
    if (object == "api") {
      for (size_t k = 1; k < args.size(); ++k) {
        const std::string& t = args[k];
        std::string key = t.substr(0, t.find('='));
        if (key == "-f" || key == "-F" || key == "--field" || key == "--raw-field" || key == "--input" ||
            ((key == "-X" || key == "--method") && lower(k + 1 < args.size() && t.find('=') == std::string::npos ? args[k + 1] : t.substr(t.find('=') + 1)) != "get"))
          return why("api sends data to the server");
      }
    }
  }
  if (name == "uvx" || name == "pipx") {
    if (anyRemoteSpec(args, false)) return why("runs code from a remote address");
  }
  return std::nullopt;
}

// Version control other than git: hg, svn, fossil, bzr, darcs.
std::optional<std::string> otherVcs(const std::string& name, const std::vector<std::string>& args) {
  if (!remOneOf(name, {"hg", "svn", "fossil", "bzr", "brz", "darcs", "svnadmin", "svnsync"})) return std::nullopt;
  auto pos = remPositional(args, 1, {"-m", "--message", "-F", "--file", "-r", "--rev", "--revision", "--username",
                                     "--password", "--config-dir", "--config-option", "--config", "--depth", "--accept",
                                     "--encoding", "--cl", "--changelist", "-c", "--change", "--limit", "-l", "-R",
                                     "--repository", "-u", "--user", "-d", "--date", "-b", "--branch"});
  for (const auto& p : pos)
    if (p.find("://") != std::string::npos && !startsWith(lower(p), "file://"))
      return name + " reaches a network location given in the command (" + shown(p) + ")";
  return std::nullopt;
}

}  // namespace

bool isRemoteLocation(const std::string& word) {
  std::string l = lower(word);
  if (l.empty() || l[0] == '-') return false;
  if (l.find(kDynamic) != std::string::npos) return true;  // computed at run time: it could be anywhere
  if (l.find("://") != std::string::npos) return !startsWith(l, "file://");
  if (remoteSpec(word, false)) return true;
  // scp-like [user@]host:path: a colon before any slash, and not a drive letter.
  size_t colon = l.find(':');
  size_t slash = l.find('/');
  if (colon == std::string::npos || colon < 2 || (slash != std::string::npos && slash < colon)) return false;
  if (l[0] == '.' || l[0] == '~') return false;
  return true;
}

std::optional<std::string> remoteSource(const std::string& name, const std::vector<std::string>& args) {
  static const std::set<std::string> node = {"npm", "pnpm", "yarn", "bun", "cnpm", "npx", "bunx", "pnpx", "ni"};
  static const std::set<std::string> python = {"pip", "pip3", "pipx", "uv", "pdm", "poetry", "pipenv", "conda",
                                               "mamba", "micromamba", "easy_install", "hatch", "rye", "uvx"};
  if (node.count(name) || startsWith(name, "npm")) {
    if (auto why = nodePackages(name, args)) return why;
  }
  bool pipVersion = startsWith(name, "pip") && name.size() > 3 &&
                    std::all_of(name.begin() + 3, name.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; });
  if (python.count(name) || pipVersion) {
    if (auto why = pythonPackages(name, args)) return why;
  }
  if (auto why = otherPackages(name, args)) return why;
  return otherVcs(name, args);
}

std::optional<std::string> gitRemote(const std::string& sub, const std::vector<std::string>& rest,
                                     std::set<std::string>& addedRemotes) {
  auto firstPositional = [&](std::initializer_list<const char*> valueOpts) -> std::string {
    for (size_t k = 0; k < rest.size(); ++k) {
      const std::string& t = rest[k];
      if (t == "--") return k + 1 < rest.size() ? rest[k + 1] : std::string();
      if (!remIsOption(t)) return t;
      if (t.find('=') == std::string::npos && remOneOf(t, valueOpts)) ++k;
    }
    return std::string();
  };
  auto has = [&](std::initializer_list<const char*> opts) {
    for (const auto& t : rest)
      for (const char* o : opts)
        if (t == o || startsWith(t, std::string(o) + "=")) return true;
    return false;
  };
  auto optValue = [&](const char* opt) -> std::optional<std::string> {
    for (size_t k = 0; k < rest.size(); ++k) {
      if (rest[k] == opt) return k + 1 < rest.size() ? rest[k + 1] : std::string();
      if (startsWith(rest[k], std::string(opt) + "=")) return rest[k].substr(std::string(opt).size() + 1);
    }
    return std::nullopt;
  };
  if (remOneOf(sub, {"fetch-pack", "send-pack", "http-fetch", "http-push", "remote-http", "remote-https",
                     "remote-ftp", "remote-ftps"}))
    return "runs a git network transport directly";
  if (sub == "clone") {
    std::string repo = firstPositional({"-b", "--branch", "-o", "--origin", "-c", "--config", "--depth",
                                        "--reference", "--reference-if-able", "--separate-git-dir", "-u",
                                        "--upload-pack", "--template", "-j", "--jobs", "--filter", "--shallow-since",
                                        "--shallow-exclude", "--bundle-uri", "--server-option", "--ref-format"});
    if (isRemoteLocation(repo)) return "clones code from a network location (" + shown(repo) + ")";
    if (has({"--recurse-submodules", "--recursive"})) return "clones submodules from the URLs in .gitmodules";
    if (optValue("--bundle-uri")) return "clones from a bundle address";
  }
  if (sub == "fetch" || sub == "pull" || sub == "push" || sub == "ls-remote") {
    std::string remote = firstPositional({"--depth", "--deepen", "--shallow-since", "--shallow-exclude", "--refmap",
                                          "-j", "--jobs", "-o", "--server-option", "--push-option", "--negotiation-tip",
                                          "--filter", "--recurse-submodules-default", "--sort", "--upload-pack",
                                          "--receive-pack", "--exec", "-s", "--strategy", "-X", "--strategy-option",
                                          "--repo"});
    if (auto repo = optValue("--repo")) remote = *repo;
    if (isRemoteLocation(remote)) return sub + " reaches a network location given in the command (" + shown(remote) + ")";
    if (addedRemotes.count(remote))
      return sub + " reaches the network location this command just gave remote " + remote;
  }
  if (sub == "remote") {
    std::string verb = firstPositional({"-t", "-m"});
    if (verb == "add" || verb == "set-url") {
      std::vector<std::string> pos;
      for (size_t k = 0; k < rest.size(); ++k) {
        if (rest[k] == "-t" || rest[k] == "-m") {
          ++k;
          continue;
        }
        if (!remIsOption(rest[k])) pos.push_back(rest[k]);
      }
      // A new remote is configuration until it is used; changing where an
      // existing one points redirects every later fetch and push, the owner's too.
      for (size_t k = 2; k < pos.size(); ++k) {
        if (!isRemoteLocation(pos[k])) continue;
        if (verb == "set-url") return "remote set-url points " + pos[1] + " at a network location (" + pos[k] + ")";
        addedRemotes.insert(pos[1]);
      }
    }
  }
  if (sub == "submodule") {
    std::string verb = firstPositional({"-b", "--branch", "--name", "--reference", "--depth", "-j", "--jobs"});
    if (verb == "add") {
      for (const auto& t : rest)
        if (isRemoteLocation(t)) return "submodule add clones code from a network location (" + shown(t) + ")";
    }
    if (verb == "init" || verb == "sync" || verb == "set-url") return "submodule " + verb + " takes remote URLs from .gitmodules";
    if (verb == "update" && has({"--init", "--remote", "--recursive"}))
      return "submodule update fetches from the URLs in .gitmodules";
  }
  if (sub == "archive") {
    if (auto r = optValue("--remote"))
      if (isRemoteLocation(*r)) return "archive reads from a network location (" + shown(*r) + ")";
  }
  if (sub == "request-pull" || sub == "svn" || sub == "p4" || sub == "lfs") {
    for (const auto& t : rest)
      if (t.find("://") != std::string::npos && !startsWith(lower(t), "file://"))
        return sub + " reaches a network location given in the command (" + shown(t) + ")";
  }
  return std::nullopt;
}

}  // namespace pine::guard
