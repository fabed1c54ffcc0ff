#include "tests/providers/support.h"

#include <csignal>

#include "egress/egress.h"
#include "redact/redactor.h"

namespace pine::model::test {

namespace {

struct Secrets : egress::SecretLookup {
  std::optional<std::string> get(std::string_view name) const override {
    if (name == "TEST_KEY") return kTestKey;
    return std::nullopt;
  }
};

}  // namespace

Outcome roundTrip(FakeServer& server, const Provider& provider, const ModelRequest& request, const Headers& keyHeaders) {
  std::signal(SIGPIPE, SIG_IGN);
  const HttpCall call = provider.buildCall(request);
  egress::EgressRequest req;
  req.method = call.method;
  req.url = server.baseUrl() + call.path;
  req.headers = call.headers;
  req.headers.insert(req.headers.end(), keyHeaders.begin(), keyHeaders.end());
  req.body = call.body;
  egress::EgressPolicy policy;
  policy.allowLoopback = true;
  policy.allowPlainHttp = true;
  policy.connectTimeoutMs = 3000;
  policy.totalTimeoutMs = 10000;
  static const redact::Redactor redactor(std::vector<std::string>{});

  Outcome out;
  auto decoder = provider.decoder();
  decoder->onText = [&](std::string_view t) { out.textPieces.emplace_back(t); };
  egress::EgressResponseHead head;
  std::string errorBody;
  out.egressError = egress::perform(
      req, policy, Secrets(), redactor, [&](const egress::EgressResponseHead& h) { head = h; },
      [&](std::string_view chunk) {
        if (head.status < 200 || head.status > 299) {
          errorBody.append(chunk);
          return true;
        }
        decoder->feed(chunk);
        return !decoder->failed();  // an error event: stop reading
      });
  out.status = head.status;
  if (head.status != 0 && (head.status < 200 || head.status > 299)) {
    out.error = provider.errorFor(static_cast<int>(head.status), head.headers, errorBody);
    return out;
  }
  try {
    out.turn = decoder->finish();
  } catch (const ProviderError& e) {
    out.error = e;
  }
  return out;
}

Turn decodePieces(const Provider& provider, const std::vector<std::string>& pieces, std::vector<std::string>* textPieces) {
  auto d = provider.decoder();
  if (textPieces) d->onText = [textPieces](std::string_view t) { textPieces->emplace_back(t); };
  for (const auto& p : pieces) d->feed(p);
  return d->finish();
}

bool validUtf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

std::string describe(const Turn& t) {
  std::string s = "text='" + t.text + "' stop=" + t.stopReason + " usage=" + std::to_string(t.usage.input) + "/" +
                  std::to_string(t.usage.output) + "/" + std::to_string(t.usage.cacheRead) + "/" +
                  std::to_string(t.usage.cacheWrite);
  for (const auto& c : t.toolCalls) s += " call[" + c.id + " " + c.name + " " + c.arguments + "]";
  return s;
}

bool sameTurn(const Turn& a, const Turn& b) { return describe(a) == describe(b) && a.reasoning == b.reasoning; }

std::vector<std::string> checkEverySplit(const Provider& provider, const std::string& body, const Turn& expected) {
  std::vector<std::string> failures;
  auto check = [&](const std::vector<std::string>& pieces, const std::string& how) {
    std::vector<std::string> texts;
    try {
      Turn t = decodePieces(provider, pieces, &texts);
      std::string joined;
      for (const auto& p : texts) {
        joined += p;
        if (!validUtf8(p)) failures.push_back(how + ": a torn UTF-8 character reached onText");
      }
      if (!sameTurn(t, expected)) failures.push_back(how + ": got " + describe(t));
      if (joined != expected.text) failures.push_back(how + ": onText pieces do not add up to the text");
    } catch (const std::exception& e) {
      failures.push_back(how + ": threw " + e.what());
    }
  };
  for (std::size_t i = 1; i < body.size() && failures.size() < 5; ++i)
    check({body.substr(0, i), body.substr(i)}, "split at " + std::to_string(i));
  std::vector<std::string> bytes;
  for (char c : body) bytes.emplace_back(1, c);
  check(bytes, "one byte at a time");
  return failures;
}

}  // namespace pine::model::test
