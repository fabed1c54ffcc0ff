#include "tests/egress/bombs.h"

#include <brotli/encode.h>
#include <zlib.h>

#include <memory>
#include <stdexcept>

namespace pine::egress::test {
namespace {

constexpr std::size_t kMiB = 1 << 20;

std::string littleEndian(uint32_t v) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return out;
}

std::string bigEndian(uint32_t v) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[3 - i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return out;
}

// Raw deflate: the first MiB, the MiB every later one repeats (a full flush forgets the
// history, so each is the same), and the final empty block.
void deflateSegments(std::string& first, std::string& segment, std::string& final) {
  z_stream zs{};
  if (deflateInit2(&zs, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY) != Z_OK) throw std::runtime_error("deflateInit2");
  const std::string zeros(kMiB, '\0');
  auto run = [&](const std::string& in, int flush) {
    std::string out(in.size() / 100 + 1024, '\0');
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    zs.avail_in = static_cast<uInt>(in.size());
    zs.next_out = reinterpret_cast<Bytef*>(out.data());
    zs.avail_out = static_cast<uInt>(out.size());
    const int rc = deflate(&zs, flush);
    if ((rc != Z_OK && rc != Z_STREAM_END) || zs.avail_in != 0) throw std::runtime_error("deflate");
    out.resize(out.size() - zs.avail_out);
    return out;
  };
  first = run(zeros, Z_FULL_FLUSH);
  segment = run(zeros, Z_FULL_FLUSH);
  final = run("", Z_FINISH);
  deflateEnd(&zs);
}

std::string brotliStep(BrotliEncoderState* s, const std::string& in, BrotliEncoderOperation op) {
  std::string out;
  std::size_t availIn = in.size();
  const uint8_t* next = reinterpret_cast<const uint8_t*>(in.data());
  do {
    uint8_t buf[1 << 16];
    std::size_t availOut = sizeof buf;
    uint8_t* o = buf;
    if (!BrotliEncoderCompressStream(s, op, &availIn, &next, &availOut, &o, nullptr))
      throw std::runtime_error("BrotliEncoderCompressStream");
    out.append(reinterpret_cast<char*>(buf), sizeof buf - availOut);
  } while (availIn > 0 || BrotliEncoderHasMoreOutput(s));
  return out;
}

}  // namespace

Bomb makeBomb(const std::string& encoding, std::size_t decodedMiB) {
  if (decodedMiB < 2) throw std::invalid_argument("a bomb of at least 2 MiB");
  Bomb b;
  b.encoding = encoding;
  b.repeats = decodedMiB - 1;
  b.decodedBytes = decodedMiB * kMiB;
  if (encoding == "gzip" || encoding == "deflate") {
    std::string first, final;
    deflateSegments(first, b.segment, final);
    // Check values of the whole stream: combined from one MiB's, never computed over all of it.
    const std::string zeros(kMiB, '\0');
    const auto* z = reinterpret_cast<const Bytef*>(zeros.data());
    const uLong crcMiB = crc32(0, z, kMiB), adlerMiB = adler32(1, z, kMiB);
    uLong crc = crcMiB, adler = adlerMiB;
    for (std::size_t i = 1; i < decodedMiB; ++i) {
      crc = crc32_combine(crc, crcMiB, kMiB);
      adler = adler32_combine(adler, adlerMiB, kMiB);
    }
    if (encoding == "gzip") {
      b.head = std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff", 10) + first;
      b.tail = final + littleEndian(static_cast<uint32_t>(crc)) + littleEndian(static_cast<uint32_t>(b.decodedBytes));
    } else {
      b.head = std::string("\x78\xda", 2) + first;  // zlib header: deflate, 32 KiB window, best compression
      b.tail = final + bigEndian(static_cast<uint32_t>(adler));
    }
    return b;
  }
  if (encoding == "br") {
    std::unique_ptr<BrotliEncoderState, decltype(&BrotliEncoderDestroyInstance)> s(
        BrotliEncoderCreateInstance(nullptr, nullptr, nullptr), &BrotliEncoderDestroyInstance);
    if (!s) throw std::runtime_error("BrotliEncoderCreateInstance");
    BrotliEncoderSetParameter(s.get(), BROTLI_PARAM_QUALITY, 1);
    const std::string zeros(kMiB, '\0');
    b.head = brotliStep(s.get(), zeros, BROTLI_OPERATION_FLUSH);
    b.segment = brotliStep(s.get(), zeros, BROTLI_OPERATION_FLUSH);
    const std::string again = brotliStep(s.get(), zeros, BROTLI_OPERATION_FLUSH);
    if (again != b.segment) throw std::runtime_error("brotli: a flushed MiB of zeros does not repeat");
    b.tail = brotliStep(s.get(), "", BROTLI_OPERATION_FINISH);
    return b;
  }
  throw std::invalid_argument("no bomb for Content-Encoding " + encoding);
}

}  // namespace pine::egress::test
