#include "config/program_digest.h"

#include <openssl/evp.h>

#include <fstream>
#include <sstream>

namespace pine::config {

std::string sha256Hex(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), md, &n, EVP_sha256(), nullptr) != 1) return "";
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < n; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 15];
  }
  return out;
}

std::string programSha256(const std::string& home, const std::string& file) {
  if (file.empty()) return "";
  std::ifstream in(file[0] == '/' ? file : home + "/" + file, std::ios::binary);
  if (!in) return "";
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return "";
  return sha256Hex(content.str());
}

}  // namespace pine::config
