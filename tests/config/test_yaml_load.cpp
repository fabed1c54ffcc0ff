// loadYaml, the one YAML entry point: inputs that hung or crashed yaml-cpp 0.7 or
// our walk of its tree (tests/fuzz/regressions/config/ holds each as a file), each
// bound with a case just inside it that still works, and the characters YAML 1.2
// does not allow in a stream. Each refusal says where, what and how to fix it.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>

#include "config/load.h"
#include "config/yaml_load.h"
#include "helpers.h"

using namespace pine::config;
using pine::config::test::dump;
using pine::config::test::TempHome;

namespace {

// The error loadYaml throws, or a YamlError of kind Syntax saying "(parsed)".
YamlError refusal(const std::string& text, const YamlLimits& limits = {}) {
  try {
    loadYaml(text, limits);
  } catch (const YamlError& e) {
    return e;
  }
  return YamlError(YamlError::Syntax, -1, -1, "(parsed)", "");
}

std::string nestedFlow(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

}  // namespace

// regressions/config/nul_comma_loadall_loops.yaml: yaml-cpp 0.7 reads "\0," as UTF-16
// and LoadAll restarts forever on the ',' with growing memory.
TEST_CASE("yaml: a NUL and a comma (00 2c) is refused with line, column, character and fix") {
  TempHome h;
  h.write("pine.yaml", std::string("\0,", 2));
  auto r = h.load();
  REQUIRE_MESSAGE(r.errors.size() == 1, dump(r.errors));
  const ConfigError& e = r.errors[0];
  CHECK(e.file == h.path("pine.yaml"));
  CHECK(e.line == 1);
  CHECK(e.column == 1);
  CHECK(e.message == "U+0000 (NUL, a control character) is not allowed in a YAML file");
  CHECK(e.hint.find("save it as UTF-8") != std::string::npos);
  // The same through the path the supervisor validates a proposed change by.
  auto change = validateChange(h.root, "pine.yaml", std::string("\0,", 2));
  REQUIRE_FALSE(change.ok());
  CHECK(change.errors[0].message == e.message);
  // And a NUL later in the file is placed where it is.
  auto later = validateFileText("pine.yaml", std::string("defaults:\n  model: de\0mo\n", 25));
  REQUIRE(later.size() == 1);
  CHECK(later[0].line == 2);
  CHECK(later[0].column == 12);
}

// regressions/config/lone_comma_loadall_loops.yaml, comma_after_map.yaml: the same loop
// without a NUL; yaml-cpp's Load would instead drop everything from the ',' on.
TEST_CASE("yaml: a ',' no document can hold is malformed YAML, at its position") {
  YamlError lone = refusal(",");
  CHECK(lone.kind == YamlError::Syntax);
  CHECK(lone.line == 1);
  CHECK(lone.column == 1);
  CHECK(lone.message == "unexpected ',': the document cannot continue here");
  CHECK(lone.hint.find("inside [ ] or { }") != std::string::npos);

  auto errors = validateFileText("pine.yaml", "defaults:\n  model: demo\n]\n");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].line == 3);
  CHECK(errors[0].column == 1);
  CHECK(errors[0].message.rfind("malformed YAML: ", 0) == 0);
  // Twins: commas where YAML has them.
  CHECK(validateFileText("pine.yaml", "limits: {queuePerAgent: 3, eventHops: 2}\n").empty());
  CHECK(validateFileText("agents/a/agent.yaml", "description: \"one, two\"\ntools: [read, grep]\n").empty());
}

