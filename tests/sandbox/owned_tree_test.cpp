// Handing a workspace to a worker's uid, as root, while the worker changes it. pined
// must change owners inside the workspace only: a folder swapped for a symlink to a
// folder outside, or a hard link to a file outside, never makes it change anything there.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "sandbox/linux/owned_tree.h"

namespace fs = std::filesystem;
using pine::sandbox::handOverToWorker;

namespace {

constexpr uid_t kWorker = 60990;

struct Home {
  std::string base;
  Home() {
    char tmpl[] = "/tmp/pine-owned-tree-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    base = tmpl;
  }
  ~Home() { fs::remove_all(base); }
  std::string at(const std::string& rel) const { return base + "/" + rel; }
};

void writeFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// Owner, group and mode of every entry below `root` (links not followed): what must not change.
std::map<std::string, std::string> snapshot(const std::string& root) {
  std::map<std::string, std::string> out;
  auto add = [&](const std::string& p) {
    struct stat st;
    REQUIRE(lstat(p.c_str(), &st) == 0);
    out[p] = std::to_string(st.st_uid) + ":" + std::to_string(st.st_gid) + ":" + std::to_string(st.st_mode);
  };
  add(root);
  for (auto& e : fs::recursive_directory_iterator(root)) add(e.path().string());
  return out;
}

uid_t ownerOf(const std::string& p) {
  struct stat st;
  REQUIRE(lstat(p.c_str(), &st) == 0);
  return st.st_uid;
}

mode_t modeOf(const std::string& p) {
  struct stat st;
  REQUIRE(lstat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

// A workspace with folders and files, and an "outside" tree that belongs to root.
void makeTrees(const Home& h) {
  fs::create_directories(h.at("agents/a/workspace/src/deep"));
  fs::create_directories(h.at("outside/inner"));
  writeFile(h.at("agents/a/workspace/notes.txt"), "mine");
  writeFile(h.at("agents/a/workspace/src/main.c"), "int main;");
  writeFile(h.at("agents/a/workspace/src/deep/x"), "x");
  writeFile(h.at("outside/secret"), "root's");
  writeFile(h.at("outside/inner/key"), "root's");
  for (const char* dir : {"", "/agents", "/agents/a"}) REQUIRE(chmod((h.base + dir).c_str(), 0700) == 0);
  REQUIRE(chmod(h.at("outside/secret").c_str(), 0600) == 0);
}

}  // namespace

TEST_CASE("hand-over: the workspace becomes the worker's; links, linked files and the folders above are left alone") {
  if (geteuid() != 0) {
    MESSAGE("skipped: handing a tree to another uid needs root");
    return;
  }
  Home h;
  makeTrees(h);
  // A symlink and a hard link to files outside, both put there before pined walks.
  REQUIRE(symlink(h.at("outside/secret").c_str(), h.at("agents/a/workspace/sym").c_str()) == 0);
  REQUIRE(link(h.at("outside/secret").c_str(), h.at("agents/a/workspace/hard").c_str()) == 0);
  REQUIRE(symlink(h.at("outside").c_str(), h.at("agents/a/workspace/dirlink").c_str()) == 0);
  const auto before = snapshot(h.at("outside"));

  auto change = handOverToWorker(h.base, {"agents/a/workspace"}, kWorker, kWorker);
  CHECK(change.changed == 6);  // workspace, src, deep, notes.txt, main.c, x
  CHECK(change.linkedFiles == 1);
  CHECK(change.symlinks == 2);
  for (const char* mine : {"", "/notes.txt", "/src", "/src/main.c", "/src/deep", "/src/deep/x"})
    CHECK(ownerOf(h.at("agents/a/workspace") + mine) == kWorker);
  CHECK(ownerOf(h.at("agents/a/workspace/sym")) == 0);
  CHECK(snapshot(h.at("outside")) == before);
  // Traversable, never listable, from the home down; the home's own owner is untouched.
  for (const char* above : {"", "/agents", "/agents/a"}) {
    CHECK((modeOf(h.base + above) & S_IXOTH) != 0);
    CHECK((modeOf(h.base + above) & S_IROTH) == 0);
    CHECK(ownerOf(h.base + above) == 0);
  }

  // Walked once: a file the owner adds later stays the owner's, and nothing is walked again.
  writeFile(h.at("agents/a/workspace/added-later"), "owner's");
  auto again = handOverToWorker(h.base, {"agents/a/workspace"}, kWorker, kWorker);
  CHECK(again.changed == 0);
  CHECK(ownerOf(h.at("agents/a/workspace/added-later")) == 0);
}

TEST_CASE("hand-over: a top folder that is a link, or a name that is not plain, is refused") {
  if (geteuid() != 0) {
    MESSAGE("skipped: needs root");
    return;
  }
  Home h;
  makeTrees(h);
  fs::create_directories(h.at("sandbox/a"));
  REQUIRE(symlink(h.at("outside").c_str(), h.at("sandbox/a/tmp").c_str()) == 0);
  const auto before = snapshot(h.at("outside"));
  CHECK_THROWS_WITH_AS(handOverToWorker(h.base, {"sandbox/a/tmp"}, kWorker, kWorker),
                       doctest::Contains("never a link"), std::runtime_error);
  CHECK_THROWS_AS(handOverToWorker(h.base, {"agents/../outside"}, kWorker, kWorker), std::runtime_error);
  CHECK(snapshot(h.at("outside")) == before);
}

TEST_CASE("hand-over under attack: folders swapped for links to outside, hard links made, over many runs") {
  if (geteuid() != 0) {
    MESSAGE("skipped: needs root");
    return;
  }
  Home h;
  makeTrees(h);
  for (int i = 0; i < 20; ++i) {
    fs::create_directories(h.at("agents/a/workspace/d" + std::to_string(i) + "/sub"));
    writeFile(h.at("agents/a/workspace/d" + std::to_string(i) + "/sub/f"), "f");
  }
  const auto before = snapshot(h.at("outside"));
  const std::string ws = h.at("agents/a/workspace");
  std::atomic<bool> stop{false};
  std::atomic<long> swaps{0};
  // The worker's side: swap each folder for a link to outside and back, and drop hard links
  // to outside files into the tree, as fast as it can.
  std::thread attacker([&] {
    for (long n = 0; !stop; ++n) {
      const std::string d = ws + "/d" + std::to_string(n % 20);
      const std::string aside = d + ".aside";
      if (rename(d.c_str(), aside.c_str()) == 0) {
        if (symlink(h.at("outside").c_str(), d.c_str()) == 0) ++swaps;
        std::this_thread::yield();
        unlink(d.c_str());
        rename(aside.c_str(), d.c_str());
      }
      const std::string sub = d + "/sub";
      const std::string subAside = sub + ".aside";
      if (rename(sub.c_str(), subAside.c_str()) == 0) {
        if (symlink(h.at("outside/inner").c_str(), sub.c_str()) == 0) ++swaps;
        std::this_thread::yield();
        unlink(sub.c_str());
        rename(subAside.c_str(), sub.c_str());
      }
      const std::string hard = d + "/sub/hard";
      if (link(h.at("outside/inner/key").c_str(), hard.c_str()) == 0) {
        std::this_thread::yield();
        unlink(hard.c_str());
      }
    }
  });
  size_t walked = 0;
  // At least 300 runs, and on until the attacker has swapped 100 times: on a loaded machine
  // its thread gets fewer turns, and a race that was hardly run proves nothing.
  for (int run = 0; run < 300 || (swaps.load() <= 100 && run < 20000); ++run) {
    REQUIRE(chown(ws.c_str(), 0, 0) == 0);  // as a fresh folder is: the next preparation walks it
    auto change = handOverToWorker(h.base, {"agents/a/workspace"}, kWorker, kWorker);
    walked += change.changed;
  }
  stop = true;
  attacker.join();
  MESSAGE("swaps made: " << swaps.load() << ", entries changed: " << walked);
  CHECK(swaps.load() > 100);
  CHECK(walked > 300);
  CHECK(snapshot(h.at("outside")) == before);
  CHECK(ownerOf(ws + "/notes.txt") == kWorker);
}
