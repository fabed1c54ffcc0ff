// The bundled browser MCP server through the real pined, broker, pine-browser and a real
// Chromium (docs/mcp.md, "The bundled browser"): the relay* test worker calls mcp__browser__*
// as a model would against pages on 127.0.0.1 (tests/sources/page_server). One pine-browser
// (one Chromium start) serves several cases: open and read, click a link, back, type into a
// form the server then sees, a screenshot in the workspace, denyHosts, a redirect and a link
// into a refused host stopped at the proxy. Chromium's own sandbox is on inside ours (its
// renderers: seccomp filter mode 2, another user and pid namespace than pine-browser). A second
// server without allowPrivate is refused this machine. Nothing is left after pined stops.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "tests/integration/harness.h"
#include "tests/sources/page_server.h"

using namespace pine::test;
using namespace std::chrono_literals;
using pine::sources::test::PageReply;
using pine::sources::test::PageRequest;
using pine::sources::test::PageServer;

namespace {

PageReply site(const PageRequest& r, int port) {
  const std::string html = "text/html; charset=utf-8";
  const std::string p = std::to_string(port);
  if (r.path == "/page")
    return {200, {{"Content-Type", html}},
            "<title>Pine page</title><h1>Welcome</h1><p>Read <a href=\"/more\">more here</a>.</p>"
            "<p><a href=\"http://localhost:" + p + "/secret\">a denied host</a></p>"};
  if (r.path == "/more") return {200, {{"Content-Type", html}}, "<title>More</title><h1>Second page</h1><p>Cones.</p>"};
  if (r.path == "/form")
    return {200, {{"Content-Type", html}},
            "<title>Form</title><form action=\"/submit\" method=\"get\"><input id=\"q\" name=\"q\">"
            "<button id=\"go\" type=\"submit\">Search</button></form>"};
  if (r.path.rfind("/submit?", 0) == 0)
    return {200, {{"Content-Type", html}}, "<title>Done</title><p>You searched.</p>"};
  if (r.path == "/set") return {200, {{"Content-Type", html}, {"Set-Cookie", "pine=kept; Path=/"}}, "<title>Set</title>"};
  if (r.path == "/show") {
    const std::string cookie = r.header("Cookie");
    return {200, {{"Content-Type", html}}, "<title>Show</title><p>cookie: " + (cookie.empty() ? "none" : cookie) + "</p>"};
  }
  if (r.path == "/to-denied") return {302, {{"Location", "http://localhost:" + p + "/secret"}}, ""};
  return {404, {{"Content-Type", "text/plain"}}, "not here"};
}

std::string call(const std::string& tool, const std::string& args = "{}") {
  return "CALL mcp__browser__" + tool + " " + args + "\n";
}

std::string procLink(pid_t pid, const char* ns) {
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/ns/" + ns, ec).string();
}

struct IgnorePipe {
  IgnorePipe() { signal(SIGPIPE, SIG_IGN); }
} ignorePipe;

}  // namespace

