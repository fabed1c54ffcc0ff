// Webhook signature checks against a secret the broker names but never sees.
#pragma once
#include <string_view>

#include "supervisor/secrets/secret_store.h"

namespace pine::secrets {

// HMAC-SHA256 of body keyed with the secret `secretName`, compared in constant
// time (CRYPTO_memcmp) with `signature`, given as 64 hex digits (any case),
// "sha256=<hex>" (GitHub), or base64 / base64url of the 32 bytes (padding
// optional). Surrounding blanks are ignored. False for an unknown secret, a
// malformed or truncated signature, or a mismatch.
bool verifyHmacSha256(const SecretStore& store, std::string_view secretName, std::string_view body,
                      std::string_view signature);

}  // namespace pine::secrets
