// Compression bombs for the hostile-server tests: a few kilobytes or megabytes of gzip,
// deflate (zlib) or brotli that decode to `decodedMiB` MiB of zeros. The encoders make one
// MiB, flushed so that it ends on a byte boundary, and the server repeats that segment:
// a valid stream of any decoded size without compressing it all.
#pragma once
#include <cstddef>
#include <string>

#include "tests/egress/test_server.h"

namespace pine::egress::test {

Bomb makeBomb(const std::string& encoding, std::size_t decodedMiB);

}  // namespace pine::egress::test
