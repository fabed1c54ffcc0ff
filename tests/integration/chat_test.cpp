// pinectl chat through a pseudo-terminal against a real pined and broker with the script
// model: streamed answers, approvals answered inline, the slash commands, Ctrl-C and EOF. And
// the conversation's opened folder: what its runs may do, and every folder that is refused,
// by the route and by pined when a spawn asks for it directly.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "tests/integration/harness.h"

using namespace pine::test;
using namespace std::chrono_literals;

namespace {

const char* kReplies = R"(replies:
  - match: "say hello"
    turns:
      - text: "Hello from the script."
  - match: "run the command"
    turns:
      - tool_calls: [{name: bash, arguments: {command: "echo chat-ran-this"}}]
      - text: "The command is done."
  - match: "wait a long time"
    turns:
      - tool_calls: [{name: bash, arguments: {command: "sleep 93"}}]
      - text: "Waited."
  - match: "work in the folder"
    turns:
      - tool_calls: [{name: write, arguments: {path: made-by-agent.txt, content: "written by the agent"}}]
      - tool_calls: [{name: bash, arguments: {command: "pwd > cwd.txt; cat owner-note.txt"}}]
      - text: "Worked in the folder."
  - match: "Event feed/in"
    turns:
      - tool_calls: [{name: bash, arguments: {command: "cat FOLDER/owner-note.txt; pwd"}}]
      - text: "Tried from the event."
  - match: "read FOLDER"
    turns:
      - tool_calls: [{name: bash, arguments: {command: "cat FOLDER/owner-note.txt"}}]
      - text: "Tried."
  - match: "read the note"
    turns:
      - tool_calls: [{name: read, arguments: {path: note.txt}}]
      - text: "Read."
  - match: ""
    text: "ok"
)";

// An agent whose bash always asks (approve), and a second agent.
void writeConfig(const std::string& home, const std::string& folder = "") {
  writeMinimalConfig(home, {"main", "other"});
  std::string replies = kReplies;
  while (!folder.empty() && replies.find("FOLDER/") != std::string::npos) {
    size_t at = replies.find("FOLDER/");
    replies.replace(at, 6, folder);
  }
  writeText(home + "/providers/replies.yaml", replies);
  writeText(home + "/agents/main/agent.yaml",
            "description: main\nmode: auto\ntools: [read, write, ls, bash]\napprove: [bash]\n");
  writeText(home + "/agents/other/agent.yaml", "description: other\ntools: [read, write, ls, bash]\n");
}

// pinectl chat on the slave side of a pseudo-terminal; the test reads and types on the master.
class Terminal {
 public:
  Terminal(const std::string& home, const std::string& target, const std::string& userHome) {
    pid_ = forkpty(&master_, nullptr, nullptr, nullptr);
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      setenv("HOME", userHome.c_str(), 1);
      setenv("TERM", "dumb", 1);
      std::string prog = binDir() + "/pinectl";
      execl(prog.c_str(), prog.c_str(), "--home", home.c_str(), "chat", target.c_str(), (char*)nullptr);
      _exit(127);
    }
  }
  ~Terminal() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    close(master_);
  }
  // Reads until `text` has appeared after what earlier waits consumed; false after the timeout.
  bool waitFor(const std::string& text, std::chrono::milliseconds timeout = 30s) {
    auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (auto at = seen_.find(text, consumed_); at != std::string::npos) {
        consumed_ = at + text.size();
        return true;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{master_, POLLIN, 0};
      if (poll(&p, 1, (int)std::min<long long>(left.count(), 200)) <= 0) continue;
      char buf[4096];
      ssize_t n = read(master_, buf, sizeof buf);
      if (n <= 0) return false;  // the program ended (EIO on a closed pty)
      seen_.append(buf, (size_t)n);
    }
  }
  void type(const std::string& keys) { REQUIRE(write(master_, keys.data(), keys.size()) == (ssize_t)keys.size()); }
  void line(const std::string& text) { type(text + "\r"); }
  // The exit code once it ended within the timeout, else -1.
  int exitCode(std::chrono::milliseconds timeout = 10s) {
    waitFor("\x01never\x01", 300ms);  // drain
    bool ended = waitUntil([&] {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) != pid_) return false;
      reaped_ = true;
      code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return true;
    }, timeout);
    return ended ? code_ : -1;
  }
  const std::string& output() const { return seen_; }

 private:
  int master_ = -1;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int code_ = -1;
  std::string seen_;
  size_t consumed_ = 0;
};

}  // namespace

