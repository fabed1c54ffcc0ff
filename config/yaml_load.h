// The one way pine parses YAML (and JSON, which it reads as YAML). yaml-cpp 0.7 can
// loop forever on some inputs (LoadAll on "\0,"), lets an alias make a node that
// contains itself, and lets a few aliases stand for billions of nodes to whoever
// walks the tree. loadYaml refuses all of that before a node is built, with a
// position and a fix; config/README.md says why it cannot loop. Every YAML::Load
// in the tree goes through here.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace pine::config {

// Far above any real configuration file or reply script, far below what would
// take a noticeable time or memory to parse and walk.
struct YamlLimits {
  std::size_t maxBytes = 1u << 20;
  int maxDepth = 256;             // nested lists and maps, aliases expanded (yaml-cpp's own guard is 500)
  std::size_t maxNodes = 100000;  // keys, values and items as a walk sees them, aliases expanded
};

// What loadYaml refuses. A YAML::ParserException, so callers that report yaml-cpp's
// own errors by mark and msg report these the same way; msg is message and hint.
class YamlError : public YAML::ParserException {
 public:
  enum Kind {
    Syntax,     // malformed YAML, as yaml-cpp (or the document check) says
    Character,  // bytes the YAML 1.2 stream may not hold: invalid UTF-8, control characters, ...
    Limit,      // a YamlLimits bound
    Documents,  // more than one document
    Cycle,      // an alias inside the node it names
  };
  YamlError(Kind kind, int line, int column, std::string message, std::string hint);

  Kind kind;
  int line;    // 1-based; 0 when it concerns the whole text
  int column;  // 1-based, in characters
  std::string message;
  std::string hint;
};

// The single document in text: a null node when the text is empty or only
// comments. Throws YamlError (and std::bad_alloc, as anything may).
YAML::Node loadYaml(std::string_view text, const YamlLimits& limits = {});

}  // namespace pine::config
