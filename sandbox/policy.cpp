#include "sandbox/policy.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "common/path_parts.h"
#include "sandbox/jail/name_rules.h"
#include "sandbox/system_runtime.h"

namespace pine::sandbox {
namespace {

struct DirCloser {
  void operator()(DIR* d) const { closedir(d); }
};
using DirPtr = std::unique_ptr<DIR, DirCloser>;

std::optional<std::string> realPath(const std::string& p) {
  std::unique_ptr<char, decltype(&free)> r(realpath(p.c_str(), nullptr), &free);
  if (!r) return std::nullopt;
  return std::string(r.get());
}

bool isDir(const std::string& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool exists(const std::string& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0;
}

void sortUnique(std::vector<std::string>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

std::string join(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

// Canonical form of one of pine's own paths (configuration, not a request):
// empty stays empty.
std::string canonOwn(const std::string& p, const char* what) {
  if (p.empty()) return p;
  try {
    return canonicalPath(p);
  } catch (const PolicyError& e) {
    throw PolicyError(std::string(what) + ": " + e.what());
  }
}

// Walks the agent's own trees once for what the OS must guard by name, since neither Landlock
// nor a mount can refuse a name: secrets files (.env, .env.* in any letter case, as the path
// jail compares names) wherever the agent can read, and in a tainted session the instruction
// files and git settings wherever it can write. Does not follow symlinks (a link leads to a
// tree that is guarded where it lies, or not readable at all) and stops, refusing the task,
// past a budget: an unscanned tree would be an unguarded one.
class TreeScan {
 public:
  explicit TreeScan(Policy& pol) : pol_(pol) {}

  void readable(const std::string& dir) { walk(dir, 0, false); }
  void writable(const std::string& dir, bool tainted) { walk(dir, 0, tainted); }

 private:
  static constexpr size_t kMaxDirs = 50000;
  static constexpr int kMaxDepth = 64;

  static bool secretName(const std::string& name) {
    static const NameRules secrets(NameRules::secretFiles());
    return secrets.refusing(name, false) != nullptr;
  }

  void visitGitDir(const std::string& g, int depth) {
    pol_.denyWrite.push_back(g + "/hooks");
    pol_.denyWrite.push_back(g + "/config");
    // Submodules keep their git directories under .git/modules/<name>/, nested
    // as deep as the submodules are.
    std::string modules = g + "/modules";
    if (isDir(modules)) walkModules(modules, depth + 1);
  }

  void walkModules(const std::string& dir, int depth) {
    forEachEntry(dir, depth, [&](const std::string& path, const std::string&, bool dir_) {
      if (!dir_) return;
      if (exists(path + "/HEAD") && (exists(path + "/config") || isDir(path + "/objects")))
        visitGitDir(path, depth + 1);
      else
        walkModules(path, depth + 1);
    });
  }

  void walk(const std::string& dir, int depth, bool tainted) {
    const auto& names = instructionNames();
    forEachEntry(dir, depth, [&](const std::string& path, const std::string& name, bool dir_) {
      if (secretName(name)) {
        pol_.denyRead.push_back(path);  // a folder named .env is denied whole
        return;
      }
      bool guardedHere = tainted && std::find(names.begin(), names.end(), name) != names.end();
      if (guardedHere) pol_.denyWrite.push_back(path);  // .pi/ and .agents/ are denied whole
      if (!dir_) {
        // A `.git` file ("gitdir: ..." of a worktree or submodule) points git at its settings: a
        // tainted run rewriting it would move the repository's config to one it wrote.
        struct stat st;
        if (tainted && name == ".git" && lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) pol_.denyWrite.push_back(path);
        return;
      }
      if (tainted && name == ".git") visitGitDir(path, depth + 1);
      // Below a guarded folder or inside .git only secrets are left to find.
      walk(path, depth + 1, tainted && !guardedHere && name != ".git");
    });
  }

  template <class F>
  void forEachEntry(const std::string& dir, int depth, F&& f) {
    if (depth > kMaxDepth || ++dirs_ > kMaxDirs)
      throw PolicyError("the folders the agent may read, with " + dir + ", are too large or deep to check for "
                        "secrets files (.env) and, in a tainted session, git settings and instruction files (more "
                        "than " + std::to_string(kMaxDirs) + " folders or " + std::to_string(kMaxDepth) +
                        " levels); the task is refused rather than run unchecked. Grant or open a smaller folder.");
    int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return;  // unreadable to the supervisor: unreadable to the worker too
    DirPtr d(fdopendir(fd));
    if (!d) {
      close(fd);
      return;
    }
    while (dirent* e = readdir(d.get())) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      std::string path = join(dir, name);
      bool isDirectory;
      if (e->d_type == DT_UNKNOWN) {
        isDirectory = isDir(path);
      } else {
        isDirectory = e->d_type == DT_DIR;
      }
      f(path, name, isDirectory);
    }
  }

  Policy& pol_;
  size_t dirs_ = 0;
};

struct Protected {
  std::string path;
  std::string what;
};

std::vector<Protected> protectedPaths(const AgentPaths& p) {
  std::vector<Protected> out;
  if (!p.pineHome.empty()) {
    out.push_back({join(p.pineHome, ".env"), "pine's .env (secrets)"});
    out.push_back({p.pineHome, "pine's home"});
    std::string agents = join(p.pineHome, "agents");
    if (DirPtr d(opendir(agents.c_str())); d) {
      while (dirent* e = readdir(d.get())) {
        std::string name = e->d_name;
        if (name == "." || name == ".." || name == p.agentId) continue;
        out.push_back({join(agents, name), "another agent's folder (" + name + ")"});
      }
    }
  }
  if (!p.programDir.empty()) out.push_back({p.programDir, "pine's program files"});
  for (auto& w : p.otherWorkspaces)
    if (!w.empty()) out.push_back({w, "another agent's workspace"});
  return out;
}

AgentPaths canonicalAgentPaths(const AgentPaths& in) {
  AgentPaths p = in;
  p.pineHome = canonOwn(in.pineHome, "pine's home");
  p.userHome = canonOwn(in.userHome, "the owner's home");
  p.workspace = canonOwn(in.workspace, "the workspace");
  p.privateHome = canonOwn(in.privateHome, "the private home");
  p.tmpdir = canonOwn(in.tmpdir, "the temp folder");
  p.docs = canonOwn(in.docs, "pine's docs");
  p.programDir = canonOwn(in.programDir, "pine's program folder");
  p.openedFolder = canonOwn(in.openedFolder, "the opened folder");
  p.userMd = canonOwn(in.userMd, "USER.md");
  for (auto& s : p.skills) s = canonOwn(s, "a skills folder");
  for (auto& w : p.otherWorkspaces) w = canonOwn(w, "another agent's workspace");
  if (p.pineHome.empty()) throw PolicyError("pine's home is not set: no policy can keep it closed");
  if (p.workspace.empty() || p.privateHome.empty() || p.tmpdir.empty())
    throw PolicyError("an agent needs a workspace, a private home and a temp folder");
  return p;
}

// The agent's own writable roots may lie inside pine's home (agents/<id>/..,
// sandbox/<id>/) but may not contain what must stay closed or overlap another
// agent. This is a configuration error, reported as such.
void checkOwnRoot(const std::string& root, const char* what, const AgentPaths& p,
                  const std::vector<Protected>& prot) {
  for (auto& x : prot) {
    if (pathWithin(x.path, root))
      throw PolicyError(std::string(what) + " " + root + " contains " + x.what + " (" + x.path +
                        "); move it so it does not, pine never exposes that to an agent");
    if (x.what != "pine's home" && pathWithin(root, x.path))
      throw PolicyError(std::string(what) + " " + root + " lies inside " + x.what + " (" + x.path + ")");
  }
  (void)p;
}

std::string grantPath(const std::string& request, const Variables& vars, const AgentPaths& p, const char* kind) {
  std::string canon;
  try {
    canon = canonicalPath(expandVariables(request, vars));
  } catch (const PolicyError& e) {
    throw PolicyError(std::string(kind) + " grant \"" + request + "\": " + e.what());
  }
  if (auto why = neverGrantableReason(canon, p))
    throw PolicyError(std::string(kind) + " grant \"" + request + "\" (" + canon + ") refused: " + *why);
  return canon;
}

}  // namespace

const char* networkName(Network n) {
  switch (n) {
    case Network::None: return "none";
    case Network::Localhost: return "localhost";
    case Network::All: return "all";
  }
  return "none";
}

Network parseNetwork(std::string_view s) {
  if (s == "none") return Network::None;
  if (s == "localhost") return Network::Localhost;
  if (s == "all") return Network::All;
  throw PolicyError("network must be none, localhost or all, not \"" + std::string(s) + "\"");
}

Network widest(Network a, Network b) { return (int)a > (int)b ? a : b; }

std::string expandVariables(std::string_view text, const Variables& vars) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '{') {
      size_t end = text.find('}', i + 2);
      if (end == std::string_view::npos)
        throw PolicyError("unterminated variable in \"" + std::string(text) + "\" (write ${NAME})");
      std::string name(text.substr(i + 2, end - i - 2));
      auto it = vars.find(name);
      if (it == vars.end()) {
        std::string known;
        for (auto& [k, v] : vars) known += (known.empty() ? "${" : ", ${") + k + "}";
        throw PolicyError("unknown variable ${" + name + "} in \"" + std::string(text) + "\" (known: " + known + ")");
      }
      if (it->second.empty()) throw PolicyError("variable ${" + name + "} has no value here");
      out += it->second;
      i = end + 1;
    } else {
      out += text[i++];
    }
  }
  return out;
}

