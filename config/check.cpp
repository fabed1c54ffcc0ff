#include "config/check.h"

#include <grp.h>
#include <sys/stat.h>

#include <filesystem>
#include <ostream>

#include "common/web_address.h"
#include "config/command_line.h"
#include "config/load.h"
#include "config/program_digest.h"

namespace pine::config {

std::string SecurityNote::format() const {
  std::string out;
  if (!file.empty()) out += file + ": ";
  if (!keyPath.empty()) out += keyPath + ": ";
  out += message;
  if (!fix.empty()) out += "\n    fix: " + fix;
  return out;
}

bool isLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

namespace {

std::string octal(unsigned mode) {
  char buf[8];
  snprintf(buf, sizeof buf, "%03o", mode & 0777);
  return buf;
}

std::string relTo(const Home& home, const std::string& full) {
  if (full.rfind(home.root + "/", 0) == 0) return full.substr(home.root.size() + 1);
  return full;
}

// " (SHA-256 abc...)" of a program file, or "" when it cannot be read (load reports a missing one).
std::string digestNote(const std::string& home, const std::string& file) {
  std::string sha = programSha256(home, file);
  return sha.empty() ? "" : " (SHA-256 " + sha + ")";
}

std::string joinNames(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out;
}

// An http or ftp source that may reach the local network says so; one confirmed as public whose address
// is plainly local would only ever be refused by egress.
void httpSourceNotes(const std::string& pineFile, const std::string& at, const Source& s,
                     std::vector<SecurityNote>& notes) {
  std::string local = localNetworkReason(s.url);
  if (s.localNetwork)
    notes.push_back({pineFile, at + ".network",
                     s.type + " source '" + s.name + "' may reach your local network (this machine, private addresses): " +
                         s.url,
                     "remove network: local unless that address is yours"});
  else if (!local.empty())
    notes.push_back({pineFile, at + ".url",
                     s.type + " source '" + s.name + "' is public, but " + local + ": every look will be refused",
                     "write network: local if the address is on your own network"});
}

}  // namespace

HomeFacts gatherHomeFacts(const Home& home, const std::string& sandboxBackend, const std::string& sandboxDetail) {
  HomeFacts f;
  f.sandboxBackend = sandboxBackend;
  f.sandboxDetail = sandboxDetail;
  struct stat st;
  if (stat(home.root.c_str(), &st) == 0) {
    f.homeMode = st.st_mode & 07777;
    f.homeGid = st.st_gid;
  }
  // pined --admin-group gives pined.sock to that group, mode 660: the one group meant to look in.
  if (lstat((home.root + "/pined.sock").c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 060) == 060)
    f.adminGid = st.st_gid;
  if (stat((home.root + "/data/http-token").c_str(), &st) == 0) {
    f.tokenMode = st.st_mode & 07777;
    f.tokenGid = st.st_gid;
  }
  std::vector<std::string> files = {".env"};
  if (!home.pine.file.empty()) files.push_back(relTo(home, home.pine.file));
  if (!home.models.file.empty()) files.push_back(relTo(home, home.models.file));
  for (auto& rel : files)
    // stat, not lstat: a linked file (a dotfiles manager) is as readable as its target.
    if (stat((home.root + "/" + rel).c_str(), &st) == 0) f.fileModes[rel] = st.st_mode & 07777;

  namespace fs = std::filesystem;
  for (auto& [id, a] : home.agents) {
    fs::path ws = fs::path(home.root) / "agents" / id / "workspace";
    std::error_code ec;
    if (!fs::is_directory(ws, ec)) continue;
    std::vector<std::string> found;
    // Links are not followed: what matters is what the workspace itself holds.
    fs::recursive_directory_iterator it(ws, fs::directory_options::skip_permission_denied, ec), end;
    std::size_t visited = 0;
    for (; !ec && it != end && found.size() < 5 && ++visited < 100000; it.increment(ec)) {
      // A link counts as content (it may lead to private files); a real folder is walked into.
      if (!it->is_symlink(ec) && it->is_directory(ec)) continue;
      std::string rel = it->path().lexically_relative(ws).string();  // relative() would resolve links
      if (rel == "AGENTS.md" || rel == "SOUL.md" || rel == "MEMORY.md") continue;
      found.push_back(rel);
    }
    if (!found.empty()) f.workspaceFiles[id] = found;
  }
  return f;
}

std::vector<SecurityNote> securityNotes(const Home& home, const HomeFacts& facts) {
  std::vector<SecurityNote> notes;
  const std::string pineFile = home.pine.file.empty() ? home.root + "/pine.yaml" : home.pine.file;

  // Modes: other users on the machine must not read secrets or change what runs.
  // The admin group (pined --admin-group) may look into the home and read the token; nobody else.
  auto adminsOnly = [&](unsigned gid) { return facts.adminGid && gid == *facts.adminGid; };
  auto groupName = [](unsigned gid) {
    struct group* gr = getgrgid(gid);
    return gr ? std::string(gr->gr_name) : "gid " + std::to_string(gid);
  };
  // Search (x) alone lets no one list or change the home: pined, as root, gives it to others itself
  // so that agents' own uids reach their folders (701), and each file inside has a mode of its own.
  if (facts.homeMode && (*facts.homeMode & 006))
    notes.push_back({home.root, "", "pine's home is mode " + octal(*facts.homeMode) + ": other users can look into it",
                     facts.adminGid ? "chmod 750 " + home.root : "chmod 700 " + home.root});
  else if (facts.homeMode && (*facts.homeMode & 060) && !(facts.homeGid && adminsOnly(*facts.homeGid)))
    notes.push_back({home.root, "",
                     "pine's home is mode " + octal(*facts.homeMode) + ": the members of group " +
                         (facts.homeGid ? groupName(*facts.homeGid) : "?") +
                         " can look into it, and it is not pine's admin group",
                     "chmod 700 " + home.root + " (or start pined with --admin-group, if they administer pine)"});
  const std::string token = home.root + "/data/http-token";
  if (facts.tokenMode && (*facts.tokenMode & 007))
    notes.push_back({token, "", "mode " + octal(*facts.tokenMode) + ": other users can read the control API's token",
                     "chmod 600 " + token});
  else if (facts.tokenMode && (*facts.tokenMode & 070) && !(facts.tokenGid && adminsOnly(*facts.tokenGid)))
    notes.push_back({token, "",
                     "mode " + octal(*facts.tokenMode) + ": the members of group " +
                         (facts.tokenGid ? groupName(*facts.tokenGid) : "?") +
                         " can read the control API's token, and it is not pine's admin group",
                     "chmod 600 " + token});
  for (auto& [rel, mode] : facts.fileModes)
    if (mode & 077)
      notes.push_back({home.root + "/" + rel, "",
                       "mode " + octal(mode) + ": other users can " + ((mode & 022) ? "change" : "read") + " it",
                       "chmod 600 " + home.root + "/" + rel});

  // Webhooks without a secret.
  for (std::size_t i = 0; i < home.pine.webhooks.size(); ++i) {
    const Webhook& w = home.pine.webhooks[i];
    if (w.open)
      notes.push_back({pineFile, "webhooks[" + std::to_string(i) + "].open",
                       "webhook '" + w.name + "' has no secret: anyone who reaches the port can post to " + w.topic,
                       "set secret: NAME (store it with `pinectl secret set NAME`) and remove open"});
  }
  for (std::size_t i = 0; i < home.pine.sources.size(); ++i) {
    const Source& s = home.pine.sources[i];
    const std::string at = "sources[" + std::to_string(i) + "]";
    if (s.type == "webhook" && s.hook.open)
      notes.push_back({pineFile, at + ".open",
                       "webhook source '" + s.name + "' has no secret: anyone who reaches the port can post to it",
                       "set secret: NAME (store it with `pinectl secret set NAME`) and remove open"});
    // A paired Telegram account is the owner by construction, so it is not listed.
    if (s.trust == Trust::Owner && s.type != "telegram")
      notes.push_back({pineFile, at + ".trust",
                       "what source '" + s.name + "' reports counts as yours: it starts runs with full tools, untainted",
                       "remove trust: owner unless nobody else can write to this source"});
    if (s.type == "telegram" && !s.baseUrl.empty() && s.baseUrl != kTelegramApi)
      notes.push_back({pineFile, at + ".baseUrl",
                       "telegram source '" + s.name + "' talks to " + s.baseUrl +
                           ", not Telegram's own server: that server sees the bot token and every message",
                       "remove baseUrl unless you run that Bot API server yourself"});
    if (s.type == "http" || s.type == "ftp") httpSourceNotes(pineFile, at, s, notes);
    if (s.type == "ftp" && s.plainFtp)
      notes.push_back({pineFile, at + ".tls",
                       "ftp source '" + s.name + "' logs in without TLS: its password crosses the network in clear",
                       "use ftps:// or a server with AUTH TLS, and remove tls: none"});
    if (s.type == "command") {
      auto agent = home.agents.find(commandAgent(s));
      if (agent != home.agents.end() && !agent->second.sandbox.enabled)
        // pined runs commands only in a sandbox: said as what happens, not as what would.
        notes.push_back({pineFile, at + ".agent",
                         "command source '" + s.name + "' does not run: agent '" + commandAgent(s) +
                             "' has sandbox: false, and a source's command runs only in its agent's sandbox",
                         "give agent '" + commandAgent(s) + "' its sandbox back, or name another agent in the source"});
      else
        notes.push_back({pineFile, at + ".command",
                         "command source '" + s.name + "' runs `" + shownCommandLine(s.command) + "` in the sandbox of agent '" +
                             commandAgent(s) + "'" +
                             (s.commandMode == "lines" ? ", all the time (each line it prints an event)"
                                                       : ", every " + std::to_string(s.intervalSec) + " s"),
                         "remove the source if you do not want that command run"});
    }
    // A folder in the workspace of the source's own agent is that agent's already; any other is read by pine.
    if (s.type == "folder" &&
        (s.agent.empty() || s.path.rfind(home.root + "/agents/" + s.agent + "/workspace/", 0) != 0))
      notes.push_back({pineFile, at + ".path",
                       "folder source '" + s.name + "' lets pine read " + s.path +
                           ", outside every agent's workspace: its files' names and hashes become events",
                       "remove the source if you did not mean pine to watch that folder"});
    if (!s.use.empty())
      notes.push_back({pineFile, at + ".use",
                       "source '" + s.name + "' runs the program " + s.use + digestNote(home.root, s.use) +
                           " inside pine with pine's rights; no sandbox applies",
                       "read that file; remove the source if you do not know what it does"});
  }
  for (std::size_t i = 0; i < home.pine.routes.size(); ++i) {
    const Route& r = home.pine.routes[i];
    if (!r.trust || *r.trust != Trust::Owner) continue;
    bool telegram = false;
    for (auto& s : home.pine.sources)
      if (s.name == r.source && s.type == "telegram") telegram = true;
    if (telegram) continue;
    notes.push_back({pineFile, "routes[" + std::to_string(i) + "].trust",
                     "route to '" + r.agent + "' (" + (r.source.empty() ? "topic " + r.topic : "source " + r.source) +
                         ") marks its events as yours: they start runs with full tools",
                     "remove trust: owner unless nobody else can write to that source"});
  }
  for (std::size_t i = 0; i < home.pine.sourceTypes.size(); ++i) {
    const SourceType& t = home.pine.sourceTypes[i];
    notes.push_back({pineFile, "sourceTypes[" + std::to_string(i) + "].file",
                     "source type '" + t.name + "' is the program " + t.file + digestNote(home.root, t.file) +
                         ", run inside pine with pine's rights; no sandbox applies",
                     "read that file; remove the entry if you do not know what it does"});
  }

  // Agents: what lifts the sandbox or the approvals.
  std::vector<std::string> bypassAgents;
  for (auto& [id, a] : home.agents) {
    if (!a.sandbox.enabled)
      notes.push_back({a.file, "sandbox",
                       "agent '" + id + "' runs " + (a.hasTool("bash") ? "its shell" : "commands") +
                           " unconfined (sandbox: false): a misled command reaches your whole account",
                       "remove sandbox: false; grant folders with sandbox.read / sandbox.write instead"});
    if (a.trustWorkspace)
      notes.push_back({a.file, "trustWorkspace",
                       "agent '" + id + "' loads executable extensions from its workspace, which it can write itself",
                       "remove trustWorkspace: true"});
    if (home.effectiveMode(a) == Mode::Bypass) {
      bypassAgents.push_back(id);
      if (a.mode)
        notes.push_back({a.file, "mode",
                         "agent '" + id + "' is in bypass: nothing asks, and its shell reaches your account and the network",
                         "set mode: auto, and switch to bypass with `pinectl mode " + id + " bypass` only while you watch"});
      else
        notes.push_back({pineFile, "defaults.mode",
                         "agent '" + id + "' is in bypass through defaults.mode: nothing asks, and its shell reaches "
                         "your account and the network",
                         "set defaults.mode: auto"});
    }
    // A persistent browser profile keeps its sign-ins: any page the agent reads drives them.
    for (auto& [name, s] : a.mcpServers)
      if (s.bundled == "browser" && !s.profile.empty())
        notes.push_back({a.file, "mcpServers." + name + ".profile",
                         "agent '" + id + "' uses the browser profile '" + s.profile + "': a site signed in there sees the "
                         "agent as you, and a page it reads can make it act as you there",
                         "sign that profile in to nothing you would not let a stranger use, or remove profile for a fresh one"});
    // The dangerous combination: outside text plus something private to send out.
    if (a.hasWebTools()) {
      std::vector<std::string> why;
      if (auto it = facts.workspaceFiles.find(id); it != facts.workspaceFiles.end())
        why.push_back("its workspace holds " + joinNames(it->second));
      if (!a.sandbox.read.empty()) why.push_back("sandbox.read grants " + joinNames(a.sandbox.read));
      if (!a.sandbox.write.empty()) why.push_back("sandbox.write grants " + joinNames(a.sandbox.write));
      if (!why.empty()) {
        std::string server;
        for (auto& [name, s] : a.mcpServers)
          if (s.bundled == "web" || s.bundled == "browser") {
            server = name;
            break;
          }
        notes.push_back({a.file, "mcpServers." + server,
                         "agent '" + id + "' has web tools and private data (" + joinNames(why) +
                             "): a page it reads can ask it to send that data out",
                         "give web and browser to an agent with an empty workspace (like scout) and delegate research to it"});
      }
    }
  }
  if (home.pine.security.bypassWhenTainted)
    notes.push_back(
        {pineFile, "security.bypassWhenTainted",
         bypassAgents.empty()
             ? std::string("bypass is not paused after reading outside content: an agent switched to bypass keeps "
                           "it while a web page may be steering it")
             : "bypass is not paused after reading outside content: " + joinNames(bypassAgents) +
                   " can act with your rights, unasked, on what a web page or event tells it",
         "remove bypassWhenTainted: true"});

  if (!isLoopbackHost(home.pine.http.host))
    notes.push_back({pineFile, "http.host",
                     "the control API listens on " + home.pine.http.host + ", beyond this machine",
                     "set http.host: 127.0.0.1 and reach it through SSH or a tunnel"});

  // The sandbox backend is the machine's, not the configuration's.
  if (facts.sandboxBackend != "full") {
    std::vector<std::string> sandboxed;
    for (auto& [id, a] : home.agents)
      if (a.sandbox.enabled) sandboxed.push_back(id);
    const bool degraded = facts.sandboxBackend == "degraded";
    std::string detail = facts.sandboxDetail.empty() ? "" : " (" + facts.sandboxDetail + ")";
    notes.push_back(
        {"", "",
         degraded ? "the sandbox backend is degraded" + detail + ": agents run with weaker confinement than configured"
                  : "no sandbox backend" + detail + ": bash is withheld from " +
                        (sandboxed.empty() ? std::string("every sandboxed agent") : joinNames(sandboxed)) +
                        " and command sources do not run",
         degraded ? "run pined where Landlock, seccomp and namespaces are available (Linux 5.13+), or on macOS"
                  : "run pined where a sandbox backend is available: Linux with Landlock (5.13+), or macOS"});
  }
  return notes;
}

int runCheck(const std::string& homeDir, const std::string& sandboxBackend, const std::string& sandboxDetail,
             std::ostream& out) {
  LoadResult r = loadHome(homeDir);
  if (!r.ok()) {
    out << r.formatErrors();
    out << "Configuration is invalid (" << r.errors.size() << (r.errors.size() == 1 ? " error" : " errors")
        << "); nothing was checked further\n";
    return 2;
  }
  auto notes = securityNotes(*r.home, gatherHomeFacts(*r.home, sandboxBackend, sandboxDetail));
  if (notes.empty()) {
    out << "No security notes\n";
    return 0;
  }
  for (auto& n : notes) out << n.format() << "\n";
  out << notes.size() << (notes.size() == 1 ? " security note" : " security notes") << "\n";
  return 1;
}

}  // namespace pine::config
