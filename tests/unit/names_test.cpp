#include <doctest/doctest.h>

#include <string>

#include "common/names.h"

TEST_CASE("agent ids: only [a-z0-9_-], 1 to 64 bytes, no leading dash") {
  CHECK(pine::isValidAgentId("main"));
  CHECK(pine::isValidAgentId("house-2_b"));
  CHECK(pine::isValidAgentId(std::string(64, 'a')));
  CHECK_FALSE(pine::isValidAgentId(""));
  CHECK_FALSE(pine::isValidAgentId(std::string(65, 'a')));
  CHECK_FALSE(pine::isValidAgentId("-rf"));
  CHECK_FALSE(pine::isValidAgentId("../etc"));
  CHECK_FALSE(pine::isValidAgentId("a/b"));
  CHECK_FALSE(pine::isValidAgentId("Main"));
  CHECK_FALSE(pine::isValidAgentId("a b"));
  CHECK_FALSE(pine::isValidAgentId(std::string("a\0b", 3)));
}

TEST_CASE("task ids refuse path and option tricks") {
  CHECK(pine::isValidTaskId("t1796018719988-1-7e2cec"));
  CHECK(pine::isValidTaskId("A.b_c-9"));
  CHECK_FALSE(pine::isValidTaskId(""));
  CHECK_FALSE(pine::isValidTaskId(".."));
  CHECK_FALSE(pine::isValidTaskId("-x"));
  CHECK_FALSE(pine::isValidTaskId("a/b"));
  CHECK_FALSE(pine::isValidTaskId("a\nb"));
  CHECK_FALSE(pine::isValidTaskId(std::string(65, 'x')));
}
