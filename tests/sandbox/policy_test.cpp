// The policy model: variables, canonical paths, what no grant can open.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "sandbox/policy.h"

namespace fs = std::filesystem;
using namespace pine::sandbox;

namespace {

struct Tree {
  std::string root;
  AgentPaths paths;
  Tree() {
    char tmpl[] = "/tmp/pine-policy-XXXXXX";
    root = mkdtemp(tmpl);
    std::string home = root + "/home/owner", pine = home + "/.pine";
    for (auto d : {pine + "/agents/a/workspace/sub", pine + "/agents/a/skills", pine + "/agents/b/workspace",
                   pine + "/sandbox/a/tmp", pine + "/docs", home + "/.ssh", root + "/prog", root + "/outside"})
      fs::create_directories(d);
    std::ofstream(pine + "/.env") << "SECRET=1\n";
    paths.agentId = "a";
    paths.pineHome = pine;
    paths.userHome = home;
    paths.workspace = pine + "/agents/a/workspace";
    paths.privateHome = pine + "/sandbox/a";
    paths.tmpdir = pine + "/sandbox/a/tmp";
    paths.skills = {pine + "/agents/a/skills"};
    paths.docs = pine + "/docs";
    paths.programDir = root + "/prog";
  }
  ~Tree() { fs::remove_all(root); }
};

std::string refusal(const AgentPaths& p, Grants g) {
  try {
    agentPolicy(p, g, false);
    return "";
  } catch (const PolicyError& e) {
    return e.what();
  }
}

}  // namespace

TEST_CASE("variables expand; an unknown one is an error that names it") {
  Variables v = {{"WORKSPACE", "/w"}, {"HOME", "/h"}, {"TMPDIR", "/t"}};
  CHECK(expandVariables("${WORKSPACE}/x/${HOME}", v) == "/w/x//h");
  CHECK(expandVariables("/a$b", v) == "/a$b");
  try {
    expandVariables("${HOEM}/.ssh", v);
    FAIL("no error");
  } catch (const PolicyError& e) {
    CHECK(std::string(e.what()).find("${HOEM}") != std::string::npos);
  }
  CHECK_THROWS_AS(expandVariables("${WORKSPACE", v), PolicyError);
}

TEST_CASE("canonical paths: realpath of the existing prefix, no relative paths") {
  Tree t;
  CHECK(canonicalPath(t.paths.workspace + "/") == t.paths.workspace);
  CHECK(canonicalPath(t.paths.workspace + "/./sub/../sub//") == t.paths.workspace + "/sub");
  CHECK(canonicalPath(t.paths.workspace + "/new/deeper") == t.paths.workspace + "/new/deeper");
  fs::create_directory_symlink(t.paths.pineHome, t.root + "/link");
  CHECK(canonicalPath(t.root + "/link/.env") == t.paths.pineHome + "/.env");
  CHECK_THROWS_AS(canonicalPath("relative/path"), PolicyError);
  CHECK_THROWS_AS(canonicalPath(""), PolicyError);
  CHECK_THROWS_AS(canonicalPath(t.root + "/nothere/../../etc"), PolicyError);
  CHECK(pathWithin("/a/b", "/a"));
  CHECK(!pathWithin("/ab", "/a"));
  CHECK(pathWithin("/x", "/"));
}

