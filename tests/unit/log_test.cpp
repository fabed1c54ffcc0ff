#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "common/log.h"

TEST_CASE("every audit line is one valid JSON object, whatever the fields hold, even from two processes") {
  char dir[] = "/tmp/pine-audit-XXXXXX";
  REQUIRE(mkdtemp(dir));
  std::string path = std::string(dir) + "/audit.jsonl";
  pine::setupLogging("test", "", false);
  pine::setupAudit(path);
  pid_t child = fork();
  REQUIRE(child >= 0);
  for (int i = 0; i < 300; ++i) {
    pine::audit("test.event", {{"i", i},
                               {"text", std::string("quote \" backslash \\ newline \n tab \t nul ") + '\0' + " end"},
                               {"bad_utf8", std::string("\xff\xfe ok")},
                               {"big", std::string(3000, 'x')}});
  }
  if (child == 0) _exit(0);
  int status;
  waitpid(child, &status, 0);
  std::ifstream in(path);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    REQUIRE_MESSAGE(!j.is_discarded(), "not JSON: " << line.substr(0, 200));
    CHECK(j["event"] == "test.event");
    CHECK(j.contains("ts"));
    CHECK(j["role"] == "test");
    ++lines;
  }
  CHECK(lines == 600);
  unlink(path.c_str());
  rmdir(dir);
}

TEST_CASE("isoTime prints UTC with milliseconds") {
  CHECK(pine::isoTime(0) == "1970-01-01T00:00:00.000Z");
  CHECK(pine::isoTime(1796018719988LL) == "2026-11-30T06:05:19.988Z");
}
