// JSON-text columns: checked on the way in, and kept JSON when a secret is rewritten out.
#pragma once
#include <functional>
#include <string>

namespace pine::store::detail {

using TextFn = std::function<std::string(const std::string&)>;

// Throws StoreError "<what> is not valid JSON ..." (never quoting the text: it may hold a secret).
void requireJson(const std::string& text, const std::string& what);
// The same check without the error: true when `text` is valid JSON text.
bool isJson(const std::string& text);

// fn over the raw text, then over every decoded string (keys included), so that a secret
// written with JSON escapes is found as well. Always returns JSON: if fn broke the syntax,
// the rewritten text is kept as one JSON string.
std::string rewriteJson(const std::string& text, const TextFn& fn);

}  // namespace pine::store::detail
