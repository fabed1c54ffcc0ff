// `pinectl check`: each security note of the checklist is triggered from the
// example home, names the file and key, and is gone once fixed.
#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include <sstream>

#include "config/check.h"
#include "config/command_line.h"
#include "helpers.h"

using namespace pine::config;
using pine::config::test::dump;
using pine::config::test::TempHome;

namespace {

std::vector<SecurityNote> notesOf(const TempHome& h, const std::string& backend = "full", const std::string& detail = "") {
  auto r = h.load();
  REQUIRE_MESSAGE(r.ok(), dump(r.errors));
  return securityNotes(*r.home, gatherHomeFacts(*r.home, backend, detail));
}

const SecurityNote* findNote(const std::vector<SecurityNote>& notes, const std::string& file, const std::string& key,
                             const std::string& text = {}) {
  for (auto& n : notes)
    if (n.file == file && n.keyPath == key && n.message.find(text) != std::string::npos) return &n;
  return nullptr;
}

std::string all(const std::vector<SecurityNote>& notes) {
  std::string out;
  for (auto& n : notes) out += n.format() + "\n";
  return out;
}

}  // namespace

TEST_CASE("note: modes of .env, pine.yaml, models.yaml (600) and the home (700)") {
  TempHome h;
  h.write(".env", "X=1\n", 0644);
  chmod(h.path("pine.yaml").c_str(), 0640);
  chmod(h.path("models.yaml").c_str(), 0664);
  chmod(h.root.c_str(), 0755);
  auto notes = notesOf(h);
  CHECK(notes.size() == 4);
  auto* env = findNote(notes, h.path(".env"), "", "mode 644");
  REQUIRE_MESSAGE(env, all(notes));
  CHECK(env->fix == "chmod 600 " + h.path(".env"));
  CHECK(findNote(notes, h.path("pine.yaml"), "", "mode 640: other users can read it"));
  CHECK(findNote(notes, h.path("models.yaml"), "", "mode 664: other users can change it"));
  auto* home = findNote(notes, h.root, "", "mode 755");
  REQUIRE(home);
  CHECK(home->fix == "chmod 700 " + h.root);

  chmod(h.path(".env").c_str(), 0600);
  chmod(h.path("pine.yaml").c_str(), 0600);
  chmod(h.path("models.yaml").c_str(), 0600);
  chmod(h.root.c_str(), 0700);
  CHECK(notesOf(h).empty());

  // The .json spelling is checked the same way.
  h.remove("pine.yaml");
  h.write("pine.json", "{\"defaults\": {\"model\": \"demo\"}}", 0644);
  CHECK(findNote(notesOf(h), h.path("pine.json"), "", "mode 644"));
}

