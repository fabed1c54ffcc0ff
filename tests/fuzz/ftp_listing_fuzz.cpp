// An FTP server's folder listing over any bytes (broker/sources/ftp_listing.h), as the broker
// gets it from pine-egress: read as MLSD and as unix LIST. Nothing may crash (ASan, UBSan) or
// throw; every name kept is one ftpNameProblem accepts (no '/', '\', control character, "." or
// "..", valid UTF-8, at most 255 bytes), never more than kMaxFtpEntries are kept, a size is -1
// or a count of bytes, and a listing refused as a whole keeps nothing.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "broker/sources/ftp_listing.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

void check(const pine::sources::FtpListing& l) {
  FUZZ_CHECK(l.error.empty() || l.files.empty(), "a refused listing kept files");
  FUZZ_CHECK(l.files.size() <= pine::sources::kMaxFtpEntries, "more entries than the cap");
  for (const auto& f : l.files) {
    FUZZ_CHECK(pine::sources::ftpNameProblem(f.name).empty(), "a name that should have been refused");
    FUZZ_CHECK(f.name.find('/') == std::string::npos && f.name != "." && f.name != "..", "a name leaving the folder");
    FUZZ_CHECK(f.size >= -1, "a negative size");
    FUZZ_CHECK(f.modified.size() <= 64, "a modify time over 64 bytes");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  check(pine::sources::parseMlsd(in));
  check(pine::sources::parseUnixList(in));
  return 0;
}
