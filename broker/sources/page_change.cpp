#include "broker/sources/page_change.h"

#include <strings.h>

#include <nlohmann/json.hpp>

#include "common/http_validator.h"
#include "common/sha256_hex.h"

namespace pine::sources {
namespace {

// At most `cap` bytes, not ending inside a UTF-8 sequence.
std::string cutText(const std::string& text, size_t cap) {
  if (text.size() <= cap) return text;
  size_t end = cap;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xc0) == 0x80) --end;
  return text.substr(0, end);
}

bool isRedirect(int status) { return status == 301 || status == 302 || status == 303 || status == 307 || status == 308; }

}  // namespace

PageMemory PageMemory::from(const std::map<std::string, std::string>& rows, const std::string& configuredUrl) {
  PageMemory m;
  m.url = configuredUrl;
  auto get = [&](const char* k) {
    auto it = rows.find(k);
    return it == rows.end() ? std::string() : it->second;
  };
  if (get("url") != configuredUrl) return m;
  m.etag = get("etag");
  m.lastModified = get("lastModified");
  m.sha256 = get("sha256");
  return m;
}

std::map<std::string, std::string> PageMemory::rows() const {
  return {{"url", url}, {"etag", etag}, {"lastModified", lastModified}, {"sha256", sha256}};
}

std::string headerValue(const std::vector<std::pair<std::string, std::string>>& headers, const std::string& name) {
  for (const auto& [k, v] : headers)
    if (strcasecmp(k.c_str(), name.c_str()) == 0) return v;
  return "";
}

PageLook judgePage(const PageMemory& before, const std::string& url, const PageAnswer& a) {
  PageLook look;
  if (!a.error.empty() || a.status == 0) {
    look.error = a.error.empty() ? "no answer" : a.error;
    return look;
  }
  if (isRedirect(a.status)) {
    look.location = headerValue(a.headers, "Location");
    if (look.location.empty()) look.error = "HTTP " + std::to_string(a.status) + " without a Location";
    else look.verdict = PageVerdict::Redirect;
    return look;
  }
  look.memory = before;
  if (a.status == 304) {
    // Not Modified since what? Without a validator sent there is nothing it could be the same as:
    // a server that says so every time would look healthy and never deliver anything.
    if (before.etag.empty() && before.lastModified.empty())
      look.error = "HTTP 304 (not modified) from " + url + " to a request that sent no ETag or date to compare with";
    else
      look.verdict = PageVerdict::Unchanged;
    return look;
  }
  if (a.status < 200 || a.status > 299) {
    look.error = "HTTP " + std::to_string(a.status) + " from " + url;
    return look;
  }
  // A validator that could not be sent back is not kept: pined would refuse every later look.
  look.memory.etag = headerValue(a.headers, "ETag");
  if (!sendableValidator(look.memory.etag)) look.memory.etag.clear();
  look.memory.lastModified = headerValue(a.headers, "Last-Modified");
  if (!sendableValidator(look.memory.lastModified)) look.memory.lastModified.clear();
  look.memory.sha256 = sha256Hex(a.body);
  if (look.memory.sha256 == before.sha256) {
    look.verdict = PageVerdict::Unchanged;
    return look;
  }
  look.verdict = PageVerdict::Changed;
  nlohmann::json e = {{"url", url},
                      {"status", a.status},
                      {"contentType", headerValue(a.headers, "Content-Type")},
                      {"sha256", look.memory.sha256},
                      {"bytes", a.body.size()},
                      {"body", cutText(a.body, kPageEventBytes)},
                      {"truncated", a.body.size() > kPageEventBytes}};
  // A body that is not UTF-8 still makes valid JSON: bad bytes become U+FFFD.
  look.payload = e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return look;
}

}  // namespace pine::sources
