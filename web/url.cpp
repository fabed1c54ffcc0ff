#include "web/url.h"

#include <curl/curl.h>

#include <memory>

namespace pine::web {
namespace {

struct UrlDeleter {
  void operator()(CURLU* h) const { curl_url_cleanup(h); }
};

std::optional<std::string> part(CURLU* h, CURLUPart p) {
  char* out = nullptr;
  if (curl_url_get(h, p, &out, 0) != CURLUE_OK || out == nullptr) return std::nullopt;
  std::string s(out);
  curl_free(out);
  return s;
}

}  // namespace

std::string lowerAscii(std::string s) {
  for (auto& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

std::optional<UrlParts> parseWebUrl(const std::string& url, std::string& why) {
  // Short enough to slow down what a page could make an agent send out in an address.
  if (url.empty() || url.size() > 2048) {
    why = url.empty() ? "the url is empty" : "the url is longer than 2048 bytes";
    return std::nullopt;
  }
  std::unique_ptr<CURLU, UrlDeleter> h(curl_url());
  if (!h || curl_url_set(h.get(), CURLUPART_URL, url.c_str(), CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK) {
    why = "'" + url + "' is not an absolute URL (write it as https://host/path)";
    return std::nullopt;
  }
  UrlParts p;
  p.scheme = lowerAscii(part(h.get(), CURLUPART_SCHEME).value_or(""));
  if (p.scheme != "http" && p.scheme != "https") {
    why = "only http and https addresses are fetched, not '" + p.scheme + ":'";
    return std::nullopt;
  }
  p.host = lowerAscii(part(h.get(), CURLUPART_HOST).value_or(""));
  if (p.host.size() > 2 && p.host.front() == '[' && p.host.back() == ']') p.host = p.host.substr(1, p.host.size() - 2);
  while (!p.host.empty() && p.host.back() == '.') p.host.pop_back();
  if (p.host.empty()) {
    why = "'" + url + "' names no host";
    return std::nullopt;
  }
  p.url = part(h.get(), CURLUPART_URL).value_or(url);
  return p;
}

std::optional<std::string> resolveUrl(const std::string& base, const std::string& ref) {
  std::unique_ptr<CURLU, UrlDeleter> h(curl_url());
  if (!h || curl_url_set(h.get(), CURLUPART_URL, base.c_str(), CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK)
    return std::nullopt;
  if (curl_url_set(h.get(), CURLUPART_URL, ref.c_str(), CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK) return std::nullopt;
  return part(h.get(), CURLUPART_URL);
}

std::string queryEscape(const std::string& s) {
  // Everything but the unreserved characters; a null handle is allowed since libcurl 7.82.
  char* e = curl_easy_escape(nullptr, s.data(), static_cast<int>(s.size()));
  if (e == nullptr) return {};
  std::string out(e);
  curl_free(e);
  return out;
}

}  // namespace pine::web
