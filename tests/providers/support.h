// Test support: one model call through the real client path (a Provider's HttpCall sent
// by pine::egress::perform to a FakeServer, the answer fed to the Provider's decoder),
// and decoding a body split in every possible way.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "tests/providers/fake_server.h"
#include "providers/provider.h"

namespace pine::model::test {

inline const std::string kTestKey = "sk-test-4c1d9e0b7a6f5e3d";  // the value of ${secret:TEST_KEY}

struct Outcome {
  std::optional<std::string> egressError;  // transport failure (the stream broke)
  long status = 0;
  std::optional<Turn> turn;
  std::optional<ProviderError> error;
  std::vector<std::string> textPieces;  // what onText received
};

Outcome roundTrip(FakeServer& server, const Provider& provider, const ModelRequest& request,
                  const Headers& keyHeaders = {});

// Feeds the pieces in order and finishes; onText pieces are collected.
Turn decodePieces(const Provider& provider, const std::vector<std::string>& pieces,
                  std::vector<std::string>* textPieces = nullptr);

// Decodes body split in two at every byte position, and one byte at a time; each must
// give `expected`, and every onText piece must be whole UTF-8. Returns the failures.
std::vector<std::string> checkEverySplit(const Provider& provider, const std::string& body, const Turn& expected);

bool validUtf8(const std::string& s);
std::string describe(const Turn& t);  // for failure messages
bool sameTurn(const Turn& a, const Turn& b);

}  // namespace pine::model::test