std::string canonicalPath(std::string_view path) {
  if (path.empty()) throw PolicyError("empty path");
  if (path[0] != '/') throw PolicyError("relative path \"" + std::string(path) + "\": sandbox paths must be absolute");
  if (path.find('\0') != std::string_view::npos) throw PolicyError("path contains a NUL byte");
  std::vector<std::string> comps;
  for (auto& c : splitPath(path, true))
    if (c != ".") comps.push_back(std::move(c));
  // The longest prefix that exists is resolved by the kernel's rules (symlinks,
  // ".." after a link); the rest cannot contain links, only plain names.
  for (size_t k = comps.size() + 1; k-- > 0;) {
    std::string prefix = "/";
    for (size_t i = 0; i < k; ++i) prefix = join(prefix, comps[i]);
    auto real = realPath(prefix);
    if (!real) continue;
    std::string out = *real;
    for (size_t i = k; i < comps.size(); ++i) {
      if (comps[i] == "..")
        throw PolicyError("\"" + std::string(path) + "\" uses \"..\" after " + join(out, "") +
                          " which does not exist; name the folder directly");
      out = join(out, comps[i]);
    }
    return out;
  }
  throw PolicyError("cannot resolve \"" + std::string(path) + "\"");
}

bool pathWithin(std::string_view inner, std::string_view outer) {
  if (outer == "/") return !inner.empty() && inner[0] == '/';
  if (inner.size() < outer.size() || inner.compare(0, outer.size(), outer) != 0) return false;
  return inner.size() == outer.size() || inner[outer.size()] == '/';
}

