#include "web/host_rules.h"

#include "web/url.h"

namespace pine::web {
namespace {

std::string norm(std::string s) {
  s = lowerAscii(std::move(s));
  while (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

bool hostMatches(const std::string& host, const std::string& pattern) {
  const std::string h = norm(host), p = norm(pattern);
  if (h.empty() || p.empty()) return false;
  if (p.rfind("*.", 0) == 0) {
    const std::string suffix = p.substr(1);  // ".example.org"
    return h.size() > suffix.size() && h.compare(h.size() - suffix.size(), suffix.size(), suffix) == 0;
  }
  return h == p;
}

std::optional<std::string> hostRefusal(const std::string& host, const std::vector<std::string>& allowHosts,
                                       const std::vector<std::string>& denyHosts) {
  for (const auto& d : denyHosts)
    if (hostMatches(host, d)) return "the host " + host + " is in denyHosts (" + d + ")";
  if (allowHosts.empty()) return std::nullopt;
  for (const auto& a : allowHosts)
    if (hostMatches(host, a)) return std::nullopt;
  return "the host " + host + " is not in allowHosts (add it to the web server's allowHosts to fetch it)";
}

}  // namespace pine::web
