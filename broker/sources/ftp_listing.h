// What an FTP server says is in a folder, read from the listing pine-egress fetched: MLSD lines
// (RFC 3659, "type=file;size=12;modify=20261203003000; name") or, from a server without MLSD, LIST
// lines in the unix `ls -l` form. The listing is outside content: only plain files are kept, and
// a name with '/', '\', a control character, bytes that are not UTF-8, "." or ".." is refused
// (counted, never used). Pure; the broker parses here, pined never does.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pine::sources {

struct FtpEntry {
  std::string name;
  std::int64_t size = -1;  // -1: the server did not say
  std::string modified;    // MLSD: "2026-12-03T00:30:00Z"; LIST: as the server wrote it ("Dec  3 00:30")
};

struct FtpListing {
  std::vector<FtpEntry> files;  // plain files only, in the server's order
  std::size_t refused = 0;      // entries whose name was refused
  std::string error;            // the listing as a whole was refused (too large, too many entries)
};

constexpr std::size_t kMaxFtpEntries = 10000;
constexpr std::size_t kMaxFtpListingBytes = 4 << 20;

FtpListing parseMlsd(std::string_view text);
FtpListing parseUnixList(std::string_view text);

// Why `name` is not used as a file name ("" when it may be).
std::string ftpNameProblem(std::string_view name);

}  // namespace pine::sources
