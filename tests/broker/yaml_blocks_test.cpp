// appendToBlock: what the setup tools add to the owner's files leaves the rest as it was and
// parses as the entry added to the right block, whatever indentation the owner chose.
#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include "broker/yaml_blocks.h"

using pine::appendToBlock;

namespace {
std::string added(const std::string& text, const std::string& key, const std::string& entry) {
  std::string error;
  auto out = appendToBlock(text, key, entry, error);
  REQUIRE_MESSAGE(out.has_value(), error);
  return *out;
}
}  // namespace

TEST_CASE("appendToBlock: a list gains one entry at its end, the rest untouched") {
  const std::string text = "# my sources\nsources:\n  - {name: a, type: folder, path: /x}  # first\n\n"
                           "  # a comment inside\n  - {name: b, type: folder, path: /y}\nschedules: []\n";
  std::string out = added(text, "sources", "- {\"name\":\"c\",\"type\":\"folder\",\"path\":\"/z\"}");
  YAML::Node n = YAML::Load(out);
  REQUIRE(n["sources"].size() == 3);
  CHECK(n["sources"][2]["name"].as<std::string>() == "c");
  CHECK(n["schedules"].IsSequence());
  CHECK(out.find("# my sources\n") == 0);
  CHECK(out.find("# first") != std::string::npos);
  CHECK(out.find("# a comment inside") != std::string::npos);
}

TEST_CASE("appendToBlock: entries at column 0 and four-space maps keep their indentation") {
  std::string out = added("skills:\n- {name: a}\n- {name: b}\n", "skills", "- {\"name\":\"c\"}");
  CHECK(YAML::Load(out)["skills"].size() == 3);
  out = added("mode: auto\nmcpServers:\n    web:\n        bundled: web\ntools: [read]\n", "mcpServers",
              "wiki: {\"url\":\"https://mcp.example/wiki\",\"taints\":true}");
  YAML::Node n = YAML::Load(out);
  REQUIRE(n["mcpServers"].size() == 2);
  CHECK(n["mcpServers"]["web"]["bundled"].as<std::string>() == "web");
  CHECK(n["mcpServers"]["wiki"]["url"].as<std::string>() == "https://mcp.example/wiki");
  CHECK(n["tools"][0].as<std::string>() == "read");
}

TEST_CASE("appendToBlock: a missing block is created; an empty file or one without a final newline works") {
  YAML::Node n = YAML::Load(added("", "mcpServers", "wiki: {\"url\":\"https://x.example\"}"));
  CHECK(n["mcpServers"]["wiki"]["url"].as<std::string>() == "https://x.example");
  n = YAML::Load(added("mode: auto", "mcpServers", "wiki: {\"url\":\"https://x.example\"}"));
  CHECK(n["mode"].as<std::string>() == "auto");
  CHECK(n["mcpServers"]["wiki"].IsMap());
  n = YAML::Load(added("mcpServers:\n# nothing yet\nmode: auto\n", "mcpServers", "wiki: {\"url\":\"https://x.example\"}"));
  CHECK(n["mcpServers"]["wiki"].IsMap());
  CHECK(n["mode"].as<std::string>() == "auto");
}

TEST_CASE("appendToBlock: a block written on one line (flow style) is refused, not rewritten") {
  for (const char* text : {"sources: []\n", "mcpServers: {web: {bundled: web}}\n"}) {
    CAPTURE(text);
    std::string error;
    const std::string key = std::string(text).substr(0, std::string(text).find(':'));
    CHECK_FALSE(appendToBlock(text, key, "x: {}", error).has_value());
    CHECK(error.find("by hand") != std::string::npos);
  }
  // A comment after the key is not flow style.
  std::string error;
  CHECK(appendToBlock("sources:  # later\n", "sources", "- {\"name\":\"a\"}", error).has_value());
}
