#include "config/program_digest.h"

#include <fstream>
#include <sstream>

#include "common/sha256_hex.h"

namespace pine::config {

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