TEST_CASE("yaml: control characters, C1 controls, stray BOMs and non-UTF-8 are refused, naming the character") {
  struct Case {
    std::string text, message;
    int line, column;
  };
  const Case cases[] = {
      {"a: \x1b[31m\n", "U+001B (ESC, a control character) is not allowed in a YAML file", 1, 4},
      {"a: 1\nb: x\x7f\n", "U+007F (DEL, a control character) is not allowed in a YAML file", 2, 5},
      {"a: \xC2\x9B" "1\n", "U+009B (a C1 control character) is not allowed in a YAML file", 1, 4},
      {"a: \xEF\xBF\xBF\n", "U+FFFF (a noncharacter) is not allowed in a YAML file", 1, 4},
      {"a: b\n\xEF\xBB\xBF" "c: d\n", "U+FEFF (a byte order mark) is allowed only at the very start of a YAML file", 2, 1},
      {"a: caf\xE9\n", "the byte 0xE9 is not UTF-8, and pine reads YAML files only as UTF-8", 1, 7},
      {"a: \xED\xA0\x80\n", "the byte 0xED is not UTF-8, and pine reads YAML files only as UTF-8", 1, 4},  // a surrogate
      {"a: \xC0\xAF\n", "the byte 0xC0 is not UTF-8, and pine reads YAML files only as UTF-8", 1, 4},  // overlong '/'
      {"\xFF\xFE" "a\0:\0", "the byte 0xFF is not UTF-8, and pine reads YAML files only as UTF-8", 1, 1},  // UTF-16LE
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    YamlError e = refusal(c.text);
    CHECK(e.kind == YamlError::Character);
    CHECK(e.message == c.message);
    CHECK(e.line == c.line);
    CHECK(e.column == c.column);
    CHECK_FALSE(e.hint.empty());
  }
  // An escape gives the value the character without putting it in the stream.
  CHECK(refusal("a: \x1b\n").hint == "remove it; if a value needs it, write it as an escape in double quotes (\"\\x1B\")");
  CHECK(loadYaml("a: \"\\e[31m\"\n")["a"].Scalar() == "\x1b[31m");
  // Twins the spec allows: TAB, CR LF, NEL, a BOM at the start, any printable Unicode.
  CHECK(loadYaml("a:\t1\r\nb: 2\r\n")["b"].Scalar() == "2");
  CHECK(loadYaml("a: x\xC2\x85y\n").IsMap());
  CHECK(loadYaml("\xEF\xBB\xBF" "a: 1\n")["a"].Scalar() == "1");
  CHECK(loadYaml("caf\xC3\xA9: \xE6\x97\xA5 \xF0\x9F\x98\x80\n")["caf\xC3\xA9"].Scalar() == "\xE6\x97\xA5 \xF0\x9F\x98\x80");
  TempHome h;
  h.write("pine.yaml", "\xEF\xBB\xBF" "defaults:\r\n  model: demo\r\n");
  CHECK_MESSAGE(h.load().ok(), dump(h.load().errors));
}

// regressions/config/alias_inside_its_anchor_cycle.yaml, alias_map_cycle_as_key.yaml:
// yaml-cpp builds a node that contains itself; walking it recursed until the stack ran out.
TEST_CASE("yaml: an alias inside the node its anchor names is refused, an alias after it works") {
  for (const char* text : {"a: &x [1, *x]\n", "&m {k: *m}\n", "&m {*m : v}\n", "a: &x\n  b: [*x]\n"}) {
    CAPTURE(text);
    YamlError e = refusal(text);
    CHECK(e.kind == YamlError::Cycle);
    CHECK(e.message == "this alias is inside the node its anchor names, which would contain itself");
  }
  CHECK(refusal("a: &x [1, *x]\n").column == 11);
  auto errors = validateFileText("pine.yaml", "defaults: &d\n  model: *d\n");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].line == 2);
  CHECK(errors[0].column == 10);
  // Twin: anchors repeated after they end, in a file that validates.
  CHECK(validateFileText("pine.yaml", "limits: {queuePerAgent: &n 3, eventHops: *n}\n").empty());
}

// regressions/config/billion_laughs.yaml: ten aliases of ten aliases ... stand for 10^10
// nodes to whoever walks the tree, which every reader of the file does.
TEST_CASE("yaml: aliases count as all they repeat; past the node bound the file is refused") {
  std::string laughs = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 10; ++i) {
    laughs += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) laughs += (k ? ", *a" : "*a") + std::to_string(i - 1);
    laughs += "]\n";
  }
  YamlError e = refusal(laughs);
  CHECK(e.kind == YamlError::Limit);
  CHECK(e.message ==
        "the file has more than 100000 values (keys, values and list items, an alias counting as all it repeats)");
  CHECK(e.line == 5);  // a4 is the first to pass 100000
  auto errors = validateFileText("pine.yaml", laughs);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].line == 5);

  // The bound exactly: a map of one key and a list of n scalars is n + 3 nodes.
  auto list = [](int n) {
    std::string s = "a: [";
    for (int i = 0; i < n; ++i) s += i ? ",x" : "x";
    return s + "]\n";
  };
  YamlLimits ten{.maxBytes = 1u << 20, .maxDepth = 64, .maxNodes = 10};
  CHECK(loadYaml(list(7), ten)["a"].size() == 7);
  CHECK(refusal(list(8), ten).kind == YamlError::Limit);
  // An alias counts its whole node: map, key a, list of 3 (4), key b, the alias (4) = 11.
  CHECK(refusal("a: &l [x, y, z]\nb: *l\n", ten).kind == YamlError::Limit);
  CHECK(loadYaml("a: &l [x, y]\nb: *l\n", ten)["b"].size() == 2);  // 1 + 1 + 3 + 1 + 3 = 9
}

