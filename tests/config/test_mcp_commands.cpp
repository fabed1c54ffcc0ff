// A `bundled: commands` MCP server: what agent.yaml may say (the program fixed, every
// placeholder declared and every argument used, a pattern that is RE2), and the rules a call's
// arguments meet before a command runs (config/command_tool.h, shared by the broker and pined).
#include <doctest/doctest.h>

#include "config/command_tool.h"
#include "helpers.h"

using namespace pine::config;
using pine::config::test::dump;
using pine::config::test::findError;
using pine::config::test::TempHome;

namespace {
McpCommand greet() {
  McpCommand c;
  c.name = "greet";
  c.words = {"echo", "hello {name}", "--from={place}", "{name}"};
  c.args["name"] = McpCommandArg{"who", {}, "[a-z]+( [a-z]+)?", 40};
  c.args["place"] = McpCommandArg{"where", {"home", "work"}, "", 256};
  return c;
}
}  // namespace

TEST_CASE("bundled commands: a good entry loads, with its schema for the model") {
  TempHome h;
  h.write("agents/main/agent.yaml",
          "mcpServers:\n  tools:\n    bundled: commands\n    commands:\n      disk:\n        description: free space\n"
          "        command: [df, -h, '{mount}']\n        readOnly: true\n        timeoutSec: 20\n"
          "        args:\n          mount: {description: a mount point, pattern: '/[a-z/]*'}\n");
  auto r = h.load();
  REQUIRE_MESSAGE(r.errors.empty(), dump(r.errors));
  const auto& s = r.home->agents.at("main").mcpServers.at("tools");
  CHECK_FALSE(s.taints);  // the owner's own commands; the owner may still say taints: true
  const auto& c = s.commands.at("disk");
  CHECK(c.readOnly);
  CHECK(c.timeoutSec == 20);
  auto schema = commandToolSchema(c);
  CHECK(schema["required"] == nlohmann::json::array({"mount"}));
  CHECK(schema["properties"]["mount"]["pattern"] == "/[a-z/]*");
  CHECK(schema["additionalProperties"] == false);
}

TEST_CASE("bundled commands: what agent.yaml may not say, each at its key") {
  TempHome h;
  h.write("agents/main/agent.yaml",
          "mcpServers:\n"
          "  a:\n    bundled: commands\n    commands:\n"
          "      prog: {description: x, command: ['{tool}', run], args: {tool: {description: t}}}\n"
          "      undeclared: {description: x, command: [ls, '{dir}']}\n"
          "      unused: {description: x, command: [ls], args: {dir: {description: d}}}\n"
          "      badre: {description: x, command: [ls, '{d}'], args: {d: {description: d, pattern: '[a-'}}}\n"
          "      both: {description: x, command: [ls, '{d}'], args: {d: {description: d, pattern: a, oneOf: [a]}}}\n"
          "      empty: {description: x, command: []}\n"
          "      nodesc: {command: [ls]}\n"
          "  b:\n    bundled: commands\n"
          "  c:\n    command: [srv]\n    commands: {x: {description: x, command: [ls]}}\n");
  auto r = h.load();
  std::string all = dump(r.errors);
  CAPTURE(all);
  CHECK(findError(r.errors, "mcpServers.a.commands.prog.command", "its first word takes no {tool}"));
  CHECK(findError(r.errors, "mcpServers.a.commands.undeclared.command", "{dir} names no argument"));
  CHECK(findError(r.errors, "mcpServers.a.commands.unused.args", "'dir' is not used"));
  CHECK(findError(r.errors, "mcpServers.a.commands.badre.args.d.pattern", "not a regular expression"));
  CHECK(findError(r.errors, "mcpServers.a.commands.both.args.d.pattern", "not both"));
  CHECK(findError(r.errors, "mcpServers.a.commands.empty.command", "must name a program"));
  CHECK(findError(r.errors, "mcpServers.a.commands.nodesc", "description"));
  CHECK(findError(r.errors, "mcpServers.b", "needs 'commands'"));
  CHECK(findError(r.errors, "mcpServers.c.commands", "applies to a 'bundled: commands' server only"));
}

TEST_CASE("bundled commands: placeholders are {name} of [a-z0-9_]; other braces are literal") {
  CHECK(placeholdersIn("a{b}c{d_1}") == std::vector<std::string>{"b", "d_1"});
  CHECK(placeholdersIn("{}").empty());
  CHECK(placeholdersIn("{A}").empty());
  CHECK(placeholdersIn("${x").empty());
  CHECK(placeholdersIn("{{x}}") == std::vector<std::string>{"x"});
}

TEST_CASE("bundled commands: arguments are filled in as words; what is not allowed is refused with why") {
  std::string why;
  auto words = commandToolWords(greet(), {{"name", "ann lee"}, {"place", "home"}}, why);
  REQUIRE_MESSAGE(words, why);
  CHECK(*words == std::vector<std::string>{"echo", "hello ann lee", "--from=home", "ann lee"});

  struct Case {
    nlohmann::json args;
    const char* why;
  };
  for (const Case& c : std::vector<Case>{
           {{{"name", "ann"}}, "\"place\" (a string) is required"},
           {{{"name", "ann"}, {"place", "home"}, {"extra", "x"}}, "takes no argument \"extra\""},
           {{{"name", "ann; rm -rf ~"}, {"place", "home"}}, "\"name\" must match"},
           {{{"name", "-rf"}, {"place", "home"}}, "\"name\" must match"},
           {{{"name", "ann"}, {"place", "mars"}}, "\"place\" is one of: home, work"},
           {{{"name", 3}, {"place", "home"}}, "\"name\" (a string) is required"},
           {{{"name", std::string(41, 'a')}, {"place", "home"}}, "at most 40 bytes"},
           {nlohmann::json::array(), "the arguments are an object"}}) {
    CAPTURE(c.args.dump());
    why.clear();
    CHECK_FALSE(commandToolWords(greet(), c.args, why));
    CHECK_MESSAGE(why.find(c.why) != std::string::npos, why);
  }
}

TEST_CASE("bundled commands: a free argument may not pass for an option, a line break or a NUL") {
  McpCommandArg free{"any text", {}, "", 100};
  CHECK_FALSE(commandArgProblem("q", free, "what is $(id); `id` | x > y"));  // words, never a shell
  CHECK(commandArgProblem("q", free, "-rf")->find("may not start with '-'") != std::string::npos);
  CHECK(commandArgProblem("q", free, "--output=/etc/x")->find("may not start with '-'") != std::string::npos);
  CHECK(commandArgProblem("q", free, "a\nb")->find("control character") != std::string::npos);
  CHECK(commandArgProblem("q", free, std::string("a\0b", 3))->find("NUL") != std::string::npos);
  CHECK(commandArgProblem("q", free, "")->find("empty") != std::string::npos);
  // The owner's pattern decides, also for a leading '-'; never a NUL.
  McpCommandArg flag{"a flag", {}, "-[a-z]", 4};
  CHECK_FALSE(commandArgProblem("f", flag, "-v"));
  CHECK(commandArgProblem("f", flag, "-vv"));
}