std::vector<std::string> defaultSystemReadable() {
  std::vector<std::string> out;
  for (const char* r : systemRoots())
    if (auto real = realPath(r)) out.push_back(*real);
  sortUnique(out);
  return out;
}

std::vector<std::string> defaultSystemWritable() {
  std::vector<std::string> out;
  for (const char* r : {"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"})
    if (auto real = realPath(r)) out.push_back(*real);
  sortUnique(out);
  return out;
}

std::vector<std::string> defaultSystemDenyRead() {
  std::vector<std::string> out;
  for (const char* r : {"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers",
                        "/etc/sudoers.d", "/etc/ssh", "/etc/ssl/private", "/etc/security/opasswd",
                        "/etc/credstore", "/etc/credstore.encrypted", "/etc/krb5.keytab",
                        "/private/etc/sudoers", "/private/etc/master.passwd"})
    if (auto real = realPath(r)) out.push_back(*real);
  sortUnique(out);
  return out;
}

const std::vector<std::string>& homeConfigNames() {
  static const std::vector<std::string> names = {
      ".profile", ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".zshrc", ".zshenv", ".zprofile",
      ".zlogin", ".shrc", ".kshrc", ".inputrc", ".gitconfig", ".npmrc", ".yarnrc", ".curlrc", ".wgetrc", ".netrc",
      ".pypirc", ".pythonrc", ".config/", ".local/", ".ssh/", ".pip/", ".gnupg/", ".node_modules/", ".node_libraries/"};
  return names;
}

