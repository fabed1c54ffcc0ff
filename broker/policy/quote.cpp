#include "broker/policy/quote.h"

namespace pine::policy {

std::string quoteText(std::string_view text, size_t max) {
  static const char* hex = "0123456789abcdef";
  std::string out = "'";
  size_t n = text.size() < max ? text.size() : max;
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > max) out += "...";
  return out + "'";
}

std::string quoteList(const std::vector<std::string>& items, size_t max) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < max; ++i) out += (i ? ", " : "") + quoteText(items[i]);
  if (items.size() > max) out += ", ...";
  return out;
}

bool startsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace pine::policy
