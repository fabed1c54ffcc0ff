// pine-checkpoint's library on real folders: a workspace is recorded, changed, compared and put back.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "checkpoint/changes.h"
#include "checkpoint/manifest.h"
#include "checkpoint/restore.h"

using namespace pine::checkpoint;
namespace fs = std::filesystem;

namespace {

struct Dirs {
  std::string root, ws, shadow;
  int wsFd = -1, shadowFd = -1;
  Dirs() {
    char t[] = "/tmp/pine-checkpoint-XXXXXX";
    root = mkdtemp(t);
    ws = root + "/ws";
    shadow = root + "/shadow";
    fs::create_directories(ws);
    fs::create_directories(shadow);
    wsFd = open(ws.c_str(), O_RDONLY | O_DIRECTORY);
    shadowFd = open(shadow.c_str(), O_RDONLY | O_DIRECTORY);
  }
  ~Dirs() {
    close(wsFd);
    close(shadowFd);
    fs::remove_all(root);
  }
  void write(const std::string& rel, const std::string& text) {
    fs::create_directories(fs::path(ws + "/" + rel).parent_path());
    std::ofstream(ws + "/" + rel, std::ios::binary) << text;
  }
  std::string read(const std::string& rel) const {
    std::ifstream f(ws + "/" + rel, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }
  bool has(const std::string& rel) const { return fs::exists(fs::symlink_status(ws + "/" + rel)); }
};

const Change* find(const std::vector<Change>& cs, const std::string& path) {
  for (auto& c : cs)
    if (c.path == path) return &c;
  return nullptr;
}

}  // namespace

TEST_CASE("changes: edits, deletions, renames, binary files and links are told apart") {
  Dirs d;
  d.write("notes.txt", "one\ntwo\nthree\n");
  d.write("old.txt", "gone soon\n");
  d.write("keep/moved.txt", "moving bytes\n");
  fs::create_symlink("/etc/passwd", d.ws + "/outside");
  Manifest before = snapshot(d.wsFd, d.shadowFd);
  CHECK(before.files.at("outside").link);
  CHECK(before.files.at("outside").target == "/etc/passwd");

  d.write("notes.txt", "one\n2\nthree\n");
  fs::remove(d.ws + "/old.txt");
  fs::rename(d.ws + "/keep/moved.txt", d.ws + "/moved-here.txt");
  d.write("pic.bin", std::string("\x89PNG\0\0\x01", 7));
  Manifest after = snapshot(d.wsFd, d.shadowFd);

  auto cs = compare(before, after);
  REQUIRE(cs.size() == 4);
  CHECK(find(cs, "notes.txt")->kind == "modified");
  CHECK(find(cs, "old.txt")->kind == "deleted");
  CHECK(find(cs, "moved-here.txt")->kind == "renamed");
  CHECK(find(cs, "moved-here.txt")->from == "keep/moved.txt");
  CHECK(find(cs, "pic.bin")->kind == "added");
  CHECK(find(cs, "outside") == nullptr);  // the link did not change; nothing was read through it

  auto j = describe(d.shadowFd, before, after, true);
  std::string all = j.dump();
  CAPTURE(all);
  for (auto& f : j["files"]) {
    if (f["path"] == "notes.txt") {
      CHECK(f["diff"].get<std::string>().find("-two\n+2\n") != std::string::npos);
      CHECK(f["diff"].get<std::string>().find("--- a/notes.txt\n+++ b/notes.txt\n@@ -1,3 +1,3 @@") == 0);
    }
    if (f["path"] == "pic.bin") CHECK(f["diff"] == "binary, 0 bytes -> 7 bytes\n");
  }
}

TEST_CASE("snapshot: secrets files, large files and git folders are not kept, and say so") {
  Dirs d;
  d.write(".env", "TOKEN=hunter2\n");
  d.write("sub/.ENV.local", "TOKEN=hunter2\n");
  d.write("big.bin", std::string(2000, 'x'));
  d.write(".git/config", "[core]\n");
  d.write("fine.txt", "ok\n");
  Limits small;
  small.maxFileBytes = 1000;
  Manifest m = snapshot(d.wsFd, d.shadowFd, small);
  CHECK(m.files.size() == 1);
  CHECK(m.files.count("fine.txt"));
  std::string why;
  for (auto& s : m.skipped) why += s.path + ": " + s.why + "\n";
  CAPTURE(why);
  CHECK(why.find(".env: a secrets file") != std::string::npos);
  CHECK(why.find("sub/.ENV.local: a secrets file") != std::string::npos);
  CHECK(why.find("big.bin: larger than 1000 bytes") != std::string::npos);
  CHECK(why.find(".git: a git folder") != std::string::npos);
  // The secret's bytes are in no blob.
  for (auto& e : fs::recursive_directory_iterator(d.shadow))
    if (e.is_regular_file()) {
      std::ifstream f(e.path());
      std::stringstream s;
      s << f.rdbuf();
      CHECK(s.str().find("hunter2") == std::string::npos);
    }
}

TEST_CASE("undo puts back what the task changed and leaves other files as a later run left them") {
  Dirs d;
  d.write("a.txt", "a1\n");
  d.write("b.txt", "b1\n");
  d.write("c.txt", "c1\n");
  Manifest before = snapshot(d.wsFd, d.shadowFd);
  d.write("a.txt", "a2\n");           // modified
  fs::remove(d.ws + "/b.txt");        // deleted
  fs::rename(d.ws + "/c.txt", d.ws + "/c2.txt");  // renamed
  d.write("new.txt", "new\n");        // added
  Manifest after = snapshot(d.wsFd, d.shadowFd);
  d.write("later.txt", "a later run's\n");  // a later run, other files

  auto r = undo(d.wsFd, d.shadowFd, before, after, false);
  CAPTURE(r.dump());
  CHECK(r["ok"] == true);
  CHECK(d.read("a.txt") == "a1\n");
  CHECK(d.read("b.txt") == "b1\n");
  CHECK(d.read("c.txt") == "c1\n");
  CHECK_FALSE(d.has("c2.txt"));
  CHECK_FALSE(d.has("new.txt"));
  CHECK(d.read("later.txt") == "a later run's\n");
}

TEST_CASE("undo refuses when a file the task changed was changed again; force overwrites") {
  Dirs d;
  d.write("a.txt", "a1\n");
  d.write("b.txt", "b1\n");
  Manifest before = snapshot(d.wsFd, d.shadowFd);
  d.write("a.txt", "a2\n");
  d.write("b.txt", "b2\n");
  Manifest after = snapshot(d.wsFd, d.shadowFd);
  d.write("a.txt", "a3 by a later run\n");

  auto refused = undo(d.wsFd, d.shadowFd, before, after, false);
  CHECK(refused["ok"] == false);
  CHECK(refused["changed_since"] == nlohmann::json::array({"a.txt"}));
  CHECK(d.read("a.txt") == "a3 by a later run\n");
  CHECK(d.read("b.txt") == "b2\n");  // refused as a whole: nothing written

  auto forced = undo(d.wsFd, d.shadowFd, before, after, true);
  CHECK(forced["ok"] == true);
  CHECK(d.read("a.txt") == "a1\n");
  CHECK(d.read("b.txt") == "b1\n");
}

TEST_CASE("undo never writes through a link planted where a file or a folder was") {
  Dirs d;
  const std::string outside = d.root + "/outside";
  fs::create_directories(outside);
  d.write("dir/f.txt", "f1\n");
  d.write("g.txt", "g1\n");
  Manifest before = snapshot(d.wsFd, d.shadowFd);
  // The task replaces the folder with a link out of the workspace, and a file with a link too.
  fs::remove_all(d.ws + "/dir");
  fs::create_directory_symlink(outside, d.ws + "/dir");
  fs::remove(d.ws + "/g.txt");
  fs::create_symlink(outside + "/g.txt", d.ws + "/g.txt");
  Manifest after = snapshot(d.wsFd, d.shadowFd);
  CHECK(after.files.at("dir").link);
  CHECK(after.files.at("g.txt").link);

  auto r = undo(d.wsFd, d.shadowFd, before, after, false);
  CAPTURE(r.dump());
  CHECK(fs::is_empty(outside));  // nothing written through either link
  CHECK(d.read("g.txt") == "g1\n");
  CHECK_FALSE(fs::is_symlink(d.ws + "/g.txt"));
  // The link the task made is removed first, then the folder made again and its file put back in it.
  CHECK(r["ok"] == true);
  CHECK_FALSE(fs::is_symlink(d.ws + "/dir"));
  CHECK(d.read("dir/f.txt") == "f1\n");
}

TEST_CASE("undo does not enter a folder that became a link after the task; it says so") {
  Dirs d;
  const std::string outside = d.root + "/outside";
  fs::create_directories(outside);
  d.write("dir/f.txt", "f1\n");
  Manifest before = snapshot(d.wsFd, d.shadowFd);
  d.write("dir/f.txt", "f2\n");
  Manifest after = snapshot(d.wsFd, d.shadowFd);
  // Later, the folder is swapped for a link out, holding a file of the same name and bytes.
  fs::rename(d.ws + "/dir", d.root + "/moved");
  std::filesystem::copy_file(d.root + "/moved/f.txt", outside + "/f.txt");
  fs::create_directory_symlink(outside, d.ws + "/dir");
  auto r = undo(d.wsFd, d.shadowFd, before, after, true);
  CAPTURE(r.dump());
  CHECK(r["ok"] == false);
  bool said = false;
  for (auto& f : r["failed"]) said |= f["path"] == "dir/f.txt" && f["why"].get<std::string>().find("link") != std::string::npos;
  CHECK(said);
  std::ifstream f(outside + "/f.txt");
  std::stringstream s;
  s << f.rdbuf();
  CHECK(s.str() == "f2\n");  // not written through the link
}

TEST_CASE("unifiedDiff: hunks with context, far changes apart, a missing last newline said") {
  std::string a, b;
  for (int i = 1; i <= 20; ++i) a += std::to_string(i) + "\n";
  b = a;
  b.replace(b.find("2\n"), 2, "two\n");
  b.replace(b.find("19\n"), 3, "nineteen\n");
  auto d = unifiedDiff(a, b, "a/x", "b/x");
  CAPTURE(d);
  CHECK(d.find("@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n") != std::string::npos);
  CHECK(d.find("@@ -16,5 +16,5 @@\n 16\n 17\n 18\n-19\n+nineteen\n 20\n") != std::string::npos);
  auto n = unifiedDiff("x\n", "x", "a/y", "b/y");
  CHECK(n.find("\\ No newline at end of file") != std::string::npos);
}
