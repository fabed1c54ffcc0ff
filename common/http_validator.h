// Whether an ETag or Last-Modified a server sent can be sent back to it (If-None-Match,
// If-Modified-Since): short, no control character, and no ${...} that egress would read as a
// secret's placeholder. The broker keeps only such values; pined re-checks each before a request.
#pragma once
#include <string_view>

namespace pine {

inline constexpr size_t kMaxHttpValidator = 1024;

inline bool sendableValidator(std::string_view v) {
  if (v.size() > kMaxHttpValidator || v.find("${") != std::string_view::npos) return false;
  for (unsigned char c : v)
    if (c < 0x20 || c == 0x7f) return false;
  return true;
}

}  // namespace pine
