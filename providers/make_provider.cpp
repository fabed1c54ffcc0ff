#include "providers/anthropic.h"
#include "providers/openai.h"
#include "providers/provider.h"

namespace pine::model {

namespace {

// The host of an http(s) URL, lower-cased; "" when there is none.
std::string hostOf(const std::string& url) {
  auto scheme = url.find("://");
  if (scheme == std::string::npos) return {};
  auto start = scheme + 3;
  auto end = url.find_first_of("/?#", start);
  std::string authority = url.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (auto at = authority.rfind('@'); at != std::string::npos) authority.erase(0, at + 1);
  if (auto colon = authority.rfind(':'); colon != std::string::npos && authority.find(']') == std::string::npos)
    authority.erase(colon);
  for (auto& c : authority) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return authority;
}

}  // namespace

std::unique_ptr<Provider> makeProvider(config::ProviderKind kind) {
  if (kind == config::ProviderKind::Anthropic) return std::make_unique<AnthropicProvider>();
  return std::make_unique<OpenAIProvider>();  // OpenAI and Script
}

std::unique_ptr<Provider> makeProvider(const config::Provider& provider) {
  if (provider.kind == config::ProviderKind::Anthropic) return std::make_unique<AnthropicProvider>();
  OpenAIOptions options;
  options.maxCompletionTokens = provider.kind == config::ProviderKind::OpenAI && hostOf(provider.baseUrl) == "api.openai.com";
  return std::make_unique<OpenAIProvider>(options);
}

Headers keyHeaders(const config::Provider& provider) {
  if (provider.keySecret.empty()) return {};
  const std::string placeholder = "${secret:" + provider.keySecret + "}";
  switch (provider.kind) {
    case config::ProviderKind::OpenAI: return {{"Authorization", "Bearer " + placeholder}};
    case config::ProviderKind::Anthropic: return {{"x-api-key", placeholder}};
    case config::ProviderKind::Script: return {};
  }
  return {};
}

}  // namespace pine::model
