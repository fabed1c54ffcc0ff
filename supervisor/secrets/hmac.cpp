#include "supervisor/secrets/hmac.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>
#include <optional>

namespace pine::secrets {
namespace {

constexpr std::size_t kMacLen = 32;
using Mac = std::array<unsigned char, kMacLen>;

int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int b64Digit(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;  // standard and URL-safe alphabets
  if (c == '/' || c == '_') return 63;
  return -1;
}

// The signature is attacker-supplied and public: decoding it in data-dependent
// time reveals nothing about the secret. Only the final comparison must be constant time.
std::optional<Mac> decode(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
  if (s.size() >= 7) {
    bool prefix = true;
    const char* want = "sha256=";
    for (std::size_t i = 0; i < 7; ++i)
      if ((s[i] | (s[i] >= 'A' && s[i] <= 'Z' ? 0x20 : 0)) != want[i]) prefix = false;
    if (prefix) s.remove_prefix(7);
  }
  Mac out{};
  if (s.size() == 2 * kMacLen) {
    for (std::size_t i = 0; i < kMacLen; ++i) {
      int hi = hexDigit(s[2 * i]), lo = hexDigit(s[2 * i + 1]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out[i] = (unsigned char)(hi << 4 | lo);
    }
    return out;
  }
  // 32 bytes are 43 base64 digits, plus one '=' when padded.
  if (s.size() == 44 && s.back() == '=') s.remove_suffix(1);
  if (s.size() != 43) return std::nullopt;
  unsigned acc = 0;
  int bits = 0;
  std::size_t n = 0;
  for (char c : s) {
    int d = b64Digit(c);
    if (d < 0) return std::nullopt;
    acc = (acc << 6) | (unsigned)d;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[n++] = (unsigned char)(acc >> bits);
      acc &= (1u << bits) - 1;
    }
  }
  // The two leftover bits must be zero, so each signature has one spelling.
  if (n != kMacLen || acc != 0) return std::nullopt;
  return out;
}

}  // namespace

bool verifyHmacSha256(const SecretStore& store, std::string_view secretName, std::string_view body,
                      std::string_view signature) {
  auto given = decode(signature);
  if (!given) return false;
  auto key = store.get(secretName);
  if (!key) return false;
  Mac mac{};
  unsigned int len = 0;
  const unsigned char* ok = HMAC(EVP_sha256(), key->data(), (int)key->size(),
                                 reinterpret_cast<const unsigned char*>(body.data()), body.size(), mac.data(), &len);
  OPENSSL_cleanse(key->data(), key->size());
  bool match = ok != nullptr && len == kMacLen && CRYPTO_memcmp(mac.data(), given->data(), kMacLen) == 0;
  OPENSSL_cleanse(mac.data(), mac.size());
  return match;
}

}  // namespace pine::secrets