// regressions/config/deep_flow_nesting.yaml, deep_block_nesting.yaml
TEST_CASE("yaml: nesting past the depth bound is refused, aliases expanded; just inside it works") {
  YamlLimits four{.maxBytes = 1u << 20, .maxDepth = 4, .maxNodes = 100000};
  CHECK(loadYaml(nestedFlow(4), four).IsSequence());
  YamlError e = refusal(nestedFlow(5), four);
  CHECK(e.kind == YamlError::Limit);
  CHECK(e.message == "lists and maps are nested deeper than 4 levels");
  CHECK(e.column == 5);
  // Two levels of anchored list used at depth three is five levels.
  CHECK(refusal("a: &x [[1]]\nb: [[*x]]\n", four).kind == YamlError::Limit);
  CHECK(loadYaml("a: &x [[1]]\nb: [*x]\n", four)["b"][0][0][0].Scalar() == "1");

  // Configuration files stop at 64, far before yaml-cpp's own recursion guard.
  auto deep = [](int levels) { return "defaults: " + nestedFlow(levels - 1) + "\n"; };
  auto errors = validateFileText("pine.yaml", deep(65));
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].message == "lists and maps are nested deeper than 64 levels");
  errors = validateFileText("pine.yaml", deep(64));
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].message.find("expected a map of keys") != std::string::npos);  // parsed, then judged
  CHECK(refusal(std::string(100000, '[')).message == "lists and maps are nested deeper than 256 levels");
  std::string block;
  for (int i = 0; i < 80; ++i) block += std::string(i, ' ') + "k:\n";
  errors = validateFileText("pine.yaml", block);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].message == "lists and maps are nested deeper than 64 levels");
  CHECK(errors[0].line == 65);  // the 65th map starts at its first key
}

TEST_CASE("yaml: one document a file; a second is an error and is never parsed") {
  for (const char* text : {"a: 1\n---\nb: 2\n", "a: 1\n...\nb: 2\n", "a: 1\n...\n# note\n\nb: 2\n", "---\n---\n"}) {
    CAPTURE(text);
    YamlError e = refusal(text);
    CHECK(e.kind == YamlError::Documents);
    CHECK(e.message == "more than one document in the file");
  }
  CHECK(refusal("a: 1\n---\nb: 2\n").line == 2);
  // Two thousand documents cost one: the second stops the parse.
  std::string many;
  for (int i = 0; i < 2000; ++i) many += "---\na: [1]\n";
  CHECK(refusal(many).kind == YamlError::Documents);
  // Twins: explicit markers around one document, and comments or nothing at all.
  CHECK(loadYaml("%YAML 1.2\n---\na: 1\n...\n")["a"].Scalar() == "1");
  CHECK(loadYaml("# only a comment\n").IsNull());
  CHECK(loadYaml("").IsNull());
  CHECK(validateFileText("pine.yaml", "# nothing yet\n").empty());
}

TEST_CASE("yaml: a file past the size bound is refused before it is parsed") {
  YamlError e = refusal(std::string((1u << 20) + 1, ' '));
  CHECK(e.kind == YamlError::Limit);
  CHECK(e.message == "the file is larger than 1 MiB");
  CHECK(e.line == 0);
  std::string big = "description: |\n";
  while (big.size() < (1u << 20) - 8) big += "  text\n";
  CHECK(loadYaml(big)["description"].Scalar().size() > 500000);
}

TEST_CASE("yaml: a YamlError is a yaml-cpp ParserException with the same position") {
  try {
    loadYaml("a: [1, 2\nb: 3\n");
    FAIL("parsed");
  } catch (const YAML::ParserException& e) {
    CHECK(e.mark.line == 1);
    CHECK(e.msg == "end of sequence flow not found");
  }
  try {
    loadYaml("a: \x01\n");
    FAIL("parsed");
  } catch (const YAML::ParserException& e) {
    CHECK(e.mark.line == 0);
    CHECK(e.mark.column == 3);
    CHECK(e.msg.rfind("U+0001 (SOH, a control character) is not allowed in a YAML file (remove it", 0) == 0);
  }
}