TEST_CASE("note: the home and the token may be open to pine's admin group, to no other group and to no one else") {
  TempHome h;
  mkdir(h.path("data").c_str(), 0750);
  h.write("data/http-token", "t\n", 0640);
  chmod(h.root.c_str(), 0750);
  // No admin group (pined.sock is not given to one): a group that can look in is named.
  auto notes = notesOf(h);
  REQUIRE_MESSAGE(findNote(notes, h.root, "", "can look into it, and it is not pine's admin group"), all(notes));
  REQUIRE(findNote(notes, h.path("data/http-token"), "", "can read the control API's token"));
  CHECK(findNote(notes, h.path("data/http-token"), "")->fix == "chmod 600 " + h.path("data/http-token"));

  // pined --admin-group gave pined.sock to the home's group: the home and the token are as meant.
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  std::string sock = h.path("pined.sock");
  REQUIRE(sock.size() < sizeof addr.sun_path);
  memcpy(addr.sun_path, sock.c_str(), sock.size() + 1);
  REQUIRE(bind(fd, (struct sockaddr*)&addr, sizeof addr) == 0);
  close(fd);
  struct stat home;
  REQUIRE(stat(h.root.c_str(), &home) == 0);
  REQUIRE(chown(sock.c_str(), (uid_t)-1, home.st_gid) == 0);
  REQUIRE(chmod(sock.c_str(), 0660) == 0);
  notes = notesOf(h);
  CHECK_MESSAGE(notes.empty(), all(notes));

  // Others are never meant: the home, the token, .env.
  chmod(h.root.c_str(), 0755);
  chmod(h.path("data/http-token").c_str(), 0644);
  h.write(".env", "X=1\n", 0640);
  notes = notesOf(h);
  auto* homeNote = findNote(notes, h.root, "", "other users can look into it");
  REQUIRE_MESSAGE(homeNote, all(notes));
  CHECK(homeNote->fix == "chmod 750 " + h.root);
  CHECK(findNote(notes, h.path("data/http-token"), "", "other users can read the control API's token"));
  // .env is never the admin group's: secrets are set through pined.sock, not read.
  CHECK(findNote(notes, h.path(".env"), "", "mode 640"));

  // Search alone (what pined as root sets so that agents' uids reach their folders) is no note;
  // reading or writing it is.
  chmod(h.path("data/http-token").c_str(), 0640);
  chmod(h.path(".env").c_str(), 0600);
  for (mode_t quiet : {0701, 0711})
    if (chmod(h.root.c_str(), quiet) == 0) CHECK_MESSAGE(!findNote(notesOf(h), h.root, "", "can look into it"), quiet);
  for (mode_t open : {0704, 0702, 0706})
    if (chmod(h.root.c_str(), open) == 0) CHECK_MESSAGE(findNote(notesOf(h), h.root, "", "can look into it"), open);

  // A socket of another group does not make the home's group the admin group.
  chmod(h.root.c_str(), 0750);
  chmod(h.path("data/http-token").c_str(), 0640);
  chmod(h.path(".env").c_str(), 0600);
  if (geteuid() == 0) {  // giving a file to a group of which one is not a member takes root
    REQUIRE(chown(sock.c_str(), (uid_t)-1, home.st_gid + 1) == 0);
    notes = notesOf(h);
    CHECK(findNote(notes, h.root, "", "it is not pine's admin group"));
  }
}

TEST_CASE("note: webhooks and webhook sources without a secret") {
  TempHome h;
  h.append("pine.yaml", "webhooks:\n  - {name: ci, topic: ci/deploy, open: true}\n");
  h.replace("pine.yaml", "sources:\n", "sources:\n  - {name: form, type: webhook, topic: web/form, open: true}\n");
  auto notes = notesOf(h);
  auto* hook = findNote(notes, h.path("pine.yaml"), "webhooks[0].open", "webhook 'ci' has no secret");
  REQUIRE_MESSAGE(hook, all(notes));
  CHECK(hook->fix.find("secret: NAME") != std::string::npos);
  CHECK(findNote(notes, h.path("pine.yaml"), "sources[0].open", "webhook source 'form' has no secret"));

  h.write(".env", "CI_HOOK=ci-hook-value-0123456789\nFORM_HOOK=form-hook-value-0123456789\n");
  h.replace("pine.yaml", "open: true}\n", "secret: CI_HOOK}\n");
  h.replace("pine.yaml", "open: true}\n", "secret: FORM_HOOK}\n");
  CHECK(notesOf(h).empty());
}

TEST_CASE("note: routes and sources marked owner-trusted, a paired Telegram account excepted") {
  TempHome h;
  h.replace("pine.yaml", "    prompt: \"A device", "    trust: owner\n    prompt: \"A device");
  h.replace("pine.yaml", "    agent: house\n    topics:", "    agent: house\n    trust: owner\n    topics:");
  auto notes = notesOf(h);
  auto* route = findNote(notes, h.path("pine.yaml"), "routes[0].trust", "marks its events as yours");
  REQUIRE_MESSAGE(route, all(notes));
  CHECK(route->message.find("source house-devices") != std::string::npos);
  CHECK(findNote(notes, h.path("pine.yaml"), "sources[0].trust", "counts as yours"));
  h.replace("pine.yaml", "    trust: owner\n", "");
  h.replace("pine.yaml", "    trust: owner\n", "");
  CHECK(notesOf(h).empty());

  // Telegram: owner trust is how it works for the paired account; not a note.
  h.write(".env", "TELEGRAM_TOKEN=x\n");
  h.replace("pine.yaml", "sources:\n", "sources:\n  - {name: telegram, type: telegram, tokenSecret: TELEGRAM_TOKEN}\n");
  h.replace("pine.yaml", "routes:\n", "routes:\n  - {source: telegram, agent: main, trust: owner}\n");
  CHECK_MESSAGE(notesOf(h).empty(), all(notesOf(h)));
  // Telegram's own server by name is no note; any other Bot API server sees the token and is named.
  h.replace("pine.yaml", "tokenSecret: TELEGRAM_TOKEN}", "tokenSecret: TELEGRAM_TOKEN, baseUrl: \"https://api.telegram.org\"}");
  CHECK_MESSAGE(notesOf(h).empty(), all(notesOf(h)));
  h.replace("pine.yaml", "https://api.telegram.org", "http://127.0.0.1:8081");
  auto baseNotes = notesOf(h);
  auto* base = findNote(baseNotes, h.path("pine.yaml"), "sources[0].baseUrl", "not Telegram's own server");
  REQUIRE_MESSAGE(base, all(baseNotes));
  CHECK(base->message.find("http://127.0.0.1:8081") != std::string::npos);
}

