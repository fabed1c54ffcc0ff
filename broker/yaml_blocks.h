// Adding one entry to a block of a configuration file as text, so that what the owner wrote
// (comments, order, layout) stays as it was: the setup tools append to pine.yaml's lists
// (schedules, sources, skills) and to an agent.yaml's mcpServers. The entry is written in flow
// style (JSON is flow-style YAML), so no quoting can go wrong; pined validates the whole file
// before it is written.
#pragma once
#include <optional>
#include <string>

namespace pine {

// `text` with `entry` (one line, no indentation, e.g. `- {...}` or `name: {...}`) added at the
// end of the block under the top-level `key`, indented as the block's entries are (two spaces
// when the block is empty). The block is created at the end of the file when absent. nullopt and
// `error` when the block is written in flow style ([...] or {...}), which the owner has to edit
// by hand.
std::optional<std::string> appendToBlock(const std::string& text, const std::string& key, const std::string& entry,
                                         std::string& error);

}  // namespace pine
