// pine-browser's sandbox policy (sandbox::browserPolicy): the egress policy, plus exactly what
// Chromium's own sandbox needs; pine's home, .env and the owner's home stay closed, nothing else
// of the home is writable, and other connectors keep the filter that refuses user namespaces.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "sandbox/policy.h"
#include "sandbox/system_runtime.h"

using namespace pine::sandbox;

namespace {

bool in(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

struct Folders {
  std::string root;
  Folders() {
    char tmpl[] = "/tmp/pine-browser-policy-XXXXXX";
    root = mkdtemp(tmpl);
    std::filesystem::create_directories(root + "/home/browser/a/b");
    std::filesystem::create_directories(root + "/home/agents/a/workspace/screenshots");
    std::filesystem::create_directories(root + "/bin");
    std::filesystem::copy_file("/bin/true", root + "/bin/pine-browser");
  }
  ~Folders() { std::filesystem::remove_all(root); }
  BrowserPaths paths() const {
    BrowserPaths p;
    p.egress.program = root + "/bin/pine-browser";
    p.egress.pineHome = root + "/home";
    p.chromium = "/bin/true";  // any ELF program stands in for Chromium's
    p.dataDir = root + "/home/browser/a/b";
    p.screenshots = root + "/home/agents/a/workspace/screenshots";
    return p;
  }
};

}  // namespace

TEST_CASE("browser policy: the egress policy plus Chromium's needs, no more") {
  Folders f;
  const Policy egress = egressPolicy(f.paths().egress);
  const Policy pol = browserPolicy(f.paths());
  CHECK_FALSE(egress.userNamespaces);  // every other connector keeps CLONE_NEWUSER refused
  CHECK(pol.userNamespaces);
  CHECK(pol.execOnly);
  CHECK(pol.network == Network::All);
  CHECK(in(pol.executable, canonicalPath("/bin/true")));
  CHECK(in(pol.executable, canonicalPath(f.root + "/bin/pine-browser")));
  CHECK(pol.executable.size() <= egress.executable.size() + 1);  // Chromium (its loader is pine-browser's)
  for (auto& r : egress.readable) CHECK(in(pol.readable, r));
  for (const char* w : browserSystemWritable())
    if (access(w, F_OK) == 0) CHECK(in(pol.writable, canonicalPath(w)));
  CHECK(in(pol.writable, canonicalPath(f.paths().dataDir)));
  CHECK(in(pol.writable, canonicalPath(f.paths().screenshots)));
  // Of pine's home only its own two folders are writable, nothing else
  const std::string home = canonicalPath(f.root + "/home");
  for (auto& w : pol.writable)
    if (pathWithin(w, home)) CHECK((w == canonicalPath(f.paths().dataDir) || w == canonicalPath(f.paths().screenshots)));
  for (auto& r : pol.readable) CHECK_FALSE(pathWithin(r, home));
}

TEST_CASE("browser policy: a folder that holds pine's home is refused; no Chromium is refused") {
  Folders f;
  BrowserPaths p = f.paths();
  p.dataDir = f.root;  // holds the home
  CHECK_THROWS_WITH_AS(browserPolicy(p), doctest::Contains("holds pine's home"), PolicyError);
  p = f.paths();
  p.chromium.clear();
  CHECK_THROWS_AS(browserPolicy(p), PolicyError);
}
