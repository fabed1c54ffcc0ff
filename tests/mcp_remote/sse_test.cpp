// mcp_remote/sse: the event-stream parser a remote MCP server's bytes go through.
#include <doctest/doctest.h>

#include "mcp_remote/sse.h"

using pine::mcp_remote::SseEvent;
using pine::mcp_remote::SseParser;

namespace {

std::vector<SseEvent> parseAll(const std::string& bytes, size_t step = 0, size_t maxLine = 1000, size_t maxData = 1000) {
  SseParser p(maxLine, maxData);
  std::vector<SseEvent> out;
  if (step == 0) {
    CHECK(p.feed(bytes, out));
  } else {
    for (size_t at = 0; at < bytes.size(); at += step) CHECK(p.feed(std::string_view(bytes).substr(at, step), out));
  }
  return out;
}

}  // namespace

TEST_CASE("sse: events, data lines joined, comments skipped, the event type and id") {
  auto e = parseAll(": hello\n\nevent: endpoint\ndata: /messages\n\ndata: {\"a\":\ndata:1}\nid: 9\n\n");
  REQUIRE(e.size() == 2);
  CHECK(e[0].type == "endpoint");
  CHECK(e[0].data == "/messages");
  CHECK(e[1].type == "message");
  CHECK(e[1].data == "{\"a\":\n1}");
  CHECK(e[1].id == "9");
}

TEST_CASE("sse: CR, LF and CRLF end lines, also when split between reads, byte by byte") {
  std::string s = "\xEF\xBB\xBF" "data: one\r\n\r\ndata: two\r\rdata: three\n\n";
  for (size_t step : {size_t(0), size_t(1), size_t(2), size_t(3)}) {
    CAPTURE(step);
    auto e = parseAll(s, step);
    REQUIRE(e.size() == 3);
    CHECK(e[0].data == "one");
    CHECK(e[1].data == "two");
    CHECK(e[2].data == "three");
  }
}

TEST_CASE("sse: an event without data is not dispatched; an unfinished event is not either") {
  auto e = parseAll("event: x\n\nretry: 10\nfoo: bar\n\ndata: last");
  CHECK(e.empty());
  auto f = parseAll("data\n\n");  // a field with no colon: empty data, dispatched
  REQUIRE(f.size() == 1);
  CHECK(f[0].data.empty());
}

TEST_CASE("sse: a line or an event's data over its cap stops the parser; under it, it parses") {
  SseParser p(16, 32);
  std::vector<SseEvent> out;
  CHECK(p.feed("data: 0123456789\n\n", out));  // a 16-byte line: the cap itself
  CHECK(out.size() == 1);
  CHECK_FALSE(p.feed("data: 0123456789a\n", out));
  CHECK(p.error().find("line") != std::string::npos);
  CHECK_FALSE(p.feed("data: x\n\n", out));  // stays stopped
  SseParser q(100, 20);
  out.clear();
  CHECK(q.feed("data: 0123456789\n", out));
  CHECK_FALSE(q.feed("data: 0123456789\n", out));
  CHECK(q.error().find("data") != std::string::npos);
  CHECK(out.empty());
}