TEST_CASE("pine's home, .env, other agents and program files can never be granted, however asked") {
  Tree t;
  fs::create_directory_symlink(t.paths.pineHome, t.paths.workspace + "/pine-link");
  fs::create_symlink(t.paths.pineHome + "/.env", t.root + "/outside/env-link");
  std::string pine = t.paths.pineHome;
  for (std::string ask : std::vector<std::string>{pine, pine + "/", pine + "/.env", pine + "//.env/", t.paths.workspace + "/../../..",
                          t.paths.workspace + "/pine-link", t.root + "/outside/env-link", "/", t.paths.userHome,
                          t.root + "/home", t.root, pine + "/agents/b/workspace", pine + "/agents/b",
                          pine + "/agents/a", pine + "/data", t.root + "/prog", t.root + "/prog/pine-worker",
                          "${HOME}", "${HOME}/.pine", "${WORKSPACE}/../../b/workspace", "${HOME}/../"}) {
    CAPTURE(ask);
    for (bool write : {false, true}) {
      Grants g;
      (write ? g.write : g.read).push_back(ask);
      std::string why = refusal(t.paths, g);
      CHECK(why.find("refused") != std::string::npos);
    }
  }
  // The refusal says what and why.
  Grants g;
  g.read.push_back(t.paths.workspace + "/pine-link");
  CHECK(refusal(t.paths, g).find("pine's home") != std::string::npos);
  g.read = {"/"};
  CHECK(refusal(t.paths, g).find("contains") != std::string::npos);
  // An opened folder is refused the same way.
  AgentPaths p = t.paths;
  p.openedFolder = t.paths.userHome;
  CHECK(refusal(p, {}).find("opened folder") != std::string::npos);
}

TEST_CASE("legitimate grants pass, canonical, and inside the agent's own folders too") {
  Tree t;
  Grants g;
  g.read = {t.root + "/outside/", "${WORKSPACE}/sub"};
  g.write = {"${TMPDIR}/x"};
  Policy p = agentPolicy(t.paths, g, false);
  auto has = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  CHECK(has(p.readable, t.root + "/outside"));
  CHECK(has(p.readable, t.paths.workspace + "/sub"));
  CHECK(has(p.writable, t.paths.tmpdir + "/x"));
  CHECK(has(p.writable, t.paths.workspace));
  CHECK(has(p.writable, t.paths.privateHome));
  CHECK(has(p.readable, t.paths.docs));
  CHECK(has(p.readable, t.root + "/prog"));
  CHECK(has(p.denyWrite, t.root + "/prog"));
  CHECK(has(p.denyRead, t.paths.pineHome + "/.env"));
  CHECK(has(p.denyRead, t.paths.pineHome + "/agents/b"));
  CHECK(has(p.denyRead, "/etc/shadow"));
  CHECK(!has(p.writable, t.paths.pineHome));
  CHECK(p.network == Network::None);
  CHECK(refusal(t.paths, Grants{{"relative/path"}, {}, Network::None}).find("relative") != std::string::npos);
  CHECK(refusal(t.paths, Grants{{"${NOPE}/x"}, {}, Network::None}).find("${NOPE}") != std::string::npos);
}

TEST_CASE("a tainted policy guards .git and instruction files at any depth") {
  Tree t;
  std::string ws = t.paths.workspace;
  fs::create_directories(ws + "/repo/.git/hooks");
  std::ofstream(ws + "/repo/.git/HEAD") << "ref: refs/heads/main\n";
  std::ofstream(ws + "/repo/.git/config") << "";
  fs::create_directories(ws + "/repo/.git/modules/lib/hooks");
  std::ofstream(ws + "/repo/.git/modules/lib/HEAD") << "x\n";
  std::ofstream(ws + "/repo/.git/modules/lib/config") << "";
  fs::create_directories(ws + "/repo/deep/er/.git");
  fs::create_directories(ws + "/repo/deep/.pi");
  std::ofstream(ws + "/repo/deep/CLAUDE.md") << "";
  AgentPaths p = t.paths;
  p.userMd = t.paths.pineHome + "/USER.md";
  std::ofstream(p.userMd) << "";
  Policy clean = agentPolicy(p, {}, false);
  Policy tainted = agentPolicy(p, {}, true);
  auto has = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  CHECK(has(clean.writable, p.userMd));
  CHECK(!has(tainted.writable, p.userMd));
  CHECK(!has(clean.denyWrite, ws + "/repo/.git/hooks"));
  for (std::string d : std::vector<std::string>{ws + "/repo/.git/hooks", ws + "/repo/.git/config", ws + "/repo/.git/modules/lib/hooks",
                        ws + "/repo/.git/modules/lib/config", ws + "/repo/deep/er/.git/hooks",
                        ws + "/repo/deep/er/.git/config", ws + "/repo/deep/.pi", ws + "/repo/deep/CLAUDE.md",
                        ws + "/AGENTS.md", ws + "/SOUL.md", ws + "/MEMORY.md", ws + "/.agents"}) {
    CAPTURE(d);
    CHECK(has(tainted.denyWrite, d));
  }
  // The private home's settings: read-only when tainted, the clean session's own otherwise.
  CHECK(has(homeConfigNames(), ".gitconfig"));
  CHECK(has(homeConfigNames(), ".config/"));
  for (std::string n : homeConfigNames()) {
    if (n.back() == '/') n.pop_back();
    CAPTURE(n);
    CHECK(has(tainted.denyWrite, p.privateHome + "/" + n));
    CHECK(!has(clean.denyWrite, p.privateHome + "/" + n));
  }
  CHECK(has(tainted.writable, p.privateHome));
}

