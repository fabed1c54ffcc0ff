// Small text helpers for reasons: quoting untrusted strings so that a reason
// never carries control characters or pages of text to the owner.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace pine::policy {

// 'text' in single quotes, non-printable bytes as \xNN, cut after `max` bytes with "...".
std::string quoteText(std::string_view text, size_t max = 80);
// "'a', 'b', 'c'" (at most `max` items, then ", ...").
std::string quoteList(const std::vector<std::string>& items, size_t max = 5);
bool startsWith(std::string_view s, std::string_view prefix);
bool endsWith(std::string_view s, std::string_view suffix);

}  // namespace pine::policy