TEST_CASE("browser: a real Chromium with its sandbox on, driven through pine-browser; the web rules hold at its proxy") {
  int port = 0;
  PageServer server([&port](const PageRequest& r) { return site(r, port); });
  port = server.port();
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  TempDir dir;
  std::string home = dir.path() + "/home";
  std::set<std::string> shmBefore;
  for (auto& e : std::filesystem::directory_iterator("/dev/shm")) shmBefore.insert(e.path().string());
  writeMinimalConfig(home, {"relay-open", "relay-strict", "relay-profile"});
  writeText(home + "/agents/relay-open/agent.yaml",
            "description: the browser on this machine\ntools: [read]\nmcpServers:\n  browser:\n    bundled: browser\n"
            "    allowPrivate: true\n    denyHosts: [localhost]\n");
  writeText(home + "/agents/relay-strict/agent.yaml",
            "description: the public web only\ntools: [read]\nmcpServers:\n  browser:\n    bundled: browser\n");
  writeText(home + "/agents/relay-profile/agent.yaml",
            "description: a kept profile\ntools: [read]\nmcpServers:\n  browser:\n    bundled: browser\n"
            "    allowPrivate: true\n    profile: shop\n");
  Pined pined(home, {"--worker-program", testBinDir() + "/fixtures/test-worker"}, {});

  auto t = message(pined, "relay-open",
                   call("open", "{\"url\": \"" + base + "/page\"}") + call("read") +
                       call("click", "{\"selector\": \"a\", \"text\": \"more here\"}") + call("read") + call("back") +
                       call("open", "{\"url\": \"" + base + "/form\"}") +
                       call("type", "{\"selector\": \"#q\", \"text\": \"pine cones\"}") +
                       call("click", "{\"selector\": \"#go\"}") + call("read") + call("screenshot") +
                       call("open", "{\"url\": \"http://localhost:" + std::to_string(port) + "/page\"}") +
                       call("open", "{\"url\": \"" + base + "/to-denied\"}") + call("open", "{\"url\": \"" + base + "/page\"}") +
                       call("click", "{\"selector\": \"a\", \"text\": \"a denied host\"}") +
                       call("click", "{\"selector\": \"#nothing\"}"));
  CAPTURE(t.dump());
  CAPTURE(tailOf(pined.stderrText(), 4000));
  CHECK(t["state"] == "done");
  const std::string a = t.value("answer", "");
  // open and read
  CHECK(contains(a, "mcp__browser__open: ok: <<<outside-content"));
  CHECK(contains(a, "Opened " + base + "/page (\"Pine page\")"));
  CHECK(contains(a, "# Welcome"));
  CHECK(contains(a, "more here (" + base + "/more)"));
  // click a link, read the next page, back
  CHECK(contains(a, "Clicked; the page is " + base + "/more (\"More\")"));
  CHECK(contains(a, "# Second page"));
  CHECK(contains(a, "Back at " + base + "/page (\"Pine page\")"));
  // type and submit: the server saw the value
  CHECK(contains(a, "Typed into '#q'"));
  CHECK(contains(a, "You searched."));
  bool sawValue = false;
  for (auto& r : server.requests()) sawValue = sawValue || r.path == "/submit?q=pine+cones";
  CHECK(sawValue);
  // the screenshot is a PNG in the workspace
  CHECK(contains(a, "Saved the visible page as screenshots/"));
  bool png = false;
  for (auto& e : std::filesystem::directory_iterator(home + "/agents/relay-open/workspace/screenshots")) {
    std::string bytes = readText(e.path().string());
    png = png || (bytes.size() > 100 && bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);
  }
  CHECK(png);
  // denyHosts, a redirect into it, a link into it: refused naming the rule; /secret never asked
  CHECK(contains(a, "mcp__browser__open: error: <<<outside-content"));
  CHECK(contains(a, "refused: the host localhost is in denyHosts"));
  // (Chromium's own background requests may be listed among the refusals too: see docs/mcp.md)
  CHECK(contains(a, "/to-denied: a redirect was refused\nRefused by the web rules:\n"));
  CHECK(contains(a, "\n- the host localhost is in denyHosts (localhost)\n"));
  CHECK(contains(a, "the click led to a page that could not be opened\nRefused by the web rules:\n"));
  CHECK(contains(a, "nothing to click: 0 element(s) match '#nothing'"));
  for (auto& r : server.requests()) CHECK(r.path != "/secret");
  CHECK(sessionTainted(pined, "relay-open", "main"));

  // Chromium's sandbox is on inside ours: its renderers are under a seccomp filter of their own
  // (mode 2) in another user and pid namespace than pine-browser, and never --no-sandbox.
  auto browsers = processesMentioning("pine-browser");
  REQUIRE(browsers.size() >= 1);
  std::set<pid_t> tree;
  int renderers = 0;
  for (pid_t b : browsers) {
    for (pid_t pid : descendants(b)) {
      tree.insert(pid);
      const std::string cmd = readText("/proc/" + std::to_string(pid) + "/cmdline");
      CHECK_FALSE(contains(cmd, "--no-sandbox"));
      if (!contains(cmd, "--type=renderer")) continue;
      ++renderers;
      const std::string status = readText("/proc/" + std::to_string(pid) + "/status");
      CAPTURE(status);
      CHECK(contains(status, "\nSeccomp:\t2\n"));
      CHECK_FALSE(contains(status, "\nUid:\t0\t"));
      CHECK(procLink(pid, "user") != procLink(b, "user"));
      CHECK(procLink(pid, "net") != procLink(b, "net"));
      CHECK(procLink(pid, "pid") != procLink(b, "pid"));
    }
  }
  CHECK(renderers >= 1);
  // The system's sockets (/run: D-Bus and the like) are hidden from pine-browser: every entry of
  // its /run is an empty, mode-000 stand-in, where this machine's are not.
  for (pid_t b : browsers) {
    size_t seen = 0;
    std::error_code ec;
    for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(b) + "/root/run", ec);
         !ec && it != std::filesystem::directory_iterator(); ++it) {
      struct stat st {};
      if (lstat(it->path().c_str(), &st) != 0 || S_ISLNK(st.st_mode)) continue;  // links: left to Landlock
      ++seen;
      CAPTURE(it->path().string());
      CHECK((st.st_mode & 0777) == 0);
      if (S_ISDIR(st.st_mode)) CHECK(std::filesystem::is_empty(it->path()));
      else CHECK(st.st_size == 0);
    }
    CHECK(seen > 0);
  }

  // Each conversation has a browser context of its own: a cookie set in one is not sent from
  // another, and is still there when the first conversation comes back.
  auto c1 = message(pined, "relay-open", call("open", "{\"url\": \"" + base + "/set\"}") +
                                             call("open", "{\"url\": \"" + base + "/show\"}") + call("read"),
                    true, "one");
  CAPTURE(c1.dump());
  CHECK(contains(c1.value("answer", ""), "cookie: pine=kept"));
  auto c2 = message(pined, "relay-open", call("read") + call("open", "{\"url\": \"" + base + "/show\"}") + call("read"),
                    true, "two");
  CAPTURE(c2.dump());
  CHECK(contains(c2.value("answer", ""), "URL: about:blank"));  // its own page, not the other's
  CHECK(contains(c2.value("answer", ""), "cookie: none"));
  auto c3 = message(pined, "relay-open", call("read"), true, "one");
  CAPTURE(c3.dump());
  CHECK(contains(c3.value("answer", ""), "URL: " + base + "/show"));
  CHECK(contains(c3.value("answer", ""), "cookie: pine=kept"));

  // Without allowPrivate this machine is refused, before Chromium asks for it.
  const size_t before = server.requests().size();
  auto s = message(pined, "relay-strict", call("open", "{\"url\": \"" + base + "/page\"}"));
  CAPTURE(s.dump());
  CHECK(contains(s.value("answer", ""), "refused: '127.0.0.1': 127.0.0.1 is a loopback address"));
  CHECK(server.requests().size() == before);

  // A named profile: Chromium keeps it in browser-profiles/<name>/ in pine's home, mode 700, not
  // in the workspace, and it is still there after the server stops.
  auto k = message(pined, "relay-profile", call("open", "{\"url\": \"" + base + "/more\"}"));
  CAPTURE(k.dump());
  CHECK(contains(k.value("answer", ""), "Opened " + base + "/more (\"More\")"));
  const std::string kept = home + "/browser-profiles/shop";
  struct stat st {};
  REQUIRE(stat(kept.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  CHECK(std::filesystem::exists(kept + "/Default"));
  CHECK_FALSE(std::filesystem::exists(home + "/agents/relay-profile/workspace/Default"));

  // pine-browser writes to pined's stderr: a sanitizer build's report from it would be here.
  CHECK_FALSE(contains(pined.stderrText(), "ERROR: AddressSanitizer"));
  CHECK_FALSE(contains(pined.stderrText(), "runtime error:"));

  // No orphans: once pined has stopped, pine-browser and every Chromium process are gone.
  std::set<pid_t> all(tree.begin(), tree.end());
  for (pid_t b : processesMentioning("pine-browser")) all.insert(b);
  pined.stop();
  // SIGKILL reaches a dozen processes; give the kernel a moment under load.
  for (int i = 0; i < 50 && std::any_of(all.begin(), all.end(), [](pid_t p) { return alive(p); }); ++i)
    std::this_thread::sleep_for(100ms);
  for (pid_t pid : all) {
    CAPTURE(pid);
    CHECK_FALSE(alive(pid));
  }
  // The named profile is kept. (pined's shutdown kills MCP servers outright: a fresh profile
  // and pine-browser's temp folder in /dev/shm are removed by the server's next start then.)
  CHECK(std::filesystem::exists(kept + "/Default"));
  // This home is not started again, so its servers' temp folders are removed here.
  for (auto& e : std::filesystem::directory_iterator("/dev/shm"))
    if (e.path().filename().string().rfind("pine-browser-", 0) == 0 && !shmBefore.count(e.path().string()))
      std::filesystem::remove_all(e.path());
}