TEST_CASE("secrets files are denied wherever the agent can read them, in any letter case; look-alikes are not") {
  Tree t;
  std::string ws = t.paths.workspace, outside = t.root + "/outside";
  fs::create_directories(ws + "/app/config");
  fs::create_directories(ws + "/.env.d");
  fs::create_directories(outside + "/site/node_modules/pkg");
  fs::create_directories(t.paths.privateHome + "/proj");
  for (std::string f : std::vector<std::string>{ws + "/.env", ws + "/app/.ENV.local", ws + "/app/config/.Env.production",
                        ws + "/app/.e\u200Cnv", ws + "/.envrc", ws + "/app/env.example", ws + "/app/x.env",
                        outside + "/site/.env", outside + "/site/node_modules/pkg/.env.test", outside + "/site/.env-x",
                        t.paths.privateHome + "/proj/.env", t.paths.skills[0] + "/.env"})
    std::ofstream(f) << "K=v\n";
  fs::create_symlink(outside + "/site", ws + "/link-to-site");
  auto has = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  Grants g;
  g.read = {outside + "/site"};
  for (bool tainted : {false, true}) {
    CAPTURE(tainted);
    Policy pol = agentPolicy(t.paths, g, tainted);
    for (std::string d : std::vector<std::string>{ws + "/.env", ws + "/.env.d", ws + "/app/.ENV.local", ws + "/app/config/.Env.production",
                          ws + "/app/.e\u200Cnv", outside + "/site/.env", outside + "/site/node_modules/pkg/.env.test",
                          t.paths.privateHome + "/proj/.env", t.paths.skills[0] + "/.env"}) {
      CAPTURE(d);
      CHECK(has(pol.denyRead, d));
    }
    for (std::string open : std::vector<std::string>{ws + "/.envrc", ws + "/app/env.example", ws + "/app/x.env", outside + "/site/.env-x",
                             ws + "/link-to-site/.env"}) {
      CAPTURE(open);
      CHECK(!has(pol.denyRead, open));
    }
  }
  // Without the grant, the folder outside is not the agent's to read, so not scanned.
  Policy plain = agentPolicy(t.paths, {}, false);
  CHECK(!has(plain.denyRead, outside + "/site/.env"));
  // A tree too large to check is refused, not run unchecked.
  std::string deep = outside + "/deep";
  for (int i = 0; i < 70; ++i) deep += "/d";
  fs::create_directories(deep);
  Grants big;
  big.read = {outside + "/deep"};
  std::string why = refusal(t.paths, big);
  CHECK(why.find("too large or deep to check for secrets files") != std::string::npos);
}

TEST_CASE("the worker's environment is minimal") {
  Tree t;
  auto env = workerEnvironment(t.paths);
  REQUIRE(env.size() == 5);
  CHECK(env[2] == "HOME=" + t.paths.privateHome);
  CHECK(env[3] == "TMPDIR=" + t.paths.tmpdir);
  CHECK(parseNetwork("localhost") == Network::Localhost);
  CHECK_THROWS_AS(parseNetwork("internet"), PolicyError);
}
