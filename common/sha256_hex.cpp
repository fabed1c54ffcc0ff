#include "common/sha256_hex.h"

#include <openssl/evp.h>

#include <stdexcept>

namespace pine {

std::string sha256Hex(std::string_view text) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(text.data(), text.size(), md, &n, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("SHA-256 failed (OpenSSL)");
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < n; ++i) out += {hex[md[i] >> 4], hex[md[i] & 15]};
  return out;
}

}  // namespace pine
