// Chromium's command line (browser/chromium): its own sandbox is never switched off, the
// profile is the fresh folder, every connection goes through the proxy (loopback too), Chromium
// resolves no name itself, and no QUIC or WebRTC UDP goes around the proxy.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "browser/chromium.h"

using pine::browser::chromiumArgs;

TEST_CASE("chromium: the command line keeps its sandbox and routes everything through the proxy") {
  auto args = chromiumArgs("/usr/lib/chromium/chromium", "/data/fresh-abc", 4321);
  auto has = [&](const std::string& a) { return std::find(args.begin(), args.end(), a) != args.end(); };
  CHECK(args[0] == "/usr/lib/chromium/chromium");
  for (auto& a : args) {
    CHECK(a != "--no-sandbox");
    CHECK(a.rfind("--disable-setuid-sandbox", 0) != 0);
    CHECK(a.rfind("--no-zygote", 0) != 0);
    CHECK(a.rfind("--disable-seccomp", 0) != 0);
    CHECK(a.rfind("--remote-debugging-port", 0) != 0);  // the pipe only: no port another process could reach
  }
  CHECK(has("--headless=new"));
  CHECK(has("--remote-debugging-pipe"));
  CHECK(has("--user-data-dir=/data/fresh-abc"));
  CHECK(has("--proxy-server=http://127.0.0.1:4321"));
  CHECK(has("--proxy-bypass-list=<-loopback>"));
  CHECK(has("--disable-quic"));
  CHECK(has("--force-webrtc-ip-handling-policy=disable_non_proxied_udp"));
  CHECK(has("--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"));
  CHECK(has("--no-first-run"));
  CHECK(has("--disable-sync"));
  CHECK(has("--disable-extensions"));
}