const std::vector<std::string>& instructionNames() {
  static const std::vector<std::string> names = {"AGENTS.md", "SOUL.md", "MEMORY.md", "USER.md",
                                                 "CLAUDE.md", ".pi",     ".agents"};
  return names;
}

std::optional<std::string> neverGrantableReason(const std::string& canonical, const AgentPaths& raw) {
  if (canonical.empty() || canonical[0] != '/') return "not an absolute path";
  // Callers may pass paths as configured; compare canonical forms only.
  AgentPaths p = raw;
  auto canonOr = [](const std::string& s) {
    if (s.empty()) return s;
    try {
      return canonicalPath(s);
    } catch (const PolicyError&) {
      return s;
    }
  };
  p.pineHome = canonOr(p.pineHome);
  p.programDir = canonOr(p.programDir);
  p.workspace = canonOr(p.workspace);
  p.privateHome = canonOr(p.privateHome);
  p.tmpdir = canonOr(p.tmpdir);
  for (auto& w : p.otherWorkspaces) w = canonOr(w);
  bool insideOwn = false;
  for (const std::string* own : {&p.workspace, &p.privateHome, &p.tmpdir})
    if (!own->empty() && pathWithin(canonical, *own)) insideOwn = true;
  auto prot = protectedPaths(p);
  for (auto& x : prot)
    if (canonical == x.path) return "it is " + x.what + " (" + x.path + "), which no grant can open";
  for (auto& x : prot) {
    if (pathWithin(x.path, canonical))
      return "it contains " + x.what + " (" + x.path +
             "), which no grant can open; grant a folder that does not contain it";
    if (pathWithin(canonical, x.path) && !insideOwn)
      return "it lies inside " + x.what + " (" + x.path + "), which no grant can open";
  }
  return std::nullopt;
}

Variables agentVariables(const AgentPaths& p) {
  return {{"WORKSPACE", p.workspace}, {"HOME", p.userHome}, {"TMPDIR", p.tmpdir}};
}

