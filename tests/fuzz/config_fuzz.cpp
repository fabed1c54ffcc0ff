// Configuration text through the parser and the schema, as pined reads pine.yaml,
// models.yaml and agent.yaml (validateFileText: the same parse and readers that
// changeConfig's validateChange uses, from memory). Properties: loadYaml throws only
// YamlError and returns a tree within its bounds however a walk counts it (aliases
// expanded); validation returns its errors and throws nothing; every error names the
// file and a position inside the text. Hangs and memory are libFuzzer's to catch
// (-timeout, -rss_limit_mb).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/load.h"
#include "config/yaml_load.h"
#include "fuzz_check.h"

namespace {

struct WalkCount {
  std::size_t nodes = 0;
  int depth = 0;
};

// Counts like a validation walk does: every key, value and item, aliases as often as
// they are used. Stops once past the bound, so a broken bound fails instead of hanging.
void configFuzzWalk(const YAML::Node& n, int depth, WalkCount& w, const pine::config::YamlLimits& limits) {
  if (++w.nodes > limits.maxNodes || depth > limits.maxDepth + 1) return;
  w.depth = std::max(w.depth, depth);
  if (n.IsMap()) {
    for (auto it = n.begin(); it != n.end() && w.nodes <= limits.maxNodes; ++it) {
      configFuzzWalk(it->first, depth + 1, w, limits);
      configFuzzWalk(it->second, depth + 1, w, limits);
    }
  } else if (n.IsSequence()) {
    for (auto it = n.begin(); it != n.end() && w.nodes <= limits.maxNodes; ++it) configFuzzWalk(*it, depth + 1, w, limits);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const int lines = 1 + static_cast<int>(std::count(text.begin(), text.end(), '\n'));

  const pine::config::YamlLimits limits;
  try {
    YAML::Node root = pine::config::loadYaml(text, limits);
    WalkCount w;
    configFuzzWalk(root, 0, w, limits);
    FUZZ_CHECK(w.nodes <= limits.maxNodes, "a tree loadYaml accepted has more nodes than its bound");
    // Depth counts containers: a scalar inside maxDepth lists sits at maxDepth.
    FUZZ_CHECK(w.depth <= limits.maxDepth, "a tree loadYaml accepted is deeper than its bound");
  } catch (const pine::config::YamlError& e) {
    FUZZ_CHECK(!e.message.empty(), "a YamlError without a message");
    FUZZ_CHECK(e.line >= 0 && e.line <= lines && e.column >= 0, "a YamlError outside the text");
  } catch (...) {
    FUZZ_CHECK(false, "loadYaml threw something other than YamlError");
  }

  for (const char* file : {"pine.yaml", "models.yaml", "agents/fuzz/agent.yaml"}) {
    try {
      for (const auto& e : pine::config::validateFileText(file, text)) {
        FUZZ_CHECK(e.file == file, "an error names another file");
        FUZZ_CHECK(!e.message.empty(), "an error without a message");
        FUZZ_CHECK(e.line >= 0 && e.line <= lines && e.column >= 0, "an error outside the text");
      }
    } catch (...) {
      FUZZ_CHECK(false, "validateFileText threw");
    }
  }
  return 0;
}
