// pined's side of a remote MCP server: the headers' ${secret:NAME} placeholders filled in from
// .env (supervisor/mcp_remote_start), refused when a secret is missing or would break the header.
#include <doctest/doctest.h>

#include "supervisor/mcp_remote_start.h"

namespace {

std::optional<std::string> fromEnv(const std::string& name) {
  if (name == "TOKEN") return std::string("tok-1234567890");
  if (name == "BROKEN") return std::string("abc\r\nX-Injected: yes");
  return std::nullopt;
}

}  // namespace

TEST_CASE("mcp-remote headers: secrets filled in; a missing one or a line break is refused without the value") {
  std::string why;
  std::vector<std::string> used;
  auto ok = pine::mcpRemoteHeaders({{"Authorization", "Bearer ${secret:TOKEN}"}, {"X-Plain", "as is"}}, fromEnv, why, &used);
  REQUIRE(ok);
  CHECK(used == std::vector<std::string>{"tok-1234567890"});  // what the connector redacts
  CHECK(ok->at("Authorization") == "Bearer tok-1234567890");
  CHECK(ok->at("X-Plain") == "as is");

  auto missing = pine::mcpRemoteHeaders({{"Authorization", "Bearer ${secret:NOPE}"}}, fromEnv, why);
  CHECK_FALSE(missing);
  CHECK(why == "header Authorization names the secret NOPE, which is not in .env (pinectl secret set NOPE)");

  auto broken = pine::mcpRemoteHeaders({{"X-Key", "${secret:BROKEN}"}}, fromEnv, why);
  CHECK_FALSE(broken);
  CHECK(why == "header X-Key would hold a line break or a NUL byte");
  CHECK(why.find("Injected") == std::string::npos);
}
