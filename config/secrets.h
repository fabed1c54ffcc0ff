// How configuration names secrets without holding them: `keySecret: NAME`
// style keys hold the name of a .env entry, and strings that go out (MCP env,
// headers, a provider's apiKey) may carry `${secret:NAME}` placeholders that
// the supervisor fills in at the moment of use.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace pine::config {

// .env names: [A-Z_][A-Z0-9_]*, at most 128 bytes.
bool isSecretName(std::string_view s);

// A heuristic for "someone pasted a credential here": well-known token
// prefixes (sk-, ghp_, xoxb-, AKIA, eyJ..., PEM headers, Telegram bot tokens)
// and long random-looking strings. It errs towards flagging, because the
// remedy (store it in .env and write its name) is cheap.
bool looksLikeSecret(std::string_view s);

// Keys whose value would be a credential (apiKey, token, password,
// Authorization, FOO_API_KEY, ...), compared ignoring case and '_'/'-'.
bool isCredentialKey(std::string_view key);

struct SecretRef {
  std::string name;
  std::size_t offset = 0;  // of "${secret:" in the text
};

// The ${secret:NAME} placeholders of text. Malformed ones ("${secret:}",
// unterminated, a bad name) are returned with bad=true in problems.
std::vector<SecretRef> findSecretRefs(std::string_view text, std::vector<std::string>* problems);

bool containsSecretRef(std::string_view text);

// A .env name to suggest for a key path: "providers.openai.apiKey" -> "OPENAI_API_KEY".
std::string suggestSecretName(std::string_view keyPath);

}  // namespace pine::config
