// The gate: every labelled command in corpus/ must get its expected answer.
// attacks.* must be refused (an allow is a bypass), legit.* must be allowed (a
// refusal is an over-block). The test prints both counts and every miss.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sandbox/guard/bash_guard.h"

namespace {

std::string corpusDir() {
  if (const char* src = std::getenv("PINE_SOURCE_DIR")) return std::string(src) + "/tests/guard/corpus";
  return GUARD_CORPUS_DIR;
}

// .txt: one command per line, "#" lines are notes. .jsonl: one JSON string per line.
std::vector<std::string> load(const std::string& name) {
  std::vector<std::string> out;
  std::string base = corpusDir() + "/" + name;
  std::ifstream txt(base + ".txt");
  REQUIRE_MESSAGE(txt.good(), "missing corpus file " << base << ".txt");
  std::string line;
  while (std::getline(txt, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    out.push_back(line);
  }
  std::ifstream jsonl(base + ".jsonl");
  while (std::getline(jsonl, line)) {
    if (line.empty()) continue;
    out.push_back(nlohmann::json::parse(line).get<std::string>());
  }
  return out;
}

}  // namespace

TEST_CASE("bash guard corpus gate: 0 bypasses and 0 over-blocks") {
  auto attacks = load("attacks");
  auto legit = load("legit");
  std::vector<std::string> bypasses, overBlocks;
  for (const auto& a : attacks)
    if (pine::guard::checkBashCommand(a).allowed) bypasses.push_back(a);
  for (const auto& l : legit) {
    auto v = pine::guard::checkBashCommand(l);
    if (!v.allowed) overBlocks.push_back(l + "    [" + v.reason + "]");
  }
  std::cout << "guard corpus: " << attacks.size() << " attacks, " << legit.size() << " legit; bypasses "
            << bypasses.size() << ", over-blocks " << overBlocks.size() << "\n";
  for (const auto& b : bypasses) std::cout << "  BYPASS: " << b << "\n";
  for (const auto& o : overBlocks) std::cout << "  OVER-BLOCK: " << o << "\n";
  CHECK(attacks.size() > 300);
  CHECK(legit.size() > 300);
  CHECK(bypasses.empty());
  CHECK(overBlocks.empty());
}
