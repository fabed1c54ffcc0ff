#include "providers/http_errors.h"

#include <strings.h>

#include <algorithm>
#include <cctype>
#include <ctime>

#include "providers/stream_decoder.h"

namespace pine::model::detail {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// A whole non-negative number, or -1.
long long number(std::string_view s) {
  s = trim(s);
  if (s.empty() || s.size() > 12) return -1;
  long long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::string withMessage(std::string head, const std::string& message) {
  if (!message.empty()) head += ": " + message;
  return head;
}

}  // namespace

int retryAfterSeconds(const Headers& headers) {
  for (const auto& [name, value] : headers) {
    if (iequals(name, "retry-after-ms")) {
      long long ms = number(value);
      if (ms >= 0) return static_cast<int>(std::min<long long>((ms + 999) / 1000, 86400));
    }
  }
  for (const auto& [name, value] : headers) {
    if (!iequals(name, "retry-after")) continue;
    long long s = number(value);
    if (s >= 0) return static_cast<int>(std::min<long long>(s, 86400));
    // An HTTP date: "Wed, 21 Oct 2015 07:28:00 GMT".
    std::tm tm{};
    std::string v(trim(value));
    if (strptime(v.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm)) {
      long long diff = static_cast<long long>(timegm(&tm)) - static_cast<long long>(std::time(nullptr));
      return static_cast<int>(std::clamp<long long>(diff, 0, 86400));
    }
  }
  return -1;
}

std::string providerMessage(const nlohmann::json& j) {
  if (const auto* e = member(j, "error")) {
    if (e->is_string()) return cleanText(e->get<std::string>());
    std::string m = stringAt(*e, "message");
    if (!m.empty()) return cleanText(m);
  }
  for (const char* k : {"message", "detail"}) {
    std::string m = stringAt(j, k);
    if (!m.empty()) return cleanText(m);
  }
  return cleanText(j.dump());
}

std::string providerMessage(std::string_view body) {
  // Deep nesting is read as text: dumping it again would recurse once per level.
  if (nestsDeeperThan(body, EventStreamDecoder::kMaxDepth)) return cleanText(trim(body), 300);
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.is_object()) return providerMessage(j);
  return cleanText(trim(body), 300);
}

ProviderError statusError(const std::string& providerName, int status, const Headers& headers, std::string_view body) {
  const std::string msg = providerMessage(body);
  const int after = retryAfterSeconds(headers);
  const std::string code = "(" + std::to_string(status) + ")";
  std::string text;
  bool retryable = status == 408 || status == 409 || status == 429 || status >= 500;
  if (status == 429) {
    text = "rate limited by " + providerName + " " + code;
    if (after >= 0) text += ", retry after " + std::to_string(after) + " s";
  } else if (status == 401 || status == 403) {
    text = providerName + " refused the key " + code +
           "; check the provider's keySecret in models.yaml and its value (`pinectl secret set NAME`)";
  } else if (status == 404) {
    text = providerName + " does not know this address or model " + code +
           "; check the model's id and the provider's baseUrl in models.yaml";
  } else if (status == 413) {
    text = providerName + " refused the request as too large " + code + "; the conversation needs to be shorter";
  } else if (status == 529 || status == 503) {
    text = providerName + " is overloaded " + code;
    if (after >= 0) text += ", retry after " + std::to_string(after) + " s";
  } else if (status >= 500) {
    text = providerName + " failed " + code + "; trying again later may work";
  } else if (status >= 400) {
    text = providerName + " refused the request " + code;
  } else {
    text = "unexpected answer from " + providerName + " " + code;
  }
  return ProviderError(ProviderError::Kind::Status, withMessage(text, msg), status, status == 429, retryable, after);
}

ProviderError eventError(const std::string& providerName, int status, const std::string& message) {
  std::string text = providerName + " reported an error in its answer";
  if (status == 429) text = "rate limited by " + providerName + " (in the stream)";
  else if (status == 529) text = providerName + " is overloaded (in the stream)";
  bool retryable = status == 429 || status >= 500;
  return ProviderError(ProviderError::Kind::ErrorEvent, withMessage(text, message), status, status == 429, retryable, -1);
}

}  // namespace pine::model::detail
