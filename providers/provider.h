// A model provider's wire format: the HTTP request for a ModelRequest, the decoder of
// its (streamed) answer, and its errors. Pure: no I/O, so the worker (which sends the
// request through the broker) and the broker (which decodes the same stream to record
// usage and cost) share it.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/model.h"
#include "providers/types.h"

namespace pine::model {

class StreamDecoder {
 public:
  virtual ~StreamDecoder();
  // Bytes of the answer body, split anywhere (mid-line, mid-UTF-8, mid-JSON). Never
  // throws: a problem is kept for finish(), so feed() is safe inside C callbacks
  // (libcurl's write callback). After failed() turns true the rest is ignored.
  virtual void feed(std::string_view bytes) = 0;
  // The whole answer. Throws ProviderError: an error event, a stream that ended before
  // its end marker (never a half answer), malformed JSON, an over-long line.
  virtual Turn finish() = 0;
  // True once the answer is known to be an error: the caller may stop the transfer.
  virtual bool failed() const = 0;
  // Text deltas as they arrive, each whole UTF-8 (never a torn character). Must not throw.
  std::function<void(std::string_view)> onText;
};

using Headers = std::vector<std::pair<std::string, std::string>>;

class Provider {
 public:
  virtual ~Provider();
  virtual HttpCall buildCall(const ModelRequest& request) const = 0;
  // A fresh decoder for one answer. Streamed (SSE) and plain JSON answers both decode:
  // some local servers ignore stream:true.
  virtual std::unique_ptr<StreamDecoder> decoder() const = 0;
  // A non-2xx answer as a clear error, the provider's own message included:
  // "rate limited by the provider (429), retry after 20 s: ...".
  virtual ProviderError errorFor(int status, const Headers& headers, std::string_view body) const = 0;
};

// Script -> the OpenAI wire format (the script model answers chat completions).
std::unique_ptr<Provider> makeProvider(config::ProviderKind kind);
// The same, tuned to the configured server: OpenAI's own API gets
// `max_completion_tokens` (its newer models refuse `max_tokens`); every other
// OpenAI-compatible server gets `max_tokens`, the field they all know.
std::unique_ptr<Provider> makeProvider(const config::Provider& provider);

// The header that carries the key, with a ${secret:NAME} placeholder that pined fills
// in (empty when the provider has no keySecret, and for scripts).
Headers keyHeaders(const config::Provider& provider);

}  // namespace pine::model