Policy agentPolicy(const AgentPaths& raw, const Grants& grants, bool tainted) {
  AgentPaths p = canonicalAgentPaths(raw);
  auto prot = protectedPaths(p);
  checkOwnRoot(p.workspace, "the workspace", p, prot);
  checkOwnRoot(p.privateHome, "the private home", p, prot);
  checkOwnRoot(p.tmpdir, "the temp folder", p, prot);
  if (!p.openedFolder.empty())
    if (auto why = neverGrantableReason(p.openedFolder, p))
      throw PolicyError("the opened folder " + p.openedFolder + " is refused: " + *why);
  if (!p.userMd.empty() && p.userMd != join(p.pineHome, "USER.md"))
    throw PolicyError("USER.md must be pine's own (" + join(p.pineHome, "USER.md") + "), not " + p.userMd);

  Variables vars = agentVariables(p);
  Policy pol;
  pol.network = grants.network;

  pol.readable = p.systemReadable.empty() ? defaultSystemReadable() : p.systemReadable;
  for (auto& r : pol.readable) r = canonOwn(r, "a system path");
  if (!p.programDir.empty()) pol.readable.push_back(p.programDir);
  if (!p.docs.empty()) pol.readable.push_back(p.docs);
  for (auto& s : p.skills) pol.readable.push_back(s);
  std::vector<std::string> grantedRead;
  for (auto& r : grants.read) grantedRead.push_back(grantPath(r, vars, p, "read"));
  pol.readable.insert(pol.readable.end(), grantedRead.begin(), grantedRead.end());

  pol.writable = {p.workspace, p.privateHome, p.tmpdir};
  if (!p.openedFolder.empty()) pol.writable.push_back(p.openedFolder);
  if (!p.userMd.empty() && !tainted) pol.writable.push_back(p.userMd);
  for (auto& w : p.systemWritable.empty() ? defaultSystemWritable() : p.systemWritable)
    pol.writable.push_back(canonOwn(w, "a system path"));
  std::vector<std::string> grantedWrite;
  for (auto& w : grants.write) grantedWrite.push_back(grantPath(w, vars, p, "write"));
  pol.writable.insert(pol.writable.end(), grantedWrite.begin(), grantedWrite.end());

  pol.denyRead = defaultSystemDenyRead();
  for (auto& x : prot)
    if (x.what != "pine's home" && x.what != "pine's program files") pol.denyRead.push_back(x.path);
  pol.denyRead.push_back(join(p.pineHome, "data"));
  if (!p.userHome.empty())
    for (const char* s : {".ssh", ".gnupg", ".aws"}) pol.denyRead.push_back(join(p.userHome, s));

  if (!p.programDir.empty()) pol.denyWrite.push_back(p.programDir);
  if (tainted) {
    // The private home persists across tasks: what a later, clean run would read from it stays as it was.
    for (auto n : homeConfigNames()) {
      if (n.back() == '/') n.pop_back();
      pol.denyWrite.push_back(join(p.privateHome, n));
    }
  }
  // The agent's own trees, scanned by name; the system's and pine's are not the agent's to fill.
  std::vector<std::string> guardedRoots = {p.workspace};  // where a tainted run may not plant
  if (!p.openedFolder.empty()) guardedRoots.push_back(p.openedFolder);
  guardedRoots.insert(guardedRoots.end(), grantedWrite.begin(), grantedWrite.end());
  std::vector<std::string> readRoots = {p.privateHome, p.tmpdir};
  readRoots.insert(readRoots.end(), p.skills.begin(), p.skills.end());
  readRoots.insert(readRoots.end(), grantedRead.begin(), grantedRead.end());
  TreeScan scan(pol);
  std::vector<std::string> scanned;
  auto firstTime = [&](const std::string& root) {
    for (auto& s : scanned)
      if (pathWithin(root, s)) return false;
    scanned.push_back(root);
    return isDir(root);
  };
  for (auto& root : guardedRoots) {
    // Instruction names at a root's top are guarded whether they exist yet or not.
    if (tainted && isDir(root))
      for (auto& n : instructionNames()) pol.denyWrite.push_back(join(root, n));
    if (firstTime(root)) scan.writable(root, tainted);
  }
  for (auto& root : readRoots)
    if (firstTime(root)) scan.readable(root);
  sortUnique(pol.readable);
  sortUnique(pol.writable);
  sortUnique(pol.denyRead);
  sortUnique(pol.denyWrite);
  return pol;
}

std::vector<std::string> brokerSystemReadable() {
  std::vector<std::string> out;
  for (const char* r : brokerSystemRoots())
    if (auto real = realPath(r)) out.push_back(*real);
  sortUnique(out);
  return out;
}

