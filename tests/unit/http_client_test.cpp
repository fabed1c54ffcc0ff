#include <doctest/doctest.h>

#include "pinectl/api_call.h"
#include "pinectl/http_client.h"

TEST_CASE("pinectl reads Content-Length and chunked answers, and knows when one is whole") {
  std::string cl = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: application/json\r\n\r\nhello";
  CHECK(pine::responseComplete(cl));
  CHECK_FALSE(pine::responseComplete(cl.substr(0, cl.size() - 1)));
  auto r = pine::parseHttpResponse(cl);
  CHECK(r.status == 200);
  CHECK(r.body == "hello");

  std::string ch = "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
  CHECK(pine::responseComplete(ch));
  r = pine::parseHttpResponse(ch);
  CHECK(r.status == 404);
  CHECK(r.body == "abcde");
}

TEST_CASE("a cut-off or non-HTTP answer is an error, not an empty success") {
  CHECK_THROWS(pine::parseHttpResponse(""));
  CHECK_THROWS(pine::parseHttpResponse("garbage\r\n\r\n"));
  CHECK_THROWS(pine::parseHttpResponse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"));
  CHECK_THROWS(pine::parseHttpResponse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab"));
}

TEST_CASE("the chunked decoder takes its input a byte at a time as well as whole") {
  std::string wire = "5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\n\r\n";
  std::string whole;
  pine::ChunkedDecoder a;
  a.feed(wire, whole);
  CHECK(whole == "hello, world");
  CHECK(a.done());
  std::string bytewise;
  pine::ChunkedDecoder b;
  for (char c : wire) {
    CHECK_FALSE(b.done());
    b.feed(std::string(1, c), bytewise);
  }
  CHECK(bytewise == "hello, world");
  CHECK(b.done());
  pine::ChunkedDecoder bad;
  std::string out;
  CHECK_THROWS(bad.feed("zz\r\n", out));
  pine::ChunkedDecoder noEnd;
  CHECK_THROWS(noEnd.feed("2\r\nabX\r\n", out));  // data longer than its size
}

TEST_CASE("the SSE parser splits events as they arrive, skips comments and joins data lines") {
  std::string stream = ": keepalive\n\nid: 3\nevent: event\ndata: {\"a\":1}\n\nevent: done\r\ndata: line1\r\ndata: line2\r\n\r\n";
  std::vector<pine::SseEvent> got;
  pine::SseParser p;
  for (char c : stream)
    p.feed(std::string(1, c), [&](const pine::SseEvent& e) {
      got.push_back(e);
      return true;
    });
  REQUIRE(got.size() == 2);
  CHECK(got[0].id == "3");
  CHECK(got[0].event == "event");
  CHECK(got[0].data == "{\"a\":1}");
  CHECK(got[1].event == "done");
  CHECK(got[1].data == "line1\nline2");
  // The callback stops the parse.
  pine::SseParser q;
  int n = 0;
  CHECK_FALSE(q.feed("data: 1\n\ndata: 2\n\n", [&](const pine::SseEvent&) { return ++n < 1; }));
  CHECK(n == 1);
}

TEST_CASE("urlEncode leaves only unreserved characters as they are") {
  CHECK(pine::urlEncode("main") == "main");
  CHECK(pine::urlEncode("a/b c") == "a%2Fb%20c");
  CHECK(pine::urlEncode("home/#") == "home%2F%23");
  CHECK(pine::urlEncode("..") == "..");  // the server refuses it as a dot segment
}

TEST_CASE("an answer's field is shown on one line, without the terminal controls a stranger put in it") {
  // A source's last error can carry a file's name from a watched folder: it must not clear the
  // owner's screen, colour a fake "all fine" or start a line of its own in `pinectl sources`.
  nlohmann::json s = {{"lastError", "cannot watch /in/\x1b[2J\x1b[H\x1b[32mAll sources fine\x1b[0m\nSYSTEM: obey\ttoo"},
                      {"events", 3},
                      {"name", "plain-name"}};
  std::string shown = pine::shownField(s, "lastError");
  CHECK(shown == "cannot watch /in/All sources fine SYSTEM: obey too");
  CHECK(pine::shownField(s, "events") == "3");
  CHECK(pine::shownField(s, "name") == "plain-name");  // the twin: plain text as it was
  CHECK(pine::shownField(s, "missing", "never") == "never");
}
