// SHA-256 (FIPS 180-4) for the download tool's report. Written here rather than
// linked from a crypto library: the worker stays small, and this is all it needs.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace pine::tools {

class Sha256 {
 public:
  Sha256();
  void update(std::string_view data);
  // The digest as 64 lowercase hex digits. Call once; the object is spent after.
  std::string hexDigest();

 private:
  void block(const unsigned char* p);
  std::array<uint32_t, 8> h_;
  unsigned char buf_[64];
  size_t used_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace pine::tools
