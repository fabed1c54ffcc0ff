// What pine-browser reads from Chromium (which renders strangers' pages): the DevTools pipe's
// NUL framing (browser/cdp_framing) and the request heads Chromium sends its proxy
// (browser/proxy, parseProxyRequest). Nothing may crash or throw; no message is over its cap or
// holds a NUL; every NUL ends exactly one message, kept or dropped; where the bytes are split
// between reads changes nothing; a head that parses names a host and a port in range, and a
// plain request is rewritten to one head that closes the connection.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "browser/cdp_framing.h"
#include "browser/proxy.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  pine::fuzz::Rng rng{pine::fuzz::hashOf(bytes)};
  const size_t max = 1 + rng.next() % 1024;
  using pine::browser::NulFramer;

  NulFramer whole(max);
  std::vector<std::string> a;
  whole.feed(bytes, a);
  NulFramer split(max);
  std::vector<std::string> b;
  for (size_t at = 0; at < bytes.size();) {
    size_t n = 1 + rng.next() % 16;
    split.feed(bytes.substr(at, n), b);
    at += n;
  }
  size_t nuls = 0;
  for (char c : bytes) nuls += c == '\0';
  FUZZ_CHECK(a == b, "splitting the bytes changed the messages");
  FUZZ_CHECK(whole.dropped() == split.dropped(), "splitting the bytes changed what was dropped");
  FUZZ_CHECK(a.size() + whole.dropped() == nuls, "a NUL did not end exactly one message");
  for (auto& m : a) {
    FUZZ_CHECK(m.size() <= max, "a message over the cap");
    FUZZ_CHECK(m.find('\0') == std::string::npos, "a NUL inside a message");
    auto j = nlohmann::json::parse(m, nullptr, false);  // as CdpClient reads it: never throws
    (void)j;
  }

  std::string why;
  auto req = pine::browser::parseProxyRequest(std::string(bytes), why);
  if (req) {
    FUZZ_CHECK(!req->host.empty() && req->port > 0 && req->port < 65536, "a parsed head without a host or port");
    if (!req->connect) {
      const std::string_view close = "\r\nConnection: close\r\n\r\n";
      FUZZ_CHECK(req->head.size() >= close.size() && std::string_view(req->head).substr(req->head.size() - close.size()) == close,
                 "a plain request that does not close");
      for (size_t at = 0; (at = req->head.find_first_of("\r\n", at)) != std::string::npos; at += 2)
        FUZZ_CHECK(req->head.compare(at, 2, "\r\n") == 0, "a bare CR or LF in the rewritten head");
      FUZZ_CHECK(req->head.find("\r\n\r\n") == req->head.size() - 4, "a rewritten head with a second head inside");
    }
  } else {
    FUZZ_CHECK(!why.empty(), "a refused head without a reason");
  }
  return 0;
}
