// OpenAI-compatible chat completions (OpenAI, Ollama, LM Studio, llama.cpp's server,
// vLLM, and the script model): POST /chat/completions, answers streamed as SSE.
#pragma once
#include <memory>

#include "providers/provider.h"

namespace pine::model {

struct OpenAIOptions {
  bool maxCompletionTokens = false;  // send max_completion_tokens instead of max_tokens
};

class OpenAIProvider final : public Provider {
 public:
  explicit OpenAIProvider(OpenAIOptions options = {}) : options_(options) {}
  HttpCall buildCall(const ModelRequest& request) const override;
  std::unique_ptr<StreamDecoder> decoder() const override;
  ProviderError errorFor(int status, const Headers& headers, std::string_view body) const override;

 private:
  OpenAIOptions options_;
};

}  // namespace pine::model