TEST_CASE("note: sandbox false, trustWorkspace true, mode bypass (in agent.yaml or through defaults.mode)") {
  TempHome h;
  h.append("agents/house/agent.yaml", "trustWorkspace: true\n");
  h.replace("agents/house/agent.yaml", "sandbox:\n  network: none\n", "sandbox: false\n");
  h.replace("agents/main/agent.yaml", "mode: auto", "mode: bypass");
  auto notes = notesOf(h);
  CHECK(notes.size() == 3);
  auto* sb = findNote(notes, h.path("agents/house/agent.yaml"), "sandbox", "unconfined");
  REQUIRE_MESSAGE(sb, all(notes));
  CHECK(findNote(notes, h.path("agents/house/agent.yaml"), "trustWorkspace"));
  auto* bypass = findNote(notes, h.path("agents/main/agent.yaml"), "mode", "agent 'main' is in bypass");
  REQUIRE(bypass);
  CHECK(bypass->fix.find("mode: auto") != std::string::npos);

  h.replace("agents/house/agent.yaml", "trustWorkspace: true\n", "");
  h.replace("agents/house/agent.yaml", "sandbox: false\n", "sandbox: {enabled: true}\n");
  h.replace("agents/main/agent.yaml", "mode: bypass", "mode: auto");
  CHECK(notesOf(h).empty());

  // defaults.mode: bypass reaches the agents that set no mode of their own (scout, house; main says auto).
  h.replace("pine.yaml", "mode: auto ", "mode: bypass ");
  notes = notesOf(h);
  CHECK(notes.size() == 2);
  CHECK(findNote(notes, h.path("pine.yaml"), "defaults.mode", "agent 'scout'"));
  CHECK(findNote(notes, h.path("pine.yaml"), "defaults.mode", "agent 'house'"));
}

TEST_CASE("note: a command source of an agent with sandbox: false says it does not run") {
  // Before, check said "runs `id` in the sandbox of agent 'house', every 60 s" while pined refused to.
  TempHome h;
  h.replace("pine.yaml", "sources:\n", "sources:\n  - {name: who, type: command, agent: house, command: [id], intervalSec: 60}\n");
  auto notes = notesOf(h);
  CHECK_MESSAGE(findNote(notes, h.path("pine.yaml"), "sources[0].command", "runs `id` in the sandbox of agent 'house'"),
                all(notes));  // the twin: sandboxed, it runs
  h.replace("agents/house/agent.yaml", "sandbox:\n  network: none\n", "sandbox: false\n");
  notes = notesOf(h);
  auto* off = findNote(notes, h.path("pine.yaml"), "sources[0].agent", "command source 'who' does not run");
  REQUIRE_MESSAGE(off, all(notes));
  CHECK(off->message.find("sandbox: false") != std::string::npos);
  CHECK_FALSE(findNote(notes, h.path("pine.yaml"), "sources[0].command", "runs `id`"));
}