std::vector<std::string> brokerEnvironment(const std::string& pineHome, const std::string& lang) {
  return {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=" + lang, "TMPDIR=" + join(pineHome, "data/tmp")};
}

// A folder source's folder, again (config/folder_check.cpp checked it first): canonical, and
// neither in pine's home (.env, the database) nor above it, nor holding the broker's program; in
// the home only inside an agent's workspace (config checked it is the source's own agent's).
static std::string watchedFolder(const std::string& raw, const std::string& home, const std::string& program,
                                 const std::vector<std::string>& workspaces) {
  std::string c = canonOwn(raw, "a watched folder");
  if (c == "/") throw PolicyError("a folder source names /: the broker may not read the whole file system");
  bool inWorkspace = false;
  for (auto& w : workspaces) inWorkspace |= pathWithin(c, w) && c != w;
  if (!inWorkspace && (pathWithin(c, home) || pathWithin(home, c)))
    throw PolicyError("a folder source names " + c + ", which is in or contains pine's home " + home +
                      ": watch a folder outside it, or inside the workspace of the source's agent");
  if (pathWithin(program, c))
    throw PolicyError("a folder source names " + c + ", which holds the broker's program " + program +
                      ": watch a folder without pine's programs");
  return c;
}

// A workspace that holds watched folders stays closed but for them: every entry of it that is
// neither a watched folder nor on the way to one is denied by name (what is created there later
// has no rule at all, so it is closed too).
static void denyAllBut(const std::string& dir, const std::vector<std::string>& keep, std::vector<std::string>& deny) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
  if (!d) throw PolicyError("cannot list " + dir + " to keep it closed around a watched folder: " + strerror(errno));
  while (dirent* e = readdir(d.get())) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string path = join(dir, name);
    if (std::find(keep.begin(), keep.end(), path) != keep.end()) continue;
    bool onTheWay = false;
    for (auto& k : keep) onTheWay |= pathWithin(k, path);
    struct stat st;
    if (onTheWay && lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) denyAllBut(path, keep, deny);
    else deny.push_back(path);
    if (deny.size() > 10000)
      throw PolicyError("more than 10000 entries beside the watched folders in " + dir +
                        ": watch a folder of its own, outside the workspace");
  }
}

Policy brokerPolicy(const BrokerPaths& raw) {
  std::string home = canonOwn(raw.pineHome, "pine's home");
  if (home.empty()) throw PolicyError("pine's home is not set: no policy can keep it closed");
  std::string program = canonOwn(raw.program, "the broker's program");
  if (program.empty()) throw PolicyError("the broker's program is not set");
  if (pathWithin(program, home))
    throw PolicyError("the broker's program " + program + " lies inside pine's home " + home +
                      "; install pine's programs elsewhere, the broker never runs a file of its home");
  Policy pol;
  pol.network = Network::All;
  pol.tcpPortsOnly = true;
  for (auto* ports : {&raw.listenPorts, &raw.connectPorts})
    for (int port : *ports)
      if (port < 1 || port > 65535) throw PolicyError("TCP port " + std::to_string(port) + " is not 1 to 65535");
  pol.tcpBind = raw.listenPorts;
  pol.tcpConnect = raw.connectPorts;
  std::sort(pol.tcpBind.begin(), pol.tcpBind.end());
  pol.tcpBind.erase(std::unique(pol.tcpBind.begin(), pol.tcpBind.end()), pol.tcpBind.end());
  std::sort(pol.tcpConnect.begin(), pol.tcpConnect.end());
  pol.tcpConnect.erase(std::unique(pol.tcpConnect.begin(), pol.tcpConnect.end()), pol.tcpConnect.end());

  pol.execOnly = true;
  pol.executable.push_back(program);
  if (!raw.loader.empty()) pol.executable.push_back(canonOwn(raw.loader, "the broker's program loader"));

  pol.readable = raw.systemReadable.empty() ? brokerSystemReadable() : raw.systemReadable;
  for (auto& r : pol.readable) r = canonOwn(r, "a system path");
  pol.readable.push_back(home);
  for (auto& r : raw.otherReadable) {
    std::string c = canonOwn(r, "a file the configuration names");
    if (pathWithin(home, c))
      throw PolicyError("the configuration names " + c + ", which contains pine's home: name the file itself");
    pol.readable.push_back(c);
  }
  std::vector<std::string> workspaces, folders;
  for (auto& w : raw.workspaces) workspaces.push_back(canonOwn(w, "a workspace"));
  for (auto& f : raw.watchedFolders) folders.push_back(watchedFolder(f, home, program, workspaces));
  pol.readable.insert(pol.readable.end(), folders.begin(), folders.end());
  pol.writable = {join(home, "data")};
  for (const char* dev : {"/dev/null"})
    if (auto real = realPath(dev)) pol.writable.push_back(*real);

  pol.denyRead = raw.systemDenyRead.empty() ? defaultSystemDenyRead() : raw.systemDenyRead;
  for (const char* closed : {".env", "pined.sock", "sandbox", "checkpoints"}) pol.denyRead.push_back(join(home, closed));
  for (auto& c : workspaces) {
    if (!pathWithin(c, home) || c == home || pathWithin(join(home, "data"), c)) continue;
    std::vector<std::string> inside;
    for (auto& f : folders)
      if (pathWithin(f, c)) inside.push_back(f);
    if (inside.empty()) pol.denyRead.push_back(c);
    else denyAllBut(c, inside, pol.denyRead);
  }
  // No listening socket: pined listens on pine.sock and hands the broker each checked connection.
  pol.unixSockets = true;
  sortUnique(pol.readable);
  sortUnique(pol.writable);
  sortUnique(pol.denyRead);
  sortUnique(pol.executable);
  return pol;
}