// Keys in one map were checked for duplicates against every earlier key.
TEST_CASE("yaml: a map of many keys is read once per key, duplicates still found") {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "k" + std::to_string(i) + ": 1\n";
  text += "k7: 2\n";
  auto errors = validateFileText("agents/a/agent.yaml", text);
  // The duplicate is found while the map is read, before the 20000 unknown keys, of
  // which the first 199 fill the error list up to its bound.
  REQUIRE(errors.size() == kMaxErrors + 1);
  CHECK(errors.back().message == "more than 200 errors; the rest are not shown");
  int dups = 0;
  for (const auto& e : errors)
    if (e.message.rfind("duplicate key", 0) == 0) {
      ++dups;
      CHECK(e.message == "duplicate key (first on line 8)");
      CHECK(e.line == 20001);
    }
  CHECK(dups == 1);
}

// Every YAML parse in the programs goes through loadYaml; a new YAML::Load elsewhere
// would bring back the loops above.
TEST_CASE("yaml: no YAML::Load, LoadAll or LoadFile outside config/yaml_load.cpp") {
  const std::filesystem::path root = PINE_SOURCE_ROOT;
  const std::regex call(R"(YAML::Load(All|File|AllFromFile)?\s*\()");
  int files = 0;
  for (const char* dir : {"config", "worker", "supervisor", "broker", "pinectl", "common", "sandbox", "proto"}) {
    if (!std::filesystem::is_directory(root / dir)) continue;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root / dir)) {
      const auto ext = entry.path().extension();
      if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".h")) continue;
      ++files;
      std::ifstream in(entry.path());
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      const auto rel = std::filesystem::relative(entry.path(), root).string();
      if (rel == "config/yaml_load.cpp") {
        CHECK(std::regex_search(text, call));  // the one place; proves the pattern finds calls
        continue;
      }
      CHECK_MESSAGE(!std::regex_search(text, call), rel << " calls yaml-cpp's loader; use pine::config::loadYaml");
    }
  }
  CHECK(files > 50);
}

// Thousands of long, nearly equal names and as many references to names that are not
// there: every error looked for its "did you mean" among all the names (minutes for
// one changeConfig). Now a load stops collecting at kMaxErrors, and a hint is only
// looked for when it is cheap.
TEST_CASE("validation: errors stop at their bound, and hints among too many names are not looked for") {
  TempHome h;
  const std::string pad(54, 'x');
  std::string pine = "defaults: {model: demo}\nwebhooks:\n";
  for (int i = 0; i < 2000; ++i) pine += "- {name: " + pad + std::to_string(10000 + i) + ", topic: a/b, open: true}\n";
  pine += "routes:\n";
  for (int i = 0; i < 2000; ++i) pine += "- {source: " + pad + std::to_string(10000 + i) + "q, agent: house}\n";
  auto r = validateChange(h.root, "pine.yaml", pine);
  REQUIRE(r.errors.size() == kMaxErrors + 1);
  CHECK(r.errors[0].message == "more than 200 errors; the rest are not shown");  // line 0 sorts first
  CHECK(r.errors[0].hint == "fix these and check again");
  CHECK(r.errors[1].message == "no source or webhook called '" + pad + "10000q'");
  // 2000 names of 59 letters: past kMaxHintCells, so no guess; only the first 20 names.
  CHECK(r.errors[1].hint.rfind("the sources and webhooks are: ", 0) == 0);
  CHECK(r.errors[1].hint.find("and 1980 more") != std::string::npos);

  // Twin: among a few names the hint is still there.
  auto few = validateChange(h.root, "pine.yaml",
                            "defaults: {model: demo}\nwebhooks:\n- {name: deploys, topic: a/b, open: true}\n"
                            "routes:\n- {source: deploy, agent: house}\n");
  REQUIRE(few.errors.size() == 1);
  CHECK(few.errors[0].hint == "did you mean 'deploys'? the sources and webhooks are: deploys");
  // The bound of the hint, exactly: the word's and each candidate's length plus one, multiplied, summed.
  std::vector<std::string> names(kMaxHintCells / (7 * 8), "abcxyzq");
  names.back() = "abcdeg";
  CHECK(nearest("abcdef", names) == "abcdeg");
  names.push_back("zzzzzzz");
  CHECK(nearest("abcdef", names).empty());
}