TEST_CASE("note: security.bypassWhenTainted, naming the agents in bypass") {
  TempHome h;
  h.replace("pine.yaml", "bypassWhenTainted: false", "bypassWhenTainted: true");
  auto notes = notesOf(h);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].keyPath == "security.bypassWhenTainted");
  CHECK(notes[0].message.find("an agent switched to bypass") != std::string::npos);

  h.replace("agents/main/agent.yaml", "mode: auto", "mode: bypass");
  notes = notesOf(h);
  auto* n = findNote(notes, h.path("pine.yaml"), "security.bypassWhenTainted", "main can act with your rights");
  CHECK_MESSAGE(n, all(notes));

  h.replace("pine.yaml", "bypassWhenTainted: true", "bypassWhenTainted: false");
  h.replace("agents/main/agent.yaml", "mode: bypass", "mode: auto");
  CHECK(notesOf(h).empty());
}

TEST_CASE("note: an http host that is not loopback") {
  TempHome h;
  h.replace("pine.yaml", "host: 127.0.0.1", "host: 0.0.0.0");
  auto notes = notesOf(h);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].keyPath == "http.host");
  CHECK(notes[0].file == h.path("pine.yaml"));
  CHECK(notes[0].fix.find("127.0.0.1") != std::string::npos);
  for (const char* host : {"localhost", "::1", "127.0.0.2"}) {
    h.write("pine.yaml", std::string("defaults: {model: demo}\nhttp: {host: \"") + host + "\"}\n");
    CHECK_MESSAGE(notesOf(h).empty(), host);
  }
}

TEST_CASE("note: no or a degraded sandbox backend") {
  TempHome h;
  auto none = notesOf(h, "none", "Landlock unavailable");
  REQUIRE(none.size() == 1);
  CHECK(none[0].file.empty());
  CHECK(none[0].message == "no sandbox backend (Landlock unavailable): bash is withheld from house, main, scout "
                           "and command sources do not run");
  auto degraded = notesOf(h, "degraded", "Landlock ABI 1");
  REQUIRE(degraded.size() == 1);
  CHECK(degraded[0].message.find("degraded (Landlock ABI 1)") != std::string::npos);
  // An unknown status is treated as none: fail closed.
  CHECK(notesOf(h, "weird").size() == 1);
  CHECK(notesOf(h, "full").empty());
}

TEST_CASE("note: web tools on an agent whose workspace holds private data") {
  TempHome h;
  h.write("agents/scout/workspace/notes/bank.txt", "account 123\n");
  auto notes = notesOf(h);
  auto* n = findNote(notes, h.path("agents/scout/agent.yaml"), "mcpServers.web", "has web tools and private data");
  REQUIRE_MESSAGE(n, all(notes));
  CHECK(n->message.find("notes/bank.txt") != std::string::npos);
  h.remove("agents/scout/workspace/notes");
  CHECK(notesOf(h).empty());

  // A link out of the workspace counts as content too.
  std::filesystem::create_directory_symlink("/etc", h.path("agents/scout/workspace/etc"));
  CHECK(findNote(notesOf(h), h.path("agents/scout/agent.yaml"), "mcpServers.web", "holds etc"));
  h.remove("agents/scout/workspace/etc");
  CHECK(notesOf(h).empty());

  // A folder granted to the sandbox is private data too.
  h.append("agents/scout/agent.yaml", "sandbox:\n  read: [/srv/photos]\n");
  CHECK(findNote(notesOf(h), h.path("agents/scout/agent.yaml"), "mcpServers.web", "sandbox.read grants /srv/photos"));
  // Main has private things and no web tools: no note for it.
  h.write("agents/main/workspace/diary.md", "private\n");
  CHECK(notesOf(h).size() == 1);
}

