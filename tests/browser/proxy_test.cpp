// pine-browser's proxy (browser/proxy): the request heads it reads, the web rules it applies
// before any connection (host lists, every resolved address, plain http), and the proxy itself
// on 127.0.0.1 against a real page server: a refused tunnel or request reaches no server, the
// allowed twin does, pinned to the checked address.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "browser/proxy.h"
#include "tests/sources/page_server.h"

using namespace pine::browser;
using pine::sources::test::PageReply;
using pine::sources::test::PageRequest;
using pine::sources::test::PageServer;

namespace {

struct IgnorePipe {
  IgnorePipe() { signal(SIGPIPE, SIG_IGN); }
} ignorePipe;

// Sends `request` to the proxy on `port`; returns all it answers until it closes.
std::string through(int port, const std::string& request) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size()));
  std::string out;
  char buf[4096];
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("proxy: request heads") {
  std::string why;
  auto c = parseProxyRequest("CONNECT Example.ORG.:8443 HTTP/1.1\r\nHost: example.org:8443\r\n\r\n", why);
  REQUIRE(c);
  CHECK(c->connect);
  CHECK(c->host == "example.org");
  CHECK(c->port == 8443);
  auto v6 = parseProxyRequest("CONNECT [::1]:443 HTTP/1.1\r\n\r\n", why);
  REQUIRE(v6);
  CHECK(v6->host == "::1");
  auto g = parseProxyRequest("GET http://a.example/x?y=1#frag HTTP/1.1\r\nHost: a.example\r\nProxy-Connection: keep-alive\r\n"
                             "Connection: keep-alive\r\nAccept: */*\r\n\r\n", why);
  REQUIRE(g);
  CHECK_FALSE(g->connect);
  CHECK(g->port == 80);
  CHECK(g->head == "GET /x?y=1 HTTP/1.1\r\nHost: a.example\r\nAccept: */*\r\nConnection: close\r\n\r\n");
  // refused heads
  CHECK_FALSE(parseProxyRequest("GET /relative HTTP/1.1\r\n\r\n", why));
  CHECK(has(why, "only http:// URLs and CONNECT"));
  CHECK_FALSE(parseProxyRequest("GET http://user:pw@a.example/ HTTP/1.1\r\n\r\n", why));
  CHECK(has(why, "a login in the URL"));
  CHECK_FALSE(parseProxyRequest("CONNECT a.example:99999 HTTP/1.1\r\n\r\n", why));
  CHECK_FALSE(parseProxyRequest("CONNECT a.example:1:2 HTTP/1.1\r\n\r\n", why));
  CHECK_FALSE(parseProxyRequest("garbage\r\n\r\n", why));
  // a header a server could split into two (request smuggling) is refused, not passed on
  CHECK_FALSE(parseProxyRequest("GET http://a.example/ HTTP/1.1\r\nX: 1\nHost: b.example\r\n\r\n", why));
  CHECK(has(why, "bare CR or LF"));
  CHECK_FALSE(parseProxyRequest("get http://a/ HTTP/1.1\r\n\r\n", why));
}

TEST_CASE("proxy: the web rules before any connection, each with its twin") {
  std::vector<sockaddr_storage> addrs;
  WebRules strict;
  auto loop = checkDestination("127.0.0.1", 443, false, strict, addrs);
  REQUIRE(loop);
  CHECK(has(*loop, "127.0.0.1 is a loopback address"));
  CHECK(has(*loop, "allowPrivate is not set"));
  CHECK(addrs.empty());
  auto byName = checkDestination("localhost", 443, false, strict, addrs);
  REQUIRE(byName);
  CHECK(has(*byName, "loopback"));
  CHECK(checkDestination("10.1.2.3", 443, false, strict, addrs));
  CHECK(checkDestination("169.254.169.254", 80, false, strict, addrs));
  WebRules open;
  open.allowPrivate = true;
  CHECK_FALSE(checkDestination("127.0.0.1", 443, false, open, addrs));
  REQUIRE(addrs.size() == 1);
  CHECK(ntohs(reinterpret_cast<sockaddr_in&>(addrs[0]).sin_port) == 443);
  CHECK_FALSE(checkDestination("127.0.0.1", 80, true, open, addrs));  // plain http: with allowPrivate
  // 0.0.0.0 is never a server, allowPrivate or not
  auto zero = checkDestination("0.0.0.0", 80, true, open, addrs);
  REQUIRE(zero);
  CHECK(has(*zero, "reserved"));
  // host lists
  WebRules lists = open;
  lists.denyHosts = {"localhost"};
  auto denied = checkDestination("localhost", 80, true, lists, addrs);
  REQUIRE(denied);
  CHECK(has(*denied, "the host localhost is in denyHosts"));
  CHECK_FALSE(checkDestination("127.0.0.1", 80, true, lists, addrs));
  lists.allowHosts = {"*.example.org"};
  auto notAllowed = checkDestination("127.0.0.1", 80, true, lists, addrs);
  REQUIRE(notAllowed);
  CHECK(has(*notAllowed, "allowHosts"));
}

TEST_CASE("proxy: plain http without allowPrivate is refused even to a public address") {
  std::vector<sockaddr_storage> addrs;
  WebRules strict;
  strict.allowHosts = {"93.184.215.14"};
  auto plain = checkDestination("93.184.215.14", 80, true, strict, addrs);
  REQUIRE(plain);
  CHECK(has(*plain, "plain http is refused"));
  CHECK_FALSE(checkDestination("93.184.215.14", 443, false, strict, addrs));  // the twin: a tunnel (https)
}

TEST_CASE("proxy: on 127.0.0.1 against a real server: refused reaches nothing, the twin goes through") {
  PageServer server([](const PageRequest&) { return PageReply{200, {{"Content-Type", "text/plain"}}, "hello from the server"}; });
  const std::string target = "127.0.0.1:" + std::to_string(server.port());

  Proxy strict(WebRules{});
  const int strictPort = strict.start();
  const size_t mark = strict.mark();
  std::string refused = through(strictPort, "GET http://" + target + "/x HTTP/1.1\r\nHost: " + target + "\r\n\r\n");
  CHECK(has(refused, "HTTP/1.1 403"));
  CHECK(has(refused, "127.0.0.1 is a loopback address"));
  std::string tunnel = through(strictPort, "CONNECT " + target + " HTTP/1.1\r\n\r\n");
  CHECK(has(tunnel, "HTTP/1.1 403"));
  CHECK(server.requests().empty());
  CHECK(strict.refusalsSince(mark).size() == 2);
  CHECK(strict.refusalsSince(strict.mark()).empty());

  Proxy open(WebRules{{}, {}, true});
  const int openPort = open.start();
  std::string got = through(openPort, "GET http://" + target + "/x HTTP/1.1\r\nHost: " + target + "\r\nProxy-Connection: keep-alive\r\n\r\n");
  CHECK(has(got, "HTTP/1.1 200"));
  CHECK(has(got, "hello from the server"));
  REQUIRE(server.requests().size() == 1);
  CHECK(server.requests()[0].path == "/x");
  CHECK(server.requests()[0].header("Proxy-Connection").empty());
  std::string viaTunnel = through(openPort, "CONNECT " + target + " HTTP/1.1\r\n\r\nGET /t HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  CHECK(has(viaTunnel, "HTTP/1.1 200 Connection established"));
  CHECK(has(viaTunnel, "hello from the server"));
  CHECK(server.requests().size() == 2);
}
