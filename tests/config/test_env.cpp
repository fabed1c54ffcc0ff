// .env parsing: the accepted forms, line-numbered errors that never echo a value.
#include <doctest/doctest.h>

#include "config/env_file.h"
#include "helpers.h"

using namespace pine::config;

TEST_CASE(".env: KEY=VALUE, export, quotes, comments") {
  std::vector<ConfigError> errors;
  auto env = parseEnvText(
      "# a comment\n\nPLAIN=value\nexport EXPORTED=yes\nSPACED =  padded value   # note\n"
      "SINGLE='a \\n #not a comment' # but this is\nDOUBLE=\"line\\nnext \\\"q\\\" \\\\ $x\"\nHASH=a#b\nEMPTY=\n"
      "  INDENTED=1\nCRLF=v\r\n",
      ".env", &errors);
  CHECK_MESSAGE(errors.empty(), formatErrors(errors));
  CHECK(env.at("PLAIN") == "value");
  CHECK(env.at("EXPORTED") == "yes");
  CHECK(env.at("SPACED") == "padded value");
  CHECK(env.at("SINGLE") == "a \\n #not a comment");  // single quotes are literal
  CHECK(env.at("DOUBLE") == "line\nnext \"q\" \\ $x");
  CHECK(env.at("HASH") == "a#b");
  CHECK(env.at("EMPTY").empty());
  CHECK(env.at("INDENTED") == "1");
  CHECK(env.at("CRLF") == "v");
}

TEST_CASE(".env: malformed lines are errors with line numbers and no values") {
  std::vector<ConfigError> errors;
  auto env = parseEnvText("GOOD=1\nno equals sign here\nlower=secretvalue1\nQ=\"unterminated\nT='a' trailing\n"
                          "GOOD=2\n",
                          "/home/.env", &errors);
  REQUIRE(errors.size() == 5);
  CHECK(errors[0].format() == "/home/.env:2:1: expected NAME=VALUE (write the secret as NAME=value, one per line)");
  CHECK(errors[1].line == 3);
  CHECK(errors[1].message == "'lower' is not a secret name");
  CHECK(errors[2].line == 4);
  CHECK(errors[2].message == "unterminated quoted value");
  CHECK(errors[3].line == 5);
  CHECK(errors[3].message == "text after the closing quote");
  CHECK(errors[4].line == 6);
  CHECK(errors[4].message == "'GOOD' is set twice (first on line 1)");
  CHECK(env.at("GOOD") == "1");
  for (auto& e : errors) {
    CHECK(e.format().find("secretvalue1") == std::string::npos);
    CHECK(e.format().find("unterminated\"") == std::string::npos);
  }
}

TEST_CASE(".env: a missing file is empty; a home's .env errors stop the load") {
  pine::config::test::TempHome h;
  std::vector<ConfigError> errors;
  CHECK(parseEnvFile(h.path(".env"), &errors).empty());
  CHECK(errors.empty());
  h.write(".env", "OPENAI_KEY=x\nbad line\n");
  auto r = h.load();
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].file == h.path(".env"));
  CHECK(r.errors[0].line == 2);
  CHECK(envFileNames(h.path(".env"), nullptr) == std::set<std::string>{"OPENAI_KEY"});
}