std::vector<std::string> workerEnvironment(const AgentPaths& p, const std::string& lang, const std::string& term) {
  return {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=" + lang, "HOME=" + p.privateHome, "TMPDIR=" + p.tmpdir,
          "TERM=" + term};
}

}  // namespace pine::sandbox

namespace pine::sandbox {

Policy egressPolicy(const EgressPaths& paths) {
  Policy pol;
  pol.network = Network::All;
  std::vector<std::string> system = paths.systemReadable;
  if (system.empty())
    for (const char* r : {"/usr", "/lib", "/lib32", "/lib64", "/libx32"})
      if (auto real = realPath(r)) system.push_back(*real);
  for (auto& r : system) pol.readable.push_back(canonOwn(r, "a system path"));
  // What glibc's resolver and NSS, the dynamic loader and OpenSSL open (strace of a request);
  // a missing one is left out. The CA folders of other distributions are listed for them.
  for (const char* f : {"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/host.conf",
                        "/etc/ld.so.cache", "/etc/ssl", "/etc/ca-certificates", "/etc/pki/tls", "/etc/pki/ca-trust",
                        "/usr/share/ca-certificates", "/dev/null", "/dev/urandom"})
    if (auto real = realPath(f)) pol.readable.push_back(*real);
  if (paths.program.empty()) throw PolicyError("the egress policy needs the path of pine-egress");
  const std::string program = canonOwn(paths.program, "pine-egress");
  // A process that parses what the internet sends runs nothing but itself (and execveat is refused).
  pol.execOnly = true;
  pol.executable.push_back(program);
  if (std::string loader = elfInterpreter(program); !loader.empty()) pol.executable.push_back(loader);

  // Landlock allows only what is listed: a denied path matters where a readable tree holds it.
  pol.denyRead = defaultSystemDenyRead();  // /etc/ssl/private among them
  std::vector<std::string> closed;
  if (!paths.pineHome.empty()) {
    std::string home = canonOwn(paths.pineHome, "pine's home");
    for (auto& r : pol.readable)
      if (pathWithin(r, home) && r != home)
        throw PolicyError(r + " lies inside pine's home (" + home +
                          "): the egress process would read it; keep pine's programs outside the home");
    if (pathWithin(program, home))
      throw PolicyError("pine-egress (" + program + ") lies inside pine's home (" + home +
                        "); keep pine's programs outside the home");
    closed = {home, join(home, ".env")};
  }
  if (!paths.userHome.empty()) closed.push_back(canonOwn(paths.userHome, "the owner's home"));
  for (auto& c : closed)
    for (auto& r : pol.readable)
      if (pathWithin(c, r)) pol.denyRead.push_back(c);
  sortUnique(pol.readable);
  sortUnique(pol.executable);
  sortUnique(pol.denyRead);
  return pol;
}

}  // namespace pine::sandbox
