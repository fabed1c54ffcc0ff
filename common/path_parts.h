// A '/'-separated path in its components. Callers decide what an empty, "." or ".."
// component means to them (the policy resolves, the jail and the configuration writer
// refuse), so nothing is dropped here unless asked.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace pine {

// "a//b/" -> {"a", "", "b", ""}; with dropEmpty, {"a", "b"}. "" -> {""} (or {}).
std::vector<std::string> splitPath(std::string_view path, bool dropEmpty = false);

}  // namespace pine
