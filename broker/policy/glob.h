// '*'-only globs, matched in linear time (RE2), byte for byte.
#pragma once
#include <string_view>

namespace pine::policy {

// True when `text` as a whole matches `pattern`, where '*' stands for any run
// of bytes (also '/', also none) and every other byte for itself.
bool globMatch(std::string_view pattern, std::string_view text);

}  // namespace pine::policy
