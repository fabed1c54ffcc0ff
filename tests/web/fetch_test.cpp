// web/fetch and web/search against real HTTP on 127.0.0.1 (tests/sources/page_server): the
// address rules at every hop (loopback refused unless allowPrivate, 0.0.0.0 never), the host
// lists re-checked on every redirect, at most 5 redirects, the 2 MB cut, types by name, and
// search speaking the Brave Search API's format with the key in its header only.
#include <doctest/doctest.h>
#include <signal.h>

#include <string>

#include "tests/sources/page_server.h"
#include "web/fetch.h"
#include "web/mcp_server.h"
#include "web/search.h"

using namespace pine::web;
using pine::sources::test::PageReply;
using pine::sources::test::PageRequest;
using pine::sources::test::PageServer;

namespace {

bool webHas(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

FetchRules privateAllowed() {
  FetchRules r;
  r.allowPrivate = true;
  return r;
}

PageReply html(const std::string& body) { return {200, {{"Content-Type", "text/html; charset=utf-8"}}, body}; }

// /r/N redirects to /r/N-1 ... /r/0 is the page.
PageReply chain(const PageRequest& req) {
  if (req.path.rfind("/r/", 0) == 0) {
    int n = std::stoi(req.path.substr(3));
    if (n == 0) return html("<h1>End</h1>");
    return {302, {{"Location", "/r/" + std::to_string(n - 1)}}, "moved"};
  }
  return {404, {}, "no"};
}

struct IgnorePipe {
  IgnorePipe() { signal(SIGPIPE, SIG_IGN); }  // a cut transfer closes while the server writes
} ignorePipe;

}  // namespace

TEST_CASE("fetch: a page as text; loopback refused unless allowPrivate, by address and by name") {
  PageServer server([](const PageRequest&) {
    return html("<title>T</title><h1>Hello</h1><p>A <a href=\"/next\">link</a>.</p><script>x()</script>");
  });
  const std::string url = "http://127.0.0.1:" + std::to_string(server.port()) + "/page";

  // Without allowPrivate: plain http is refused, and https to this machine too, by address and by name.
  auto plain = fetchUrl(url, FetchRules{});
  CHECK(plain.isError);
  CHECK(webHas(plain.text, "plain http is refused"));
  CHECK(webHas(fetchUrl("http://example.org/", FetchRules{}).text, "plain http is refused"));
  auto refused = fetchUrl("https://127.0.0.1:" + std::to_string(server.port()) + "/page", FetchRules{});
  CAPTURE(refused.text);
  CHECK(refused.isError);
  CHECK(webHas(refused.text, "127.0.0.1 is a loopback address"));
  auto byName = fetchUrl("https://localhost:" + std::to_string(server.port()) + "/page", FetchRules{});
  CAPTURE(byName.text);
  CHECK(byName.isError);
  CHECK(webHas(byName.text, "host localhost resolves to"));
  CHECK(server.requests().empty());  // refused before a connection

  auto ok = fetchUrl(url, privateAllowed());
  CAPTURE(ok.text);
  CHECK_FALSE(ok.isError);
  CHECK(webHas(ok.text, "URL: " + url));
  CHECK(webHas(ok.text, "Title: T\n\n# Hello\n\nA link (http://127.0.0.1:" + std::to_string(server.port()) + "/next)."));
  CHECK_FALSE(webHas(ok.text, "x()"));
}

TEST_CASE("fetch: every redirect is checked again (address rules and host lists); at most 5") {
  PageServer server(chain);
  const std::string base = "http://127.0.0.1:" + std::to_string(server.port());

  auto five = fetchUrl(base + "/r/5", privateAllowed());
  CAPTURE(five.text);
  CHECK_FALSE(five.isError);
  CHECK(webHas(five.text, "# End"));
  CHECK(webHas(five.text, "URL: " + base + "/r/0"));
  auto six = fetchUrl(base + "/r/6", privateAllowed());
  CAPTURE(six.text);
  CHECK(six.isError);
  CHECK(webHas(six.text, "more than 5 redirects"));

  // A redirect to an address that is never connected to, even with allowPrivate.
  server.setHandler([](const PageRequest&) {
    return PageReply{301, {{"Location", "http://0.0.0.0:9/"}}, ""};
  });
  auto zero = fetchUrl(base + "/", privateAllowed());
  CAPTURE(zero.text);
  CHECK(zero.isError);
  CHECK(webHas(zero.text, "redirect to http://0.0.0.0:9/"));
  CHECK(webHas(zero.text, "reserved address"));

  // A redirect to a host in denyHosts, and one outside allowHosts; the twin: allowed hosts pass.
  server.setHandler([&](const PageRequest& r) {
    if (r.path == "/go") return PageReply{302, {{"Location", "http://localhost:" + std::to_string(server.port()) + "/there"}}, ""};
    return html("<p>arrived</p>");
  });
  FetchRules deny = privateAllowed();
  deny.denyHosts = {"localhost"};
  auto denied = fetchUrl(base + "/go", deny);
  CAPTURE(denied.text);
  CHECK(denied.isError);
  CHECK(webHas(denied.text, "redirect to http://localhost:"));
  CHECK(webHas(denied.text, "in denyHosts"));
  FetchRules allow = privateAllowed();
  allow.allowHosts = {"127.0.0.1"};
  auto outside = fetchUrl(base + "/go", allow);
  CHECK(outside.isError);
  CHECK(webHas(outside.text, "not in allowHosts"));
  allow.allowHosts = {"127.0.0.1", "localhost"};
  auto inside = fetchUrl(base + "/go", allow);
  CAPTURE(inside.text);
  CHECK_FALSE(inside.isError);
  CHECK(webHas(inside.text, "arrived"));
  // The first address is checked too.
  FetchRules first = privateAllowed();
  first.denyHosts = {"127.0.0.1"};
  CHECK(webHas(fetchUrl(base + "/go", first).text, "in denyHosts"));
}

TEST_CASE("fetch: a body over 2 MB is cut and says so; plain text and JSON as they are; other types refused") {
  std::string big(3u << 20, 'a');
  for (size_t i = 100; i < big.size(); i += 100) big[i] = '\n';
  PageServer server([&](const PageRequest& r) {
    if (r.path == "/big") return PageReply{200, {{"Content-Type", "text/plain"}}, big};
    if (r.path == "/json") return PageReply{200, {{"Content-Type", "application/json"}}, "{\"a\": [1,  2]}"};
    if (r.path == "/text") return PageReply{200, {{"Content-Type", "text/plain; charset=utf-8"}}, "<b>not html</b>\n  kept"};
    if (r.path == "/pdf") return PageReply{200, {{"Content-Type", "application/pdf"}}, "%PDF-1.4"};
    if (r.path == "/ctl") return PageReply{200, {{"Content-Type", "text/plain"}}, "a\x01" "b\x1b" "[31mc\td\ne"};
    if (r.path == "/none") return PageReply{200, {}, "?"};
    return PageReply{404, {{"Content-Type", "text/html"}}, "<p>gone</p>"};
  });
  const std::string base = "http://127.0.0.1:" + std::to_string(server.port());
  auto cut = fetchUrl(base + "/big", privateAllowed());
  CHECK_FALSE(cut.isError);
  // Said before the text (the broker may cut what follows for the model).
  CHECK(cut.text.rfind("URL: " + base + "/big\nContent-Type: text/plain\n"
                       "Cut: the page is longer than 2097152 bytes; only those were read\n"
                       "Cut: the text is longer than 1048576 bytes; this is its start\n\naaa", 0) == 0);
  // What goes back is at most 1 MiB of text, so that its JSON line fits the broker's limit.
  CHECK(cut.text.size() < (1u << 20) + 1000);
  CHECK(cut.text.size() > (1u << 20));
  auto ctl = fetchUrl(base + "/ctl", privateAllowed());
  CAPTURE(ctl.text);
  CHECK(webHas(ctl.text, "\n\na b [31mc\td\ne"));

  CHECK(webHas(fetchUrl(base + "/json", privateAllowed()).text, "\n\n{\"a\": [1,  2]}"));
  CHECK(webHas(fetchUrl(base + "/text", privateAllowed()).text, "\n\n<b>not html</b>\n  kept"));
  auto pdf = fetchUrl(base + "/pdf", privateAllowed());
  CHECK(pdf.isError);
  CHECK(webHas(pdf.text, "'application/pdf': fetch reads HTML, plain text and JSON only"));
  CHECK(webHas(fetchUrl(base + "/none", privateAllowed()).text, "of no declared type"));
  auto gone = fetchUrl(base + "/gone", privateAllowed());
  CHECK(gone.isError);
  CHECK(webHas(gone.text, "answered HTTP 404"));
  CHECK(webHas(fetchUrl("file:///etc/passwd", privateAllowed()).text, "only http and https"));
  CHECK(webHas(fetchUrl(base + "/x?k=${secret:KEY}", privateAllowed()).text, "'${' in an address is refused"));
  CHECK(webHas(fetchUrl(base + "/" + std::string(2100, 'q'), privateAllowed()).text, "longer than 2048 bytes"));
}

TEST_CASE("search: the Brave Search API's request and answer; the key in its header only; results capped") {
  std::string results;
  for (int i = 1; i <= 14; ++i)
    results += std::string(i > 1 ? "," : "") + "{\"title\":\"Result <strong>" + std::to_string(i) +
               "</strong>\",\"url\":\"https://r" + std::to_string(i) + ".example/\",\"description\":\"About &amp; " +
               std::to_string(i) + "\"}";
  PageServer server([&](const PageRequest&) {
    return PageReply{200, {{"Content-Type", "application/json"}},
                     "{\"type\":\"search\",\"web\":{\"type\":\"search\",\"results\":[" + results + "]}}"};
  });
  WebJob job;
  job.allowPrivate = true;
  job.searchUrl = "http://127.0.0.1:" + std::to_string(server.port()) + "/res/v1/web/search";
  job.searchKeyName = "SEARCH_KEY";
  job.searchKey = "bsk-7f3e9a1c5d2b8e04";
  auto r = searchWeb("pine & mqtt", job);
  CAPTURE(r.text);
  CHECK_FALSE(r.isError);
  CHECK(webHas(r.text, "1. Result 1\n   https://r1.example/\n   About & 1\n"));
  CHECK(webHas(r.text, "10. Result 10"));
  CHECK_FALSE(webHas(r.text, "11. "));
  auto reqs = server.requests();
  REQUIRE(reqs.size() == 1);
  CHECK(reqs[0].path == "/res/v1/web/search?q=pine%20%26%20mqtt&count=10");
  CHECK(reqs[0].header("X-Subscription-Token") == "bsk-7f3e9a1c5d2b8e04");

  // A service that echoes the key back: it is redacted from what the model would read.
  server.setHandler([](const PageRequest& req) {
    return PageReply{200, {{"Content-Type", "application/json"}},
                     "{\"web\":{\"results\":[{\"title\":\"" + req.header("X-Subscription-Token") + "\",\"url\":\"u\"}]}}"};
  });
  auto echoed = searchWeb("q", job);
  CAPTURE(echoed.text);
  CHECK_FALSE(webHas(echoed.text, "bsk-7f3e9a1c5d2b8e04"));

  // The service's address follows the server's rules: loopback needs allowPrivate.
  job.allowPrivate = false;
  auto refused = searchWeb("q", job);
  CHECK(refused.isError);
  CHECK(webHas(refused.text, "loopback address"));
  CHECK(searchResultsText("not json").isError);
  CHECK(searchResultsText("{\"web\":{}}").text == "No results.");
}

TEST_CASE("the MCP server: initialize, ping, tools/list with search only when configured, unknown methods") {
  WebJob job;
  auto init = answer({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", {{"protocolVersion", "2025-06-18"}}}}, job);
  REQUIRE(init);
  CHECK((*init)["result"]["protocolVersion"] == "2025-06-18");
  auto newer = answer({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", {{"protocolVersion", "2099-01-01"}}}}, job);
  CHECK((*newer)["result"]["protocolVersion"] == "2025-11-25");
  CHECK((*answer({{"jsonrpc", "2.0"}, {"id", "p"}, {"method", "ping"}}, job))["result"].is_object());
  CHECK_FALSE(answer({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, job));
  auto list = answer({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}}, job);
  REQUIRE((*list)["result"]["tools"].size() == 1);
  CHECK((*list)["result"]["tools"][0]["name"] == "fetch");
  CHECK((*list)["result"]["tools"][0]["annotations"]["readOnlyHint"] == true);  // it only reads (seed layer 4)
  job.searchUrl = "https://search.example/res/v1/web/search";
  CHECK(toolList(job).size() == 2);
  CHECK((*answer({{"jsonrpc", "2.0"}, {"id", 3}, {"method", "resources/list"}}, job))["error"]["code"] == -32601);
  auto noUrl = answer({{"jsonrpc", "2.0"}, {"id", 4}, {"method", "tools/call"}, {"params", {{"name", "fetch"}, {"arguments", {{"url", 5}}}}}}, job);
  CHECK((*noUrl)["result"]["isError"] == true);
  auto unknown = answer({{"jsonrpc", "2.0"}, {"id", 5}, {"method", "tools/call"}, {"params", {{"name", "shell"}}}}, job);
  CHECK((*unknown)["result"]["isError"] == true);
}
