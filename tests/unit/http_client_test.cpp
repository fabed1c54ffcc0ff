#include <doctest/doctest.h>

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
