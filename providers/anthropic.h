// Anthropic Messages: POST /v1/messages, answers streamed as SSE events.
#pragma once
#include <memory>

#include "providers/provider.h"

namespace pine::model {

class AnthropicProvider final : public Provider {
 public:
  HttpCall buildCall(const ModelRequest& request) const override;
  std::unique_ptr<StreamDecoder> decoder() const override;
  ProviderError errorFor(int status, const Headers& headers, std::string_view body) const override;
};

}  // namespace pine::model
