// The owner administers a pined that runs as a service account (docs/setup.md): as
// root, make a service user, a member of pine's admin group and a third user; run
// pined as the service user with --admin-group; the member's pinectl works for
// status, send, approve, logs and secret set; the third user, and root through the
// sockets, are refused with a reason; workers still run sandboxed (user namespaces,
// since pined is not root). Every user and group made here is removed again.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "tests/integration/harness.h"

using namespace pine::test;
using namespace std::chrono_literals;

namespace {

const char* kReplies = R"(replies:
  - match: "tell the owner"
    turns:
      - tool_calls: [{name: read, arguments: {path: note.txt}}]
      - tool_calls: [{name: send, arguments: {to: owner, text: "hello from the service"}}]
      - text: "Told."
  - match: ""
    text: "ok"
)";

// run() executes a path, never a shell's search: the system's tools by their full path.
std::string tool(const std::string& name) {
  for (const char* dir : {"/usr/sbin/", "/usr/bin/", "/sbin/", "/bin/"})
    if (access((dir + name).c_str(), X_OK) == 0) return dir + name;
  throw std::runtime_error(name + " is not installed");
}

// Users and groups made for one test, removed however it ends.
struct Accounts {
  std::string svc, admin, member, other;
  std::vector<std::string> users, groups;
  Accounts() {
    std::string n = std::to_string(getpid() % 100000);
    svc = "pt-svc" + n, admin = "pt-adm" + n, member = "pt-mem" + n, other = "pt-oth" + n;
    must({tool("groupadd"), "--system", admin}, &groups, admin);
    must({tool("useradd"), "--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", "--groups", admin,
          svc},
         &users, svc);
    must({tool("useradd"), "--user-group", "--no-create-home", "--groups", admin, member}, &users, member);
    must({tool("useradd"), "--user-group", "--no-create-home", other}, &users, other);
  }
  ~Accounts() {
    for (auto& u : users) run({tool("userdel"), u});
    for (auto& g : groups) run({tool("groupdel"), g});
    for (auto& u : users) run({tool("groupdel"), u});  // a user group userdel left (USERGROUPS_ENAB off)
  }
  void must(const std::vector<std::string>& argv, std::vector<std::string>* made, const std::string& name) {
    auto r = run(argv);
    if (r.exitCode != 0) throw std::runtime_error(argv[0] + " " + name + ": " + r.err);
    made->push_back(name);
  }
};

