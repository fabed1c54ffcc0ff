// Chromium's DevTools pipe framing (browser/cdp_framing): messages split at NUL bytes however
// the reads cut them; a message over the limit is dropped whole and the next one still read.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "browser/cdp_framing.h"

using pine::browser::NulFramer;

TEST_CASE("framing: NUL-ended messages, whatever the reads' cuts") {
  const std::string stream = std::string("{\"id\":1}") + '\0' + "{\"id\":2,\"result\":{}}" + '\0' + '\0' + "{\"method\":\"x\"}" + '\0';
  for (size_t step = 1; step <= stream.size(); ++step) {
    NulFramer f(1024);
    std::vector<std::string> out;
    for (size_t at = 0; at < stream.size(); at += step) f.feed(std::string_view(stream).substr(at, step), out);
    CAPTURE(step);
    REQUIRE(out.size() == 4);
    CHECK(out[0] == "{\"id\":1}");
    CHECK(out[1] == "{\"id\":2,\"result\":{}}");
    CHECK(out[2].empty());
    CHECK(out[3] == "{\"method\":\"x\"}");
  }
}

TEST_CASE("framing: an unfinished message stays until its NUL") {
  NulFramer f(1024);
  std::vector<std::string> out;
  f.feed("{\"id\":", out);
  CHECK(out.empty());
  f.feed("3}", out);
  CHECK(out.empty());
  f.feed(std::string_view("\0", 1), out);
  REQUIRE(out.size() == 1);
  CHECK(out[0] == "{\"id\":3}");
}

TEST_CASE("framing: a message over the limit is dropped whole, the next one is read") {
  NulFramer f(16);
  std::vector<std::string> out;
  f.feed(std::string(10, 'a'), out);
  f.feed(std::string(10, 'b'), out);  // 20 bytes: over the limit, skipped from here on
  f.feed(std::string(1000, 'c') + '\0' + "ok" + '\0', out);
  REQUIRE(out.size() == 1);
  CHECK(out[0] == "ok");
  CHECK(f.dropped() == 1);
  // exactly the limit still passes (the twin)
  f.feed(std::string(16, 'd') + '\0', out);
  REQUIRE(out.size() == 2);
  CHECK(out[1] == std::string(16, 'd'));
}
