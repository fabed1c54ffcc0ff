// Issue 17 point 7 through the real process tree (pined, broker, sandboxed workers, pine-checkpoint
// in its own sandbox): every task that may write its workspace is recorded before and after it
// runs; `pinectl changes` shows edits, deletions, renames, binary files and links; `pinectl undo`
// puts back only what that task changed, refuses (exit 3) when a later run changed the same files
// again and overwrites them with --force; a link the task planted is never written through; the
// worker cannot reach the checkpoints; a tainted run that changed files is summarised to the owner.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "tests/integration/harness.h"

using namespace pine::test;
using namespace std::chrono_literals;

namespace {

const char* kReplies = R"(replies:
  - match: "read the page"
    turns:
      - tool_calls: [{name: read, arguments: {path: page.html}}]
      - text: "Read."
  - match: "run edit"
    turns:
      - tool_calls: [{name: bash, arguments: {command: "sh edit.sh"}}]
      - text: "Edited."
  - match: "run later"
    turns:
      - tool_calls: [{name: bash, arguments: {command: "sh later.sh"}}]
      - text: "Later."
  - match: "run again"
    turns:
      - tool_calls: [{name: bash, arguments: {command: "sh again.sh"}}]
      - text: "Again."
)";

bool isLink(const std::string& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

bool exists(const std::string& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0;
}

std::string endedTask(Pined& p, const std::string& text, const std::string& session) {
  std::string id = message(p, "main", text, false, session)["task"];
  bool ended = false;
  waitUntil([&] {
    auto j = p.api("GET", "/v1/tasks?agent=main").json();
    if (j.is_object() && j.contains("tasks"))
      for (auto& t : j["tasks"])
        if (t["id"] == id && taskEnded(t)) ended = true;
    return ended;
  }, 60s);
  if (!ended) MESSAGE(tailOf(p.stderrText(), 6000));
  REQUIRE(ended);
  // pined takes the last checkpoint once it has reaped the worker, then the broker records what
  // changed (changedFiles): only then is the run over for the workspace.
  bool recorded = false;
  waitUntil([&] {
    auto j = p.api("GET", "/v1/tasks?agent=main").json();
    if (j.is_object() && j.contains("tasks"))
      for (auto& t : j["tasks"])
        if (t["id"] == id && t.contains("changedFiles")) recorded = true;
    return recorded;
  }, 30s);
  CHECK(recorded);
  return id;
}

// The broker records what a task changed once pined has taken its last checkpoint.
nlohmann::json changesJson(Pined& p, const std::string& task) {
  auto r = p.ctl({"changes", task, "--json"});
  CAPTURE(r.err);
  if (r.exitCode != 0)
    for (auto& line : p.auditEvents("checkpoint.failed")) MESSAGE(line);
  REQUIRE(r.exitCode == 0);
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("changes and undo: what a run changed is shown and put back, later runs' files kept, links not followed") {
  TempDir dir;
  const std::string home = dir.path() + "/home";
  const std::string outside = dir.path() + "/outside.txt";
  writeText(outside, "outside the workspace\n");
  chmod(dir.path().c_str(), 0755);
  chmod(outside.c_str(), 0666);  // as root the worker's uid could write it: undo must not, through a link
  writeMinimalConfig(home, {"main"});
  writeText(home + "/pine.yaml", readText(home + "/pine.yaml") + "security:\n  taintTools: [read]\n");
  writeText(home + "/providers/replies.yaml", kReplies);
  writeText(home + "/agents/main/agent.yaml", "description: main\ntools: [read, write, bash, ls]\n");
  const std::string ws = home + "/agents/main/workspace";
  writeText(ws + "/page.html", "<p>outside content</p>\n");
  writeText(ws + "/notes.txt", "one\ntwo\nthree\n");
  writeText(ws + "/old.txt", "to be deleted\n");
  writeText(ws + "/keep.txt", "to be renamed\n");
  writeText(ws + "/victim.txt", "the owner's file\n");
  const std::string r = R"(r() { if sh -c "$1" >/dev/null 2>&1; then echo "ok: $1"; else echo "no: $1"; fi; }
)";
  writeText(ws + "/edit.sh", r + "r 'printf \"one\\n2\\nthree\\n\" > notes.txt'\n"
                                 "r 'rm old.txt'\n"
                                 "r 'mv keep.txt renamed.txt'\n"
                                 "r 'printf \"\\211PNG\\000\\001\\002\" > pic.bin'\n"
                                 "r 'rm victim.txt && ln -s " + outside + " victim.txt'\n"
                                 "r 'ls " + home + "/checkpoints/main'\n"
                                 "r 'cat " + home + "/checkpoints/main/manifests/*'\n"
                                 "r 'echo x > " + home + "/checkpoints/main/planted'\n");
  writeText(ws + "/later.sh", r + "r 'echo later >> later.txt'\n");
  writeText(ws + "/again.sh", r + "r 'echo again >> notes.txt'\n");
  Pined pined(home, {}, {});

  // One run: an edit, a deletion, a rename, a binary file, a file replaced by a link out.
  const std::string edit = endedTask(pined, "run edit", "main");
  const std::string out = [&] {
    std::string all;
    for (auto& t : toolResults(home, edit)) all += t + "\n";
    return all;
  }();
  CAPTURE(out);
  CHECK(contains(out, "ok: rm old.txt"));
  CHECK(contains(out, "ok: rm victim.txt && ln -s"));
  // The worker reaches no checkpoint: not by listing, reading or writing (the Seatbelt stand-in
  // enforces nothing; the rest of this test runs through its code path too).
  if (!seatbeltStandIn()) {
    CHECK(contains(out, "no: ls " + home + "/checkpoints/main"));
    CHECK(contains(out, "no: cat " + home + "/checkpoints/main/manifests/*"));
    CHECK(contains(out, "no: echo x > " + home + "/checkpoints/main/planted"));
    CHECK_FALSE(exists(home + "/checkpoints/main/planted"));
  }

  auto ch = changesJson(pined, edit);
  CAPTURE(ch.dump(2));
  std::map<std::string, nlohmann::json> by;
  for (auto& f : ch["files"]) by[f["path"]] = f;
  REQUIRE(by.count("notes.txt"));
  CHECK(by["notes.txt"]["change"] == "modified");
  CHECK(contains(by["notes.txt"]["diff"], "-two\n+2\n"));
  REQUIRE(by.count("old.txt"));
  CHECK(by["old.txt"]["change"] == "deleted");
  REQUIRE(by.count("renamed.txt"));
  CHECK(by["renamed.txt"]["change"] == "renamed");
  CHECK(by["renamed.txt"]["from"] == "keep.txt");
  REQUIRE(by.count("pic.bin"));
  CHECK(by["pic.bin"]["change"] == "added");
  CHECK(by["pic.bin"]["diff"] == "binary, 0 bytes -> 7 bytes\n");
  REQUIRE(by.count("victim.txt"));
  CHECK(by["victim.txt"]["change"] == "modified");
  CHECK(by["victim.txt"]["link_after"] == outside);  // recorded as a link, not read through
  // The text form, as the owner reads it.
  auto text = pined.ctl({"changes", edit});
  CHECK(text.exitCode == 0);
  CHECK(contains(text.out, "renamed: keep.txt -> renamed.txt"));
  CHECK(contains(text.out, "binary, 0 bytes -> 7 bytes"));
  CHECK(contains(text.out, "@@ -1,3 +1,3 @@"));

  // A later clean run touches another file; undoing the first keeps it.
  const std::string later = endedTask(pined, "run later", "main");
  CHECK(readText(ws + "/later.txt") == "later\n");
  auto undo = pined.ctl({"undo", edit});
  CAPTURE(undo.out);
  CAPTURE(undo.err);
  CHECK(undo.exitCode == 0);
  CHECK(readText(ws + "/notes.txt") == "one\ntwo\nthree\n");
  CHECK(readText(ws + "/old.txt") == "to be deleted\n");
  CHECK(readText(ws + "/keep.txt") == "to be renamed\n");
  CHECK_FALSE(exists(ws + "/renamed.txt"));
  CHECK_FALSE(exists(ws + "/pic.bin"));
  CHECK_FALSE(isLink(ws + "/victim.txt"));
  CHECK(readText(ws + "/victim.txt") == "the owner's file\n");
  CHECK(readText(outside) == "outside the workspace\n");  // never written through the link
  CHECK(readText(ws + "/later.txt") == "later\n");          // the later run's file stays
  CHECK(pined.auditJson("task.undo", edit).size() == 1);

  // A run whose file a later run changed again: refused with the list, nothing written; --force.
  const std::string again = endedTask(pined, "run again", "main");
  endedTask(pined, "run again", "main");
  CHECK(readText(ws + "/notes.txt") == "one\ntwo\nthree\nagain\nagain\n");
  auto refused = pined.ctl({"undo", again});
  CAPTURE(refused.err);
  CHECK(refused.exitCode == 3);
  CHECK(contains(refused.err, "notes.txt"));
  CHECK(contains(refused.err, "--force"));
  CHECK(readText(ws + "/notes.txt") == "one\ntwo\nthree\nagain\nagain\n");
  auto forced = pined.ctl({"undo", again, "--force"});
  CAPTURE(forced.err);
  CHECK(forced.exitCode == 0);
  CHECK(readText(ws + "/notes.txt") == "one\ntwo\nthree\n");

  // The checkpoints folder is pined's: nobody else may list it (as root: 711, each agent's folder
  // in it the agent's uid's, 700; the worker's sandbox kept it out above).
  struct stat st;
  REQUIRE(stat((home + "/checkpoints").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == (getuid() == 0 ? 0711u : 0700u));
  CHECK(st.st_uid == getuid());
  REQUIRE(stat((home + "/checkpoints/main").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);

  // A tainted run that changes files: the owner is told which.
  endedTask(pined, "read the page", "web");
  REQUIRE(sessionTainted(pined, "main", "web"));
  const std::string tainted = endedTask(pined, "run later", "web");
  nlohmann::json notice;
  REQUIRE(waitUntil([&] {
    for (auto& n : pined.auditJson("owner.notice", tainted))
      if (n["notice"] == "taintedChanges") notice = n;
    return notice.is_object();
  }, 10s));
  CAPTURE(notice.dump());
  CHECK(contains(notice["text"], "1 file changed: later.txt"));
  // A clean run's changes are not announced.
  for (auto& n : pined.auditJson("owner.notice", later)) CHECK(n["notice"] != "taintedChanges");
}

TEST_CASE("changes and undo asked the moment a task has answered wait for its last checkpoint") {
  // pinectl send returns with the answer, before pined has reaped the worker and taken the
  // checkpoint after it; `pinectl changes` and `undo` typed next must not find it missing.
  // Many files make that checkpoint slow enough to be asked for while it is taken.
  TempDir dir;
  const std::string home = dir.path() + "/home";
  writeMinimalConfig(home, {"main"});
  writeText(home + "/providers/replies.yaml", kReplies);
  writeText(home + "/agents/main/agent.yaml", "description: main\ntools: [read, write, bash, ls]\n");
  const std::string ws = home + "/agents/main/workspace";
  writeText(ws + "/later.sh", "echo later >> later.txt\n");
  for (int d = 0; d < 40; ++d)
    for (int f = 0; f < 500; ++f)
      writeText(ws + "/many/" + std::to_string(d) + "/" + std::to_string(f), "file " + std::to_string(f) + "\n");
  Pined pined(home, {}, {});

  auto one = message(pined, "main", "run later", true, "main");  // returns with the answer
  REQUIRE(one.value("state", "") == "done");
  const std::string first = one["id"];
  auto ch = changesJson(pined, first);
  CAPTURE(ch.dump(2));
  REQUIRE(ch["files"].size() == 1);
  CHECK(ch["files"][0]["path"] == "later.txt");
  CHECK(ch["files"][0]["change"] == "added");

  auto two = message(pined, "main", "run later", true, "main");
  REQUIRE(two.value("state", "") == "done");
  const std::string second = two["id"];
  CHECK(readText(ws + "/later.txt") == "later\nlater\n");
  auto undo = pined.ctl({"undo", second});
  CAPTURE(undo.out);
  CAPTURE(undo.err);
  CHECK(undo.exitCode == 0);
  CHECK(readText(ws + "/later.txt") == "later\n");
}