TEST_CASE("pinectl chat in a terminal: streamed answers, approvals inline, slash commands, /quit") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeConfig(home);
  Pined pined(home, {}, {});
  std::filesystem::create_directories(dir.path() + "/owner");
  Terminal t(home, "main", dir.path() + "/owner");
  REQUIRE_MESSAGE(t.waitFor("chat with main/main [auto]"), t.output());
  REQUIRE_MESSAGE(t.waitFor("main/main [auto]> "), t.output());

  t.line("say hello");
  CHECK_MESSAGE(t.waitFor("Hello from the script."), t.output());

  // An approval asked inline with its full arguments; y allows it once.
  t.line("run the command");
  REQUIRE_MESSAGE(t.waitFor("wants to run bash with:"), t.output());
  CHECK_MESSAGE(t.waitFor("echo chat-ran-this"), t.output());
  REQUIRE_MESSAGE(t.waitFor("allow once [y] / deny [n]"), t.output());
  t.line("y");
  CHECK_MESSAGE(t.waitFor("allowed (once)"), t.output());
  CHECK_MESSAGE(t.waitFor("bash: approved"), t.output());
  CHECK_MESSAGE(t.waitFor("The command is done."), t.output());

  // n denies it: the refusal shows as a failure, and the task still ends.
  t.line("run the command");
  REQUIRE_MESSAGE(t.waitFor("allow once [y] / deny [n]"), t.output());
  t.line("n");
  CHECK_MESSAGE(t.waitFor("denied"), t.output());
  CHECK_MESSAGE(t.waitFor("! bash: denied"), t.output());
  CHECK_MESSAGE(t.waitFor("main/main [auto]> "), t.output());

  // An approval answered elsewhere is shown as answered, not asked again.
  t.line("run the command");
  REQUIRE_MESSAGE(t.waitFor("allow once [y] / deny [n]"), t.output());
  auto a = pendingApproval(pined);
  REQUIRE(a.is_object());
  CHECK(pined.api("POST", "/v1/approvals/" + a["id"].get<std::string>() + "/approve", "{}").status == 200);
  CHECK_MESSAGE(t.waitFor("approved by owner elsewhere"), t.output());
  CHECK_MESSAGE(t.waitFor("The command is done."), t.output());

  // /mode shows in the prompt.
  t.line("/mode manual");
  CHECK_MESSAGE(t.waitFor("main is in manual mode"), t.output());
  CHECK_MESSAGE(t.waitFor("main/main [manual]> "), t.output());
  t.line("/mode sideways");
  CHECK_MESSAGE(t.waitFor("mode must be manual, auto or bypass"), t.output());

  // /session moves to another conversation; /usage counts its tasks only.
  t.line("/session side");
  CHECK_MESSAGE(t.waitFor("now in main/side"), t.output());
  CHECK_MESSAGE(t.waitFor("main/side [manual]> "), t.output());
  t.line("say hello");
  CHECK_MESSAGE(t.waitFor("Hello from the script."), t.output());
  t.line("/usage");
  CHECK_MESSAGE(t.waitFor("main/side: 1 tasks"), t.output());
  CHECK_MESSAGE(t.waitFor("tokens in "), t.output());
  // The script model has no pricing: its cost is unknown, never a 0 that looks known.
  CHECK_MESSAGE(t.waitFor(", cache reads 0, cache writes 0"), t.output());
  CHECK_MESSAGE(t.waitFor("cost unknown: "), t.output());

  // /reset empties that conversation.
  t.line("/reset");
  CHECK_MESSAGE(t.waitFor("conversation main/side starts afresh"), t.output());
  CHECK(waitUntil([&] { return pined.auditEvents("session.reset").size() == 1; }, 5s));

  // An unknown command is named with the list.
  t.line("/nope");
  CHECK_MESSAGE(t.waitFor("no command /nope; the commands are:"), t.output());
  CHECK_MESSAGE(t.waitFor("/folder DIR"), t.output());
  t.line("/help");
  CHECK_MESSAGE(t.waitFor("/usage"), t.output());

  // Ctrl-C at the prompt drops the line typed so far.
  t.type("half a line");
  t.type("\x03");
  CHECK_MESSAGE(t.waitFor("main/side [manual]> "), t.output());

  t.line("/quit");
  CHECK_MESSAGE(t.waitFor("bye"), t.output());
  CHECK(t.exitCode() == 0);
  // The history is the owner's, 0600.
  struct stat st {};
  REQUIRE(stat((dir.path() + "/owner/.pine_history").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(contains(readText(dir.path() + "/owner/.pine_history"), "hello"));  // libedit writes a space as \040
}

TEST_CASE("pinectl chat: Ctrl-C while waiting cancels the task; EOF ends cleanly; an unknown agent is named") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeConfig(home);
  writeText(home + "/agents/main/agent.yaml", "description: main\nmode: auto\ntools: [bash, read]\n");
  writeText(home + "/agents/main/workspace/note.txt", "a note\n");
  writeText(home + "/pine.yaml", readText(home + "/pine.yaml") + "security:\n  taintTools: [read]\n");
  Pined pined(home, {}, {});
  std::filesystem::create_directories(dir.path() + "/owner");
  {
    Terminal t(home, "main/work", dir.path() + "/owner");
    REQUIRE_MESSAGE(t.waitFor("main/work [auto]> "), t.output());
    t.line("wait a long time");
    REQUIRE_MESSAGE(t.waitFor("bash: allowed"), t.output());
    t.type("\x03");
    CHECK_MESSAGE(t.waitFor("is cancelled"), t.output());
    CHECK_MESSAGE(t.waitFor("main/work [auto]> "), t.output());
    bool failed = waitUntil([&] {
      auto listed = pined.api("GET", "/v1/tasks").json();
      for (auto& task : listed["tasks"])
        if (task["state"] == "failed" && contains(task.value("error", ""), "cancelled by the owner")) return true;
      return false;
    }, 10s);
    CHECK(failed);
    // Bypass in a conversation that read outside content is shown as paused.
    t.line("read the note");
    CHECK_MESSAGE(t.waitFor("Read."), t.output());
    t.line("/mode bypass");
    CHECK_MESSAGE(t.waitFor("main/work [bypass (paused)]> "), t.output());
    t.line("/reset");
    CHECK_MESSAGE(t.waitFor("main/work [bypass]> "), t.output());
    // Ctrl-D at an empty prompt. A Ctrl-D that reaches the terminal in the moment before libedit
    // puts it in raw mode becomes the line discipline's EOF mark, which libedit never sees: type it
    // again, as a person would.
    // A person also does not type within microseconds of the prompt: give libedit its moment.
    bool ended = false;
    for (int i = 0; i < 5 && !ended; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      t.type("\x04");
      ended = t.waitFor("bye", std::chrono::seconds(3));
    }
    CHECK_MESSAGE(ended, t.output());
    CHECK(t.exitCode() == 0);
  }
  {
    Terminal t(home, "nobody", dir.path() + "/owner");
    CHECK_MESSAGE(t.waitFor("no agent 'nobody'; the agents are: main, other"), t.output());
    CHECK(t.exitCode() == 1);
  }
  // Not a terminal: lines are read plainly, no prompt, the answer printed.
  auto r = run({binDir() + "/pinectl", "--home", home, "chat", "main"}, "say hello\n/quit\n");
  CHECK(r.exitCode == 0);
  CHECK(contains(r.out, "Hello from the script."));
  CHECK(!contains(r.out, "> "));
}

