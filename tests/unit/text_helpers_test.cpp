// common/'s text helpers, shared across boundaries: the sandbox's name rules, the broker's
// policy and pined read globs, paths and URL origins through these one copies.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "common/glob.h"
#include "common/path_parts.h"
#include "common/url_origin.h"

using pine::globMatch;
using pine::splitPath;
using pine::urlOrigin;

TEST_CASE("globs: '*' is any run of bytes, newlines included; the rest stands for itself") {
  CHECK(globMatch("bash", "bash"));
  CHECK_FALSE(globMatch("bash", "bash2"));
  CHECK(globMatch("*", ""));
  CHECK(globMatch("*", "anything\nat all"));
  CHECK(globMatch("mcp__*__read*", "mcp__files__read_file"));
  CHECK_FALSE(globMatch("mcp__*__read*", "mcp__files__write_file"));
  CHECK(globMatch("git push *", "git push origin main"));
  CHECK(globMatch("a*b*c", "a\nxxb\nyyc"));
  CHECK_FALSE(globMatch("a*b*c", "a\nxxb\nyy"));
  CHECK(globMatch(".env.*", ".env.local"));
  CHECK_FALSE(globMatch(".env.*", ".envrc"));
  // '?', '[' and '\' are plain bytes: no classes, no escapes.
  CHECK(globMatch("a?[b]\\", "a?[b]\\"));
  CHECK_FALSE(globMatch("a?", "ab"));
  // No pattern is exponential: many stars against a long text that almost matches.
  std::string text(20000, 'a');
  CHECK_FALSE(globMatch("*a*a*a*a*a*a*a*a*a*a*b", text));
}

TEST_CASE("paths: components, with empty ones kept unless asked") {
  CHECK(splitPath("a//b/") == std::vector<std::string>{"a", "", "b", ""});
  CHECK(splitPath("a//b/", true) == std::vector<std::string>{"a", "b"});
  CHECK(splitPath("/etc/./x/..", true) == std::vector<std::string>{"etc", ".", "x", ".."});
  CHECK(splitPath("") == std::vector<std::string>{""});
  CHECK(splitPath("", true).empty());
}

TEST_CASE("URL origins: one reading for the broker and pined; look-alikes never compare equal") {
  CHECK(urlOrigin("https://API.example.com/v1/chat") == "https://api.example.com:443");
  CHECK(urlOrigin("http://127.0.0.1:8080/x?y#z") == "http://127.0.0.1:8080");
  CHECK(urlOrigin("https://example.com.:443") == "https://example.com:443");
  CHECK(urlOrigin("https://[::1]:8443/") == "https://[::1]:8443");
  CHECK(urlOrigin("HTTPS://example.com") == urlOrigin("https://example.com:443/"));
  for (const char* refused : {"https://user:pw@example.com/", "https://evil.com\\@example.com/", "ftp://example.com/",
                              "example.com/x", "https://:443/", "https://example.com:99999/", "https://example.com:x/",
                              "https://exa mple.com/", "https://[::1/"}) {
    CAPTURE(refused);
    CHECK_FALSE(urlOrigin(refused).has_value());
  }
  CHECK(urlOrigin("https://example.com/") != urlOrigin("https://example.com.evil.net/"));
  CHECK(urlOrigin("https://example.com/") != urlOrigin("http://example.com/"));
}