// argv run as `user` with its groups from the system, as a login would give them.
std::vector<std::string> as(const std::string& user, std::vector<std::string> argv) {
  std::vector<std::string> out = {tool("setpriv"), "--reuid=" + user, "--regid=" + user, "--init-groups", "--"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

uid_t uidOf(const std::string& user) {
  struct passwd* pw = getpwnam(user.c_str());
  return pw ? pw->pw_uid : (uid_t)-1;
}

}  // namespace

TEST_CASE("a member of pine's admin group administers a pined run by its service account; nobody else can") {
  if (geteuid() != 0) {
    MESSAGE("needs root to make users and groups (CI runs as root)");
    return;
  }
  LINUX_BACKEND_ONLY();
  Accounts acc;
  TempDir dir;
  chmod(dir.path().c_str(), 0755);
  const std::string home = dir.path() + "/home";
  writeMinimalConfig(home, {"main"});
  writeText(home + "/pine.yaml", readText(home + "/pine.yaml") + "security:\n  taintTools: [read]\n  approvalTimeout: 60\n");
  writeText(home + "/providers/replies.yaml", kReplies);
  writeText(home + "/agents/main/agent.yaml", "description: main\ntools: [read, ls, send]\n");
  writeText(home + "/agents/main/workspace/note.txt", "a note\n");
  writeText(home + "/.env", "");
  chmod((home + "/.env").c_str(), 0600);
  const uid_t svc = uidOf(acc.svc);
  struct group* adm = getgrnam(acc.admin.c_str());
  REQUIRE(adm);
  const gid_t admGid = adm->gr_gid;
  REQUIRE(run({tool("chown"), "-R", acc.svc + ":" + acc.svc, home}).exitCode == 0);
  REQUIRE(run({tool("chmod"), "-R", "go-rwx", home}).exitCode == 0);  // as the install leaves it

  // A service account outside the group cannot give it anything: refused before anything starts.
  {
    const std::string other = dir.path() + "/other-home";
    writeMinimalConfig(other, {"main"});
    REQUIRE(run({tool("chown"), "-R", acc.other + ":" + acc.other, other}).exitCode == 0);
    REQUIRE(run({tool("chmod"), "-R", "go-rwx", other}).exitCode == 0);
    auto r = run(as(acc.other, {binDir() + "/pined", "--home", other, "--foreground", "--admin-group", acc.admin}));
    CHECK(r.exitCode != 0);
    CHECK_MESSAGE(contains(r.err, "which is not in that group"), r.err);
    CHECK_MESSAGE(contains(r.err, "usermod -aG " + acc.admin + " " + acc.other), r.err);
    CHECK(access((other + "/pine.sock").c_str(), F_OK) != 0);
  }

  // pined as the service user (no systemd needed), with the admin group.
  const std::string errPath = dir.path() + "/pined.stderr";
  pid_t pined = fork();
  if (pined == 0) {
    int err = open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(err, 2);
    int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, 0);
    dup2(devnull, 1);
    auto argv = as(acc.svc, {binDir() + "/pined", "--home", home, "--foreground", "--admin-group", acc.admin});
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  struct Stop {
    pid_t pid;
    std::string home;
    ~Stop() {
      kill(pid, SIGTERM);
      for (int i = 0; i < 100 && waitpid(pid, nullptr, WNOHANG) == 0; ++i) usleep(50000);
      for (pid_t p : processesMentioning(home)) kill(p, SIGKILL);
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  } stop{pined, home};
  auto member = [&](std::vector<std::string> args, const std::string& input = "") {
    std::vector<std::string> argv = {binDir() + "/pinectl", "--home", home};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(as(acc.member, argv), input);
  };
  auto other = [&](std::vector<std::string> args, const std::string& input = "") {
    std::vector<std::string> argv = {binDir() + "/pinectl", "--home", home};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(as(acc.other, argv), input);
  };
  REQUIRE_MESSAGE(waitUntil([&] { return member({"status"}).exitCode == 0; }, 20s),
                  readText(errPath), "\nmember's status: ", member({"status"}).err);

  // What pined gave the group: the home, data/, logs, token and sockets; nothing for others.
  struct stat st;
  auto modeOf = [&](const std::string& rel) {
    REQUIRE(lstat((home + (rel.empty() ? "" : "/" + rel)).c_str(), &st) == 0);
    return st.st_mode & 07777;
  };
  CHECK(modeOf("") == 0750);
  CHECK(st.st_gid == admGid);
  CHECK(modeOf("pine.sock") == 0660);
  CHECK(st.st_gid == admGid);
  CHECK(modeOf("pined.sock") == 0660);
  CHECK(st.st_gid == admGid);
  CHECK(modeOf("data/http-token") == 0640);
  CHECK(modeOf("data/logs/audit.jsonl") == 0640);
  CHECK(st.st_gid == admGid);
  CHECK(st.st_uid == svc);
  CHECK(modeOf(".env") == 0600);
  CHECK(modeOf("pine.yaml") == 0600);
  CHECK((modeOf("agents") & 077) == 0);

  // The member: status, send with an approval, approve, logs, logs -f, secret set.
  auto status = member({"status", "--json"});
  REQUIRE(status.exitCode == 0);
  auto sent = member({"send", "--no-wait", "--json", "main", "tell the owner something"});
  REQUIRE_MESSAGE(sent.exitCode == 0, sent.err);
  std::string approval;
  REQUIRE_MESSAGE(waitUntil([&] {
    auto j = nlohmann::json::parse(member({"approvals", "--json"}).out, nullptr, false);
    if (j.is_discarded() || !j.contains("approvals") || j["approvals"].empty()) return false;
    approval = j["approvals"][0]["id"];
    return true;
  }, 30s), member({"tasks"}).out, readText(home + "/data/logs/broker.log"), readText(errPath));
  auto approved = member({"approve", approval});
  CHECK_MESSAGE(approved.exitCode == 0, approved.err);
  bool done = waitUntil([&] { return contains(member({"tasks"}).out, "done"); }, 30s);
  CHECK_MESSAGE(done, member({"tasks"}).out);
  auto logs = member({"logs"});
  CHECK(logs.exitCode == 0);
  CHECK(contains(logs.out, "approval"));
  // -f starts at the end (the last 10 lines); -n reaches back to pined's start.
  auto follow = run(as(acc.member, {tool("timeout"), "2", binDir() + "/pinectl", "--home", home, "logs", "-f", "-n",
                                    "100000"}));
  CHECK(follow.exitCode == 124);  // still following when timeout stopped it
  CHECK(contains(follow.out, "process.start"));
  auto secret = member({"secret", "set", "MEMBER_SET_IT"}, "value-from-the-member\n");
  CHECK_MESSAGE(secret.exitCode == 0, secret.err);
  CHECK(contains(readText(home + "/.env"), "MEMBER_SET_IT="));
  CHECK(modeOf(".env") == 0600);
  CHECK(st.st_uid == svc);

  // Workers ran sandboxed, under user namespaces: pined is not root.
  bool sandboxed = false;
  std::istringstream auditLines(readText(home + "/data/logs/audit.jsonl"));
  for (std::string line; std::getline(auditLines, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || j.value("event", "") != "process.start" || j.value("process", "") != "worker") continue;
    std::string box = j.value("sandbox", "");
    CHECK_MESSAGE((box == "linux:full" || box == "linux:degraded"), line);
    sandboxed = box == "linux:full" || box == "linux:degraded";
  }
  CHECK(sandboxed);

  // The third user: refused by every socket and file, each with a reason.
  auto refused = other({"status"});
  CHECK(refused.exitCode != 0);
  CHECK_MESSAGE(contains(refused.err, "not in " + acc.admin), refused.err);
  CHECK(other({"logs"}).exitCode != 0);
  auto secretRefused = other({"secret", "set", "OTHER"}, "x\n");
  CHECK(secretRefused.exitCode != 0);
  CHECK_MESSAGE(contains(secretRefused.err, acc.admin), secretRefused.err);
  for (const char* rel : {"data/http-token", "data/logs/audit.jsonl", ".env", "pine.yaml", "data/pine.db"})
    CHECK_MESSAGE(run(as(acc.other, {tool("cat"), home + "/" + rel})).exitCode != 0, rel);
  CHECK(run(as(acc.other, {tool("ls"), home})).exitCode != 0);
  // Not even the member reads .env, the configuration or the database.
  for (const char* rel : {".env", "pine.yaml", "data/pine.db"})
    CHECK_MESSAGE(run(as(acc.member, {tool("cat"), home + "/" + rel})).exitCode != 0, rel);
  CHECK_FALSE(contains(readText(home + "/.env"), "OTHER="));

  // The sockets' own check, past the file modes: root may open every file, but it is neither
  // pine's uid nor in the group, so both sockets refuse it.
  auto rootStatus = run({binDir() + "/pinectl", "--home", home, "status"});
  CHECK(rootStatus.exitCode != 0);
  CHECK_MESSAGE(contains(rootStatus.err, "refused this connection"), rootStatus.err);
  auto rootSecret = run({binDir() + "/pinectl", "--home", home, "secret", "list"});
  CHECK(rootSecret.exitCode != 0);
  CHECK_MESSAGE(contains(rootSecret.err, "without answering"), rootSecret.err);

  // Added to the group after "logging in": the kernel's list of the running process decides, and
  // pinectl says to log in again. setpriv without --init-groups keeps the old list.
  REQUIRE(run({tool("usermod"), "-aG", acc.admin, acc.other}).exitCode == 0);
  auto stale = run({tool("setpriv"), "--reuid=" + acc.other, "--regid=" + acc.other, "--clear-groups", "--",
                    binDir() + "/pinectl", "--home", home, "status"});
  CHECK(stale.exitCode != 0);
  CHECK_MESSAGE(contains(stale.err, "log in again"), stale.err);
  // A fresh login (setpriv --init-groups) is let in; pined may still be bringing the broker
  // back after the secret change above, so the answer is waited for.
  CHECK_MESSAGE(waitUntil([&] { return other({"status"}).exitCode == 0; }, std::chrono::seconds(10)), other({"status"}).err);
}

TEST_CASE("pined refuses an admin group it cannot give files to, before starting anything") {
  if (geteuid() != 0) {
    MESSAGE("needs root to make users and groups (CI runs as root)");
    return;
  }
  TempDir dir;
  const std::string home = dir.path() + "/home";
  writeMinimalConfig(home, {"main"});
  auto r = run({binDir() + "/pined", "--home", home, "--foreground", "--admin-group", "no-such-group-pt"});
  CHECK(r.exitCode != 0);
  CHECK_MESSAGE(contains(r.err, "no such group"), r.err);
  auto root = run({binDir() + "/pined", "--home", home, "--foreground", "--admin-group", "root"});
  CHECK(root.exitCode != 0);
  CHECK_MESSAGE(contains(root.err, "service account"), root.err);
  CHECK(access((home + "/pine.sock").c_str(), F_OK) != 0);
}