namespace {

// The folder the owner opens: outside pine's home, writable by the agent's uid when pine runs as root.
std::string makeOwnerFolder(const std::string& dir) {
  std::string folder = dir + "/project";
  std::filesystem::create_directories(folder);
  chmod(folder.c_str(), 0777);
  writeText(folder + "/owner-note.txt", "the owner's note\n");
  chmod((folder + "/owner-note.txt").c_str(), 0644);
  return folder;
}

Pined::Http openFolder(Pined& p, const std::string& agent, const std::string& session, const std::string& path) {
  return p.api("PUT", "/v1/agents/" + agent + "/folder", nlohmann::json{{"session", session}, {"path", path}}.dump());
}

std::string joined(const std::vector<std::string>& parts) {
  std::string s;
  for (auto& p : parts) s += p + "\n";
  return s;
}

}  // namespace

TEST_CASE("the opened folder: its conversation reads, writes and starts there; other conversations cannot reach it") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  std::string folder = makeOwnerFolder(dir.path());
  writeConfig(home, folder);
  writeText(home + "/agents/main/agent.yaml", "description: main\nmode: auto\ntools: [read, write, ls, bash]\n");
  writeText(home + "/pine.yaml", readText(home + "/pine.yaml") +
                                     "sources:\n  - {name: feed, type: webhook, open: true, topic: feed/in}\n");
  Pined pined(home, {}, {});

  auto opened = openFolder(pined, "main", "work", folder);
  REQUIRE_MESSAGE(opened.status == 200, opened.body);
  CHECK(opened.json()["path"] == folder);
  CHECK(pined.api("GET", "/v1/agents/main/folder?session=work", "").json()["path"] == folder);

  // The legitimate use: a run of that conversation writes there, and its shell starts there.
  auto t = message(pined, "main", "work in the folder", true, "work");
  CHECK_MESSAGE(t["state"] == "done", t.dump());
  CHECK(readText(folder + "/made-by-agent.txt") == "written by the agent");
  CHECK(readText(folder + "/cwd.txt") == folder + "\n");
  CHECK_MESSAGE(contains(joined(toolResults(home, t["id"])), "the owner's note"), joined(toolResults(home, t["id"])));

  // Another conversation of the same agent: the OS refuses its shell the folder.
  auto other = message(pined, "main", "read FOLDER", true, "elsewhere");
  std::string results = joined(toolResults(home, other["id"]));
  CHECK_MESSAGE(!contains(results, "the owner's note"), results);
  CHECK_MESSAGE(contains(results, "Permission denied"), results);  // Landlock: the file is 0644, the folder 0777

  // A run that outside content started in the same conversation (a stranger's event delivered
  // into it) does not get it: its shell starts in the workspace and the OS refuses the folder.
  // (pined refuses the folder for an untrusted spawn even when asked: tests/unit.)
  auto sub = pined.api("POST", "/v1/subscriptions", R"({"agent": "main", "session": "work", "source": "feed"})");
  REQUIRE_MESSAGE(sub.status == 200, sub.body);
  REQUIRE(waitUntil([&] { return postHook(home, "feed", R"({"ring": 1})", {}) == 202; }, 10s));
  nlohmann::json fromEvent;
  REQUIRE(waitUntil([&] {
    auto waiting = pined.api("GET", "/v1/approvals").json();  // bash in a tainted conversation asks
    for (auto& a : waiting["approvals"])
      pined.api("POST", "/v1/approvals/" + a["id"].get<std::string>() + "/approve", "{}");
    auto listed = pined.api("GET", "/v1/tasks?agent=main").json();
    for (auto& task : listed["tasks"])
      if (task["session"] == "work" && task["id"] != t["id"] && taskEnded(task)) fromEvent = task;
    return fromEvent.is_object();
  }, 60s));
  results = joined(toolResults(home, fromEvent["id"]));
  CHECK_MESSAGE(!contains(results, "the owner's note"), results);
  CHECK_MESSAGE(contains(results, "Permission denied"), results);
  CHECK_MESSAGE(!contains(results, folder + "\n"), results);  // pwd: not the folder

  // A reset closes it; it survives a broker restart until then.
  pid_t broker = pined.rolePid("broker");
  REQUIRE(broker > 0);
  kill(broker, SIGKILL);
  REQUIRE(waitUntil([&] { return pined.rolePid("broker") > 0 && pined.rolePid("broker") != broker; }, 30s));
  REQUIRE(waitUntil([&] { return pined.api("GET", "/v1/agents/main/folder?session=work", "").status == 200; }, 30s));
  CHECK(pined.api("GET", "/v1/agents/main/folder?session=work", "").json()["path"] == folder);
  CHECK(pined.api("POST", "/v1/agents/main/reset", "{\"session\": \"work\"}").status == 200);
  CHECK(pined.api("GET", "/v1/agents/main/folder?session=work", "").json()["path"] == "");
  // Closing works too.
  REQUIRE(openFolder(pined, "main", "work", folder).status == 200);
  CHECK(pined.api("DELETE", "/v1/agents/main/folder", "{\"session\": \"work\"}").status == 200);
  CHECK(pined.api("GET", "/v1/agents/main/folder?session=work", "").json()["path"] == "");
}

