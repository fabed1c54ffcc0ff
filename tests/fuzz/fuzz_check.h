// What a fuzz target uses to state a property: a broken one aborts with a message,
// which libFuzzer reports as a crash (and saves the input) and the replay test
// reports as a failure. Never an exception: targets must not depend on the caller.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#define FUZZ_CHECK(cond, what)                                                   \
  do {                                                                            \
    if (!(cond)) {                                                                \
      std::fprintf(stderr, "fuzz property broken at %s:%d: %s\n", __FILE__,       \
                   __LINE__, what);                                               \
      std::abort();                                                               \
    }                                                                             \
  } while (0)

namespace pine::fuzz {

// Choices a target derives from its input (splits, limits, ids), so that an input replays the
// same way: SplitMix64 seeded with FNV-1a of the input.
struct Rng {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) { return n ? static_cast<std::size_t>(next() % n) : 0; }
};

inline std::uint64_t hashOf(std::string_view s) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

}  // namespace pine::fuzz
