// Event topics (layer 9): which are pine's own, which an agent may publish on,
// and how subscription and route patterns match them.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "config/model.h"

namespace pine::policy {

inline constexpr size_t kMaxTopicBytes = 256;

// pine's own topics: the words agent, approval, pine, state, timer, alone or as
// the first level ("agent/x" is reserved, "agentx/y" is not). Case-sensitive, as
// topics are.
bool isReservedTopic(std::string_view topic);

// MQTT matching by levels: '+' is exactly one level, '#' (only as the whole last
// level) the rest, including none ("a/#" matches "a"); '*' inside a level is any
// run of characters within that level. A malformed pattern ('#' not last, '+' or
// '#' beside other characters, empty) matches nothing.
bool topicMatches(std::string_view pattern, std::string_view topic);

// Why `topic` cannot be published, or nullopt: empty, longer than 256 bytes,
// control characters, not UTF-8, '+' or '#', an empty level.
std::optional<std::string> validateTopic(std::string_view topic);

// Why `agent` may not publish on `topic`, or nullopt: invalid, reserved, or
// not matched by a pattern of the agent's `publish` list.
std::optional<std::string> checkPublish(const config::AgentConfig& agent, std::string_view topic);

// The trust of an event an agent publishes: untrusted if the run is, or if its
// session has read outside content.
config::Trust publishTrust(config::Trust runTrust, bool sessionTainted);

}  // namespace pine::policy