TEST_CASE("the opened folder: pine's home, a parent of it, a link to it, another agent, the programs and / are refused") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeConfig(home);
  Pined pined(home, {}, {});
  std::filesystem::create_directory_symlink(home, dir.path() + "/link-to-home");
  std::filesystem::create_directories(home + "/agents/other/workspace");
  std::string programs = binDir();
  // Each with the words of the rule that refuses it (not merely "cannot be reached").
  std::vector<std::pair<std::string, std::string>> refused = {
      {home, "it is pine's home"},
      {dir.path(), "it contains pine's"},
      {dir.path() + "/link-to-home", "it is pine's home"},
      {home + "/agents/other/workspace", "lies inside pine's home"},
      {home + "/agents/other", "another agent's folder"},
      {home + "/agents/main", "lies inside pine's home"},
      {programs, "pine's program files"},
      {"/", "the whole system"},
      {"/etc", "system folder"},
      {"/usr/bin", "system folder"},
      {home + "/data", "lies inside pine's home"}};
  for (auto& item : refused) {
    const std::string& path = item.first;  // not a structured binding: clang 14 cannot capture one (CAPTURE)
    const std::string& why = item.second;
    CAPTURE(path);
    auto r = openFolder(pined, "main", "main", path);
    CHECK(r.status == 403);
    CHECK_MESSAGE(contains(r.json().value("error", ""), why), r.body);
  }
  CHECK(openFolder(pined, "main", "main", "relative/path").status == 403);
  CHECK(openFolder(pined, "main", "main", dir.path() + "/missing").status == 403);
  CHECK(openFolder(pined, "main", "main+sub1", makeOwnerFolder(dir.path())).status == 400);
  CHECK(pined.api("GET", "/v1/agents/main/folder?session=main", "").json()["path"] == "");
  // The legitimate twin: a folder of the owner's opens.
  CHECK(openFolder(pined, "main", "main", makeOwnerFolder(dir.path())).status == 200);
  // Through pinectl too.
  auto r = pined.ctl({"folder", "main/side", home});
  CHECK(r.exitCode != 0);
  CHECK(contains(r.err, "pine's home"));
}