TEST_CASE("note: registered source programs, by sourceTypes and by `use`") {
  TempHome h;
  h.write("source-types/imap.js", "export default {}\n");
  h.write("source-types/once.js", "export default {}\n");
  h.append("pine.yaml", "sourceTypes:\n  - {name: imap, file: source-types/imap.js}\n");
  h.replace("pine.yaml", "sources:\n",
            "sources:\n  - {name: mail, type: imap, options: {host: imap.example}}\n"
            "  - {name: oneoff, use: source-types/once.js}\n");
  auto notes = notesOf(h);
  CHECK(notes.size() == 2);
  auto* t = findNote(notes, h.path("pine.yaml"), "sourceTypes[0].file", "source-types/imap.js");
  REQUIRE_MESSAGE(t, all(notes));
  CHECK(t->message.find("pine's rights") != std::string::npos);
  CHECK(findNote(notes, h.path("pine.yaml"), "sources[1].use", "source-types/once.js"));

  h.replace("pine.yaml", "  - {name: mail, type: imap, options: {host: imap.example}}\n", "");
  h.replace("pine.yaml", "  - {name: oneoff, use: source-types/once.js}\n", "");
  h.replace("pine.yaml", "sourceTypes:\n  - {name: imap, file: source-types/imap.js}\n", "");
  CHECK(notesOf(h).empty());
}

TEST_CASE("runCheck: exit 0 clean, 1 with notes, 2 when the configuration is invalid") {
  TempHome h;
  std::ostringstream clean;
  CHECK(runCheck(h.root, "full", "", clean) == 0);
  CHECK(clean.str() == "No security notes\n");

  h.replace("pine.yaml", "host: 127.0.0.1", "host: 0.0.0.0");
  std::ostringstream notes;
  CHECK(runCheck(h.root, "full", "", notes) == 1);
  CHECK(notes.str().find(h.path("pine.yaml") + ": http.host: the control API listens on 0.0.0.0") != std::string::npos);
  CHECK(notes.str().find("    fix: set http.host: 127.0.0.1") != std::string::npos);
  CHECK(notes.str().find("1 security note\n") != std::string::npos);

  h.replace("pine.yaml", "port: 7433", "port: 99999");
  std::ostringstream invalid;
  CHECK(runCheck(h.root, "full", "", invalid) == 2);
  CHECK(invalid.str().find("http.port: 99999 is out of range") != std::string::npos);
  CHECK(invalid.str().find("Configuration is invalid (1 error)") != std::string::npos);
}

TEST_CASE("note: a persistent browser profile acts as the owner; a fresh one does not") {
  TempHome h;
  h.replace("agents/scout/agent.yaml", "    bundled: web          # taints: what it returns is other people's text\n",
            "    bundled: web          # taints: what it returns is other people's text\n  browser:\n    bundled: browser\n");
  CHECK(notesOf(h).empty());  // the twin: a fresh profile each time
  h.replace("agents/scout/agent.yaml", "    bundled: browser\n", "    bundled: browser\n    profile: shopping\n");
  auto notes = notesOf(h);
  auto* n = findNote(notes, h.path("agents/scout/agent.yaml"), "mcpServers.browser.profile", "make it act as you");
  REQUIRE_MESSAGE(n, all(notes));
  CHECK(n->message.find("'shopping'") != std::string::npos);
}

TEST_CASE("a command line is shown with every character that runs, invisible ones as escapes") {
  using pine::config::shownCommandLine;
  // A right-to-left override makes a terminal or a page show "rm -rf ~/txt.pdf" for what runs.
  std::string rlo = "\xe2\x80\xae";
  CHECK(shownCommandLine({"sh", "-c", "cat " + rlo + "fdp.txt"}) == "sh -c $'cat \\u202efdp.txt'");
  CHECK(shownCommandLine({"echo", "a\xe2\x80\x8b" "b"}) == "echo $'a\\u200bb'");  // zero-width space
  CHECK(shownCommandLine({"printf", "x\ty\x1b[2J"}) == "printf $'x\\x09y\\x1b[2J'");
  CHECK(shownCommandLine({"echo", "bad\xff", "it's"}) == "echo $'bad\\xff' 'it'\\''s'");
  CHECK(shownCommandLine({"echo", "\xc0\xaf"}) == "echo $'\\xc0\\xaf'");  // an overlong '/'
  CHECK(shownCommandLine({"echo", "quote' and \\", rlo}) == "echo 'quote'\\'' and \\' $'\\u202e'");
  // The twins: plain words as they are, other text quoted, letters of any script kept.
  CHECK(shownCommandLine({"python3", "poll.py", "--every=5"}) == "python3 poll.py --every=5");
  CHECK(shownCommandLine({"echo", "two words", "\xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d"}) ==
        "echo 'two words' '\xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d'");
}
