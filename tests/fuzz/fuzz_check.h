// What a fuzz target uses to state a property: a broken one aborts with a message,
// which libFuzzer reports as a crash (and saves the input) and the replay test
// reports as a failure. Never an exception: targets must not depend on the caller.
#pragma once
#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond, what)                                                   \
  do {                                                                            \
    if (!(cond)) {                                                                \
      std::fprintf(stderr, "fuzz property broken at %s:%d: %s\n", __FILE__,       \
                   __LINE__, what);                                               \
      std::abort();                                                               \
    }                                                                             \
  } while (0)
