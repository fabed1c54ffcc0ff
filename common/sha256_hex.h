// SHA-256 of a text as 64 lowercase hex digits (webhook repeats, pinned MCP tools).
#pragma once
#include <string>
#include <string_view>

namespace pine {

std::string sha256Hex(std::string_view text);

}  // namespace pine
