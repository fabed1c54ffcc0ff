#include "web/search.h"

#include <nlohmann/json.hpp>

#include "egress/egress.h"
#include "web/html_text.h"
#include "web/url.h"

namespace pine::web {
namespace {

constexpr std::size_t kMaxAnswerBytes = 1u << 20;
constexpr std::size_t kMaxFieldBytes = 1000;

struct KeyLookup final : egress::SecretLookup {
  const WebJob& job;
  explicit KeyLookup(const WebJob& j) : job(j) {}
  std::optional<std::string> get(std::string_view name) const override {
    if (name == job.searchKeyName && !job.searchKey.empty()) return job.searchKey;
    return std::nullopt;
  }
};

std::string field(const nlohmann::json& r, const char* key) {
  auto it = r.find(key);
  if (it == r.end() || !it->is_string()) return {};
  std::string s = htmlToText(it->get<std::string>(), "");  // descriptions carry <strong> and entities
  if (s.size() > kMaxFieldBytes) s = s.substr(0, kMaxFieldBytes) + "...";
  return s;
}

}  // namespace

ToolResult searchResultsText(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object()) return {true, "the search service's answer is not JSON"};
  auto web = j.find("web");
  if (web == j.end() || !web->is_object() || !web->contains("results") || !(*web)["results"].is_array())
    return {false, "No results."};
  std::string out;
  int n = 0;
  for (const auto& r : (*web)["results"]) {
    if (!r.is_object()) continue;
    if (++n > kMaxSearchResults) break;
    out += std::to_string(n) + ". " + field(r, "title") + "\n   " + field(r, "url") + "\n";
    if (auto d = field(r, "description"); !d.empty()) out += "   " + d + "\n";
    out += "\n";
  }
  return {false, n ? out : "No results."};
}

ToolResult searchWeb(const std::string& query, const WebJob& job) {
  if (job.searchUrl.empty()) return {true, "no search service is configured (the web server's 'search' key)"};
  if (query.empty() || query.size() > 400) return {true, "the query must have 1 to 400 bytes"};
  egress::EgressRequest req;
  req.url = job.searchUrl + (job.searchUrl.find('?') == std::string::npos ? "?" : "&") + "q=" + queryEscape(query) +
            "&count=" + std::to_string(kMaxSearchResults);
  req.headers = {{"Accept", "application/json"}, {"X-Subscription-Token", "${secret:" + job.searchKeyName + "}"}};
  egress::EgressPolicy policy;
  policy.allowPrivate = job.allowPrivate;
  policy.allowLoopback = job.allowPrivate;
  policy.allowPlainHttp = true;  // config/schema.cpp allows http:// only to this machine
  policy.totalTimeoutMs = 30000;
  policy.idleTimeoutMs = 15000;
  policy.maxResponseBytes = kMaxAnswerBytes;
  const redact::Redactor known({job.searchKey});
  long status = 0;
  std::string body;
  auto error = egress::perform(
      req, policy, KeyLookup(job), known, [&](const egress::EgressResponseHead& h) { status = h.status; },
      [&](std::string_view chunk) {
        body.append(chunk);
        return true;
      });
  if (error) return {true, "search: " + *error};
  if (status != 200) return {true, "search: the search service answered HTTP " + std::to_string(status)};
  return searchResultsText(body);
}

}  // namespace pine::web
