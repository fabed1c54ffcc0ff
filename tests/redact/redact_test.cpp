// Redaction: the corpus of real formats and look-alikes, known values in their
// encoded forms, streaming across chunk boundaries, and `pinectl redact`.
#include <doctest/doctest.h>
#include <re2/re2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "pinectl/cmd_redact.h"
#include "redact/detail.h"
#include "redact/redactor.h"

using pine::redact::kMarker;
using pine::redact::Redactor;
using pine::redact::StreamRedactor;
using pine::redact::detail::StreamTesting;

namespace {

std::string unescape(std::string s) {
  for (std::size_t p; (p = s.find("{NL}")) != std::string::npos;) s.replace(p, 4, "\n");
  return s;
}

struct Case {
  int line;
  std::string input, expected;
};

// Lines of a corpus file: "#" comments and blank lines skipped; "input<TAB>expected" or just "input".
std::vector<Case> loadCorpus(const std::string& name) {
  std::ifstream f(std::string(REDACT_CORPUS_DIR) + "/" + name);
  REQUIRE_MESSAGE(f.good(), "missing corpus " << name);
  std::vector<Case> cases;
  std::string line;
  int n = 0;
  while (std::getline(f, line)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    const std::size_t tab = line.find('\t');
    if (tab == std::string::npos) {
      cases.push_back({n, unescape(line), unescape(line)});
    } else {
      cases.push_back({n, unescape(line.substr(0, tab)), unescape(line.substr(tab + 1))});
    }
  }
  return cases;
}

std::string randomToken(std::mt19937_64& rng, std::size_t n) {
  static constexpr char kAbc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s += kAbc[rng() % 62];
  return s;
}

std::string streamed(const Redactor& r, std::string_view text, std::mt19937_64& rng, std::size_t maxChunk) {
  StreamRedactor s(r);
  std::string out;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t len = std::min<std::size_t>(1 + rng() % maxChunk, text.size() - pos);
    out += s.feed(text.substr(pos, len));
    pos += len;
  }
  return out + s.finish();
}

struct TempHome {
  std::filesystem::path root;
  TempHome() {
    char tmpl[] = "/tmp/pine-redact-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    root = tmpl;
    std::filesystem::create_directories(root / "data");
  }
  ~TempHome() {
    std::error_code ec;
    std::filesystem::permissions(root / ".env", std::filesystem::perms::owner_all, ec);
    std::filesystem::remove_all(root, ec);
  }
  void write(const std::string& rel, const std::string& text) const {
    std::ofstream(root / rel, std::ios::binary) << text;
  }
};

}  // namespace

TEST_CASE("corpus: every secret format becomes the marker, the rest of the line stays") {
  const Redactor r({});
  const auto cases = loadCorpus("secrets.txt");
  CHECK(cases.size() >= 400);
  int failures = 0;
  for (const Case& c : cases) {
    const std::string got = r.redact(c.input);
    CHECK_MESSAGE(r.redact(got) == got, "not idempotent: " << got);
    if (got != c.expected) {
      ++failures;
      // The message shows fabricated values only: the corpus holds no real key.
      FAIL_CHECK("secrets.txt:" << c.line << "\n  input:    " << c.input << "\n  expected: " << c.expected
                                << "\n  got:      " << got);
    }
  }
  CHECK(failures == 0);
}

TEST_CASE("corpus: look-alikes pass unchanged") {
  const Redactor r({});
  const auto cases = loadCorpus("lookalikes.txt");
  CHECK(cases.size() >= 300);
  for (const Case& c : cases) {
    const std::string got = r.redact(c.input);
    if (got != c.input) FAIL_CHECK("lookalikes.txt:" << c.line << "\n  input: " << c.input << "\n  got:   " << got);
  }
}

TEST_CASE("corpus: an independent RE2 oracle finds no token format left after redaction") {
  // Strict, anchored-by-prefix formats written separately from the matchers.
  const std::vector<std::string> formats = {
      R"(sk-(?:proj-|ant-api03-|svcacct-)?[A-Za-z0-9_-]{32,})", R"(gh[pousr]_[A-Za-z0-9]{36})",
      R"(github_pat_[A-Za-z0-9_]{60,})",  R"((?:AKIA|ASIA)[A-Z0-9]{16})",
      R"(xox[baprs]-[0-9]{6,}-)",         R"(AIza[A-Za-z0-9_-]{35})",
      R"(eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]+\.)", R"(glpat-[A-Za-z0-9_-]{20})",
      R"(npm_[A-Za-z0-9]{36})",           R"(hf_[A-Za-z]{34})",
      R"(SG\.[A-Za-z0-9_-]{22}\.)",       R"(dop_v1_[0-9a-f]{64})",
      R"([0-9]{8,10}:AA[A-Za-z0-9_-]{33})", R"(PRIVATE KEY-----\n[A-Za-z0-9+/])",
      R"(sk_live_[A-Za-z0-9]{20,})",      R"(GOCSPX-[A-Za-z0-9_-]{28})",
  };
  std::vector<std::unique_ptr<re2::RE2>> res;
  for (const auto& f : formats) {
    res.push_back(std::make_unique<re2::RE2>(f));
    REQUIRE(res.back()->ok());
  }
  const Redactor r({});
  int hitsBefore = 0;
  for (const Case& c : loadCorpus("secrets.txt")) {
    const std::string out = r.redact(c.input);
    for (const auto& re : res) {
      hitsBefore += re2::RE2::PartialMatch(c.input, *re);
      CHECK_MESSAGE(!re2::RE2::PartialMatch(out, *re), "left after redaction: " << out);
    }
  }
  CHECK(hitsBefore > 100);  // the oracle does recognise the corpus
}

TEST_CASE("known values: exact, JSON-escaped, URL-encoded and base64 forms") {
  const std::string plain = "Pl41n-Secret-Value";
  const std::string tricky = "p@ss\"w/rd\\with:odd chars";
  const Redactor r({plain, tricky});
  CHECK(r.knownCount() == 2);
  CHECK(r.redact("a " + plain + " b") == "a [redacted] b");
  CHECK(r.redact(plain) == "[redacted]");
  CHECK(r.redact("x" + plain + "y") == "x[redacted]y");  // a known value is redacted wherever it appears
  CHECK(r.redact(tricky) == "[redacted]");
  CHECK(r.redact(nlohmann::json({{"msg", tricky}}).dump()) == R"({"msg":"[redacted]"})");
  CHECK(r.redact(R"({"msg":"p@ss\"w\/rd\\with:odd chars"})") == R"({"msg":"[redacted]"})");
  CHECK(r.redact("https://h/?q=p%40ss%22w%2Frd%5Cwith%3Aodd%20chars&x=1") == "https://h/?q=[redacted]&x=1");
  CHECK(r.redact("q=p%40ss%22w%2Frd%5Cwith%3Aodd+chars") == "q=[redacted]");
  // base64 of the value alone, and inside a Basic credential (any alignment)
  CHECK(r.redact("UGw0MW4tU2VjcmV0LVZhbHVl") == "[redacted]");
  for (const std::string user : {"u", "us", "usr", "user"}) {
    std::string b64;
    {
      // encode user:plain by hand so the test does not share code with the redactor
      static constexpr char kAbc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
      const std::string in = user + ":" + plain;
      for (std::size_t i = 0; i < in.size(); i += 3) {
        unsigned n = static_cast<unsigned char>(in[i]) << 16;
        if (i + 1 < in.size()) n |= static_cast<unsigned char>(in[i + 1]) << 8;
        if (i + 2 < in.size()) n |= static_cast<unsigned char>(in[i + 2]);
        b64 += kAbc[(n >> 18) & 63];
        b64 += kAbc[(n >> 12) & 63];
        b64 += i + 1 < in.size() ? kAbc[(n >> 6) & 63] : '=';
        b64 += i + 2 < in.size() ? kAbc[n & 63] : '=';
      }
    }
    const std::string out = r.redact("X-Custom: " + b64);
    CHECK_MESSAGE(out.find(kMarker) != std::string::npos, user << ": " << out);
    CHECK(out.find(b64) == std::string::npos);
  }
}

TEST_CASE("known values: short ones are skipped with a reason that does not contain them") {
  const Redactor r({"tiny1", "", "long-enough-1", "   \t  ", "long-enough-1"});
  CHECK(r.knownCount() == 1);
  REQUIRE(r.skipped().size() == 3);
  CHECK(r.skipped()[0].index == 0);
  CHECK(r.skipped()[0].reason.find("tiny1") == std::string::npos);
  CHECK(r.skipped()[1].index == 1);
  CHECK(r.skipped()[2].index == 3);
  CHECK(r.redact("tiny1 long-enough-1") == "tiny1 [redacted]");
}

TEST_CASE("known values: overlapping and nested values give one marker") {
  const Redactor r({"abcdefgh-1234", "abcdefgh-1234-5678", "5678-xyzw-0000"});
  CHECK(r.redact("[abcdefgh-1234-5678]") == "[[redacted]]");
  CHECK(r.redact("abcdefgh-1234-5678-xyzw-0000!") == "[redacted]!");
  CHECK(r.redact("abcdefgh-1234") == "[redacted]");
}

TEST_CASE("known values: 150 values in one text, each found once") {
  std::mt19937_64 rng(42);
  std::vector<std::string> secrets;
  for (int i = 0; i < 150; ++i) secrets.push_back(randomToken(rng, 8 + rng() % 40));
  const Redactor r(secrets);
  std::string text, expected;
  for (int i = 0; i < 2000; ++i) {
    const std::string filler = "line " + std::to_string(i) + " ok, lorem ipsum dolor sit amet ";
    text += filler;
    expected += filler;
    if (i % 7 == 0) {
      text += secrets[i % secrets.size()];
      expected += kMarker;
    }
    text += "\n";
    expected += "\n";
  }
  CHECK(r.redact(text) == expected);
}

TEST_CASE("known values: a control token and a bot token") {
  const std::string control = "3q2+7wAAbbbbCCCCddddEEEEffff0000";
  const std::string bot = "123456789:AAH" + std::string(32, 'q');
  const Redactor r({control, bot});
  CHECK(r.redact("Authorization: Bearer " + control) == "Authorization: Bearer [redacted]");
  CHECK(r.redact("token " + control + " end") == "token [redacted] end");
  CHECK(r.redact("/bot" + bot + "/getMe") == "/bot[redacted]/getMe");
}

TEST_CASE("patterns: key names stay, only values go") {
  const Redactor r({});
  CHECK(r.redact("api_key=abcdef123456") == "api_key=[redacted]");
  CHECK(r.redact("Bearer abc.DEF-123_456") == "Bearer [redacted]");
  CHECK(r.redact("https://user:pw123456@host/x") == "https://user:[redacted]@host/x");
  CHECK(r.redact("token=abc&next=2") == "token=[redacted]&next=2");
  CHECK(r.redact("a\npassword: hunter2\nb") == "a\npassword: [redacted]\nb");
  CHECK(r.redact("password:\n  nested: 1") == "password:\n  nested: 1");
  CHECK(r.redact(R"("password": "with \"escaped\" quote")") == R"("password": "[redacted]")");
  CHECK(r.redact("self.password = password") == "self.password = password");
  CHECK(r.redact("") == "");
  CHECK(r.redact("=") == "=");
  CHECK(r.redact(":") == ":");
  CHECK(r.redact("token=") == "token=");
}

TEST_CASE("patterns: a truncated private key is redacted to the end of its body") {
  const Redactor r({});
  const std::string text = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx1\nabcd+/==\n";
  CHECK(r.redact(text) == "[redacted]");
  CHECK(r.redact("-----BEGIN PRIVATE KEY-----\nMIIE\"}, next") == "[redacted]\"}, next");
}

TEST_CASE("stream: chunked input gives the same output as the whole") {
  std::mt19937_64 rng(7);
  std::vector<std::string> secrets;
  for (int i = 0; i < 20; ++i) secrets.push_back(randomToken(rng, 12 + rng() % 20));
  secrets.push_back("multi-line\nknown value\nthird line");
  const Redactor r(secrets);
  std::string text;
  for (const auto& file : {"secrets.txt", "lookalikes.txt"}) {
    for (const Case& c : loadCorpus(file)) text += c.input + "\n";
  }
  for (int i = 0; i < 200; ++i) {
    text += "log line " + std::to_string(i) + " with " + secrets[i % secrets.size()] + " inside\n";
  }
  const std::string whole = r.redact(text);
  CHECK(whole.find("known value") == std::string::npos);
  for (std::size_t maxChunk : {1u, 3u, 17u, 256u, 4096u, 100000u}) {
    CHECK_MESSAGE(streamed(r, text, rng, maxChunk) == whole, "max chunk " << maxChunk);
  }
}

TEST_CASE("stream: a secret split across chunks of a very long line is found") {
  std::mt19937_64 rng(9);
  const std::string secret = "VeryLongLine-Known-Secret-42";
  const Redactor r({secret});
  std::string text(3 * StreamRedactor::kMaxHold, 'a');
  for (std::size_t pos : {std::size_t{1000}, StreamRedactor::kMaxHold - 10, 2 * StreamRedactor::kMaxHold + 5}) {
    text.replace(pos, secret.size(), secret);
    text[pos - 1] = ' ';
  }
  text.replace(StreamRedactor::kMaxHold + 100, 20, " password=hunter22 ");
  const std::string whole = r.redact(text);
  CHECK(whole.find(secret) == std::string::npos);
  CHECK(whole.find("hunter22") == std::string::npos);
  for (std::size_t maxChunk : {4096u, 65536u, 1000000u}) CHECK(streamed(r, text, rng, maxChunk) == whole);
}

TEST_CASE("stream: a PEM block arriving line by line is held until its END") {
  const Redactor r({});
  StreamRedactor s(r);
  std::string out;
  out += s.feed("before\n");
  CHECK(out == "before\n");
  out += s.feed("-----BEGIN OPENSSH PRIVATE KEY-----\n");
  out += s.feed("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n");
  CHECK(out == "before\n");
  out += s.feed("-----END OPENSSH PRIVATE KEY-----\nafter\n");
  out += s.finish();
  CHECK(out == "before\n[redacted]\nafter\n");
}

TEST_CASE("stream: redactStream copies an istream line by line") {
  const Redactor r({"stream-secret-1"});
  std::istringstream in("one stream-secret-1\ntwo ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789\nno newline at end");
  std::ostringstream out;
  r.redactStream(in, out);
  CHECK(out.str() == "one [redacted]\ntwo [redacted]\nno newline at end");
  std::istringstream empty("");
  std::ostringstream out2;
  r.redactStream(empty, out2);
  CHECK(out2.str().empty());
  std::string longLine(200000, 'x');
  longLine += " stream-secret-1\n";
  std::istringstream in3(longLine);
  std::ostringstream out3;
  r.redactStream(in3, out3);
  CHECK(out3.str() == std::string(200000, 'x') + " [redacted]\n");
}

TEST_CASE("concurrent redact() calls on one Redactor agree") {
  std::mt19937_64 rng(11);
  std::vector<std::string> secrets;
  for (int i = 0; i < 100; ++i) secrets.push_back(randomToken(rng, 16));
  const Redactor r(secrets);
  std::string text;
  for (int i = 0; i < 3000; ++i) text += "x " + secrets[i % 100] + " api_key=abc" + std::to_string(i) + "\n";
  const std::string expected = r.redact(text);
  std::vector<std::string> results(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 5; ++k) results[t] = r.redact(text);
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& res : results) CHECK(res == expected);
}

TEST_CASE("parseDotEnv: comments, export, quotes, escapes, multi-line values") {
  const auto env = pine::parseDotEnv(
      "# comment\n"
      "\n"
      "PLAIN=value-one  # trailing comment\n"
      "export EXPORTED=exported-value\n"
      "DOUBLE=\"a \\\"quoted\\\" value\\n\"\n"
      "SINGLE='literal \\n value'\n"
      "  SPACED = spaced-value  \r\n"
      "MULTI=\"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\"\n"
      "AFTER=after-multi\n"
      "EMPTY=\n"
      "not a pair\n");
  REQUIRE(env.size() == 8);
  CHECK(env[0] == std::pair<std::string, std::string>{"PLAIN", "value-one"});
  CHECK(env[1] == std::pair<std::string, std::string>{"EXPORTED", "exported-value"});
  CHECK(env[2].second == "a \"quoted\" value\n");
  CHECK(env[3].second == "literal \\n value");
  CHECK(env[4] == std::pair<std::string, std::string>{"SPACED", "spaced-value"});
  CHECK(env[5].second == "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----");
  CHECK(env[6] == std::pair<std::string, std::string>{"AFTER", "after-multi"});
  CHECK(env[7] == std::pair<std::string, std::string>{"EMPTY", ""});
}

TEST_CASE("pinectl redact: .env values and the control token, patterns without a .env") {
  TempHome home;
  home.write(".env",
             "OPENAI_API_KEY=opaque-provider-value-1\n"
             "export DB_PASS=\"Db Pass W0rd\"\n"
             "PORT=8080\n");
  home.write("data/http-token", "c0ntrol-t0ken-abcdef0123456789\n");
  std::istringstream in(
      "provider opaque-provider-value-1\n"
      "db Db Pass W0rd\n"
      "ctl c0ntrol-t0ken-abcdef0123456789\n"
      "port 8080\n"
      "pattern ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789\n");
  std::ostringstream out;
  CHECK(pine::cmdRedact(home.root.string(), in, out) == 0);
  CHECK(out.str() ==
        "provider [redacted]\n"
        "db [redacted]\n"
        "ctl [redacted]\n"
        "port 8080\n"
        "pattern [redacted]\n");

  TempHome bare;  // no .env, no token: patterns only
  std::istringstream in2("password=hunter22 and opaque-provider-value-1\n");
  std::ostringstream out2;
  CHECK(pine::cmdRedact(bare.root.string(), in2, out2) == 0);
  CHECK(out2.str() == "password=[redacted] and opaque-provider-value-1\n");
}

TEST_CASE("pinectl redact: a JSON line is also read with its strings decoded; other lines as text") {
  TempHome home;
  home.write(".env", "OPENAI_API_KEY=opaque-provider-value-1\n");
  std::istringstream in(
      "{\"key\": \"opaque\\u002dprovider-value-1\", \"n\": 1}\n"   // the value with an escaped '-'
      "  [\"\\u006fpaque-provider-value-1\"]\n"                        // an array, after spaces
      "{\"t\": \"ghp_\\u0061BcDeFgHiJkLmNoPqRsTuVwXyZ0123456789\"}\n"  // a pattern, escaped
      "text opaque\\u002dprovider-value-1\n"                          // not JSON: as written
      "{\"plain\": \"caf\\u00e9\"}\n"                                 // nothing to hide: unchanged
      "last line opaque-provider-value-1\n"
      "{\"end\": \"opaque\\u002dprovider-value-1\"}");                // JSON, no newline at the end
  std::ostringstream out;
  CHECK(pine::cmdRedact(home.root.string(), in, out) == 0);
  CHECK(out.str() ==
        "{\"key\": \"[redacted]\", \"n\": 1}\n"
        "  [\"[redacted]\"]\n"
        "{\"t\": \"[redacted]\"}\n"
        "text opaque\\u002dprovider-value-1\n"
        "{\"plain\": \"caf\\u00e9\"}\n"
        "last line [redacted]\n"
        "{\"end\": \"[redacted]\"}");
}

TEST_CASE("pinectl redact: a JSON line longer than 1 MiB is passed on in pieces, whole and unchanged") {
  // The JSON reading holds a line until its end: past 1 MiB it lets go (the text redactor still
  // read all of it), so that a line without an end cannot take all memory.
  TempHome home;
  const std::string huge = "{\"k\": \"" + std::string(3 << 20, 'x') + "\"}\n{\"after\": 1}\n";
  std::istringstream in(huge);
  std::ostringstream out;
  CHECK(pine::cmdRedact(home.root.string(), in, out) == 0);
  CHECK(out.str() == huge);
}

TEST_CASE("pinectl redact: an unreadable .env is an error, not a silent pass") {
  if (geteuid() == 0) return;  // root reads any file
  TempHome home;
  home.write(".env", "KEY=some-secret-value\n");
  chmod((home.root / ".env").c_str(), 0);
  std::istringstream in("some-secret-value\n");
  std::ostringstream out;
  CHECK(pine::cmdRedact(home.root.string(), in, out) == 1);
  CHECK(out.str().empty());
}

// ---------------------------------------------------------------- stream == whole, by construction

namespace {

// Control bytes and odd characters shown, so a failing input can be read in the log.
std::string visible(std::string_view s) {
  std::string v;
  for (unsigned char c : s) {
    if (c == '\n') {
      v += "\\n";
    } else if (c < 0x20 || c >= 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      v += "\\x";
      v += kHex[c >> 4];
      v += kHex[c & 15];
    } else {
      v += static_cast<char>(c);
    }
  }
  return v;
}

std::string b64Chars(std::mt19937_64& rng, std::size_t n) {
  static constexpr char kAbc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s += kAbc[rng() % 64];
  return s;
}

std::string feedAll(StreamRedactor& s, std::string_view text, const std::vector<std::size_t>& cuts) {
  std::string out;
  std::size_t pos = 0;
  for (std::size_t c : cuts) {
    out += s.feed(text.substr(pos, c - pos));
    pos = c;
  }
  out += s.feed(text.substr(pos));
  return out + s.finish();
}

std::string twoPieces(const Redactor& r, std::string_view text, std::size_t cut) {
  StreamRedactor s(r);
  return feedAll(s, text, {cut});
}

std::vector<std::size_t> randomCuts(std::mt19937_64& rng, std::size_t size, std::size_t maxChunk) {
  std::vector<std::size_t> cuts;
  for (std::size_t pos = 1 + rng() % maxChunk; pos < size; pos += 1 + rng() % maxChunk) cuts.push_back(pos);
  return cuts;
}

// A private key block: with or without its END line, sometimes JSON-escaped.
std::string pemBlock(std::mt19937_64& rng) {
  static const char* kKinds[] = {"RSA PRIVATE KEY", "PRIVATE KEY", "OPENSSH PRIVATE KEY", "EC PRIVATE KEY",
                                 "ENCRYPTED PRIVATE KEY"};
  const std::string kind = kKinds[rng() % 5];
  const std::string nl = rng() % 5 == 0 ? "\\n" : "\n";
  std::string s = "-----BEGIN " + kind + "-----" + nl;
  for (int k = 1 + static_cast<int>(rng() % 6); k > 0; --k) s += b64Chars(rng, 8 + rng() % 64) + nl;
  if (rng() % 4 != 0) s += "-----END " + kind + "-----";
  return s;
}

// Bytes the fuzzer found inside key bodies and around matches.
void insertOdd(std::mt19937_64& rng, std::string& s, int count) {
  static constexpr char kOdd[] = {'\x01', '\x7f', '"', '\'', '.', '\\', '\n', '\r', '\t', ' ', '-',
                                  '=',    ':',    '#', '\0', '\x1b', '{', '}', '`', '@'};
  for (; count > 0; --count) s.insert(s.begin() + static_cast<long>(rng() % (s.size() + 1)), kOdd[rng() % sizeof kOdd]);
}

struct Generator {
  std::mt19937_64 rng;
  std::vector<std::string> lines;  // the corpus, secrets and look-alikes
  std::vector<std::string> known;  // the Redactor's values, several spanning lines

  explicit Generator(std::uint64_t seed) : rng(seed) {
    for (const auto& file : {"secrets.txt", "lookalikes.txt"}) {
      for (const Case& c : loadCorpus(file)) lines.push_back(c.input);
    }
    for (int i = 0; i < 8; ++i) known.push_back(randomToken(rng, 8 + rng() % 24));
    known.push_back("first-line-AAAA\nsecond-line-BBBB");
    known.push_back("multi-line\nknown value\nthird line");
    known.push_back("ends-with-a-newline-1\n");
    known.push_back("aaaa\naaaa\naaaa-x");  // its own first lines repeat inside it
    known.push_back("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEF\n-----END PRIVATE KEY-----");
  }

  std::string token() { return randomToken(rng, 8 + rng() % 20); }

  std::string part() {
    switch (rng() % 10) {
      case 0:
      case 1: {
        std::string s;
        for (int k = 1 + static_cast<int>(rng() % 4); k > 0; --k) s += lines[rng() % lines.size()] + "\n";
        return s;
      }
      case 2:
        return pemBlock(rng);
      case 3: {  // a known value, its first lines, or the value followed by its own start
        const std::string& v = known[rng() % known.size()];
        switch (rng() % 4) {
          case 0: return v;
          case 1: return v.substr(0, v.find('\n') + 1);
          case 2: return v + v.substr(0, v.find('\n') + 1) + "zz";
          default: return v + v;
        }
      }
      case 4:  // a quoted flag value over a line end, closed or not
        return "mysql --password " + std::string(rng() % 2 ? "\"" : "'") + token() + "\n" + token() +
               (rng() % 3 ? "\" -h db" : "") + "\n";
      case 5:  // a quoted value carried on by a backslash, in YAML or inside a JSON string
        return rng() % 2 ? "password: \"" + token() + "\\\n" + token() + "\"\n"
                         : "{\"msg\":\"token: \\\"" + token() + "\\\n" + token() + "\\\"\"}\n";
      case 6:  // a long command continued over lines
        return "curl https://api.example.com \\\n" + std::string(rng() % 2 ? "  " : "") + "-u admin:" + token() +
               " \\\n  --user bob:" + token() + "\n";
      case 7:
        return "Authorization: Bearer " + token() + "\nghp_" + randomToken(rng, 36) + " sk-proj-" +
               randomToken(rng, 30) + "\n";
      case 8: {
        std::string s;
        for (int k = 1 + static_cast<int>(rng() % 5); k > 0; --k) s += b64Chars(rng, 1 + rng() % 70) + "\n";
        return s;
      }
      default: {
        std::string s;
        for (int k = static_cast<int>(rng() % 40); k > 0; --k) s += static_cast<char>(rng() % 128);
        return s;
      }
    }
  }

  std::string text() {
    std::string t;
    for (int k = 1 + static_cast<int>(rng() % 6); k > 0; --k) {
      t += part();
      static const char* kSep[] = {"\n", "", " ", "\r\n"};
      t += kSep[rng() % 4];
    }
    if (rng() % 2) insertOdd(rng, t, 1 + static_cast<int>(rng() % 3));
    return t;
  }
};

}  // namespace

TEST_CASE("stream: redact() of the whole text, for every split of thousands of generated inputs") {
  Generator gen(20240518);
  const Redactor r(gen.known);
  int inputs = 0, streams = 0, failures = 0;
  auto expectSame = [&](const std::string& text, const std::string& whole, const std::vector<std::size_t>& cuts) {
    ++streams;
    StreamRedactor s(r);
    const std::string got = feedAll(s, text, cuts);
    if (got == whole || ++failures > 5) return;
    std::string at;
    for (std::size_t c : cuts) at += std::to_string(c) + " ";
    FAIL_CHECK("input: " << visible(text) << "\n  cuts:   " << at << "\n  whole:  " << visible(whole)
                         << "\n  stream: " << visible(got));
  };
  for (int n = 0; n < 3000; ++n, ++inputs) {
    const std::string text = gen.text();
    const std::string whole = r.redact(text);
    for (const std::string& v : gen.known) {
      if (v.find_first_of("[]") == std::string::npos && whole.find(v) != std::string::npos) {
        FAIL_CHECK("known value left: " << visible(v) << " in " << visible(whole));
      }
    }
    for (std::size_t maxChunk : {1u, 2u, 5u, 13u, 64u, 1000u}) expectSame(text, whole, randomCuts(gen.rng, text.size(), maxChunk));
    if (n % 5 == 0) {  // every cut into two pieces
      for (std::size_t c = 1; c < text.size(); ++c) expectSame(text, whole, {c});
    }
  }
  CHECK(failures == 0);
  MESSAGE(inputs << " inputs, " << streams << " splits");
}

TEST_CASE("stream: with its limits shrunk, the cut at the cap gives what the whole text fed at once gives") {
  Generator gen(77);
  const Redactor r(gen.known);
  int failures = 0;
  for (int n = 0; n < 600; ++n) {
    std::string text;
    for (int k = 1 + static_cast<int>(gen.rng() % 8); k > 0; --k) text += gen.text();
    if (n % 3 == 0) text += std::string(3000, 'a') + " " + gen.token();  // one line past the cap
    const std::size_t maxHold = 64 + gen.rng() % 1500;
    const std::size_t tail = maxHold / (2 + gen.rng() % 6), context = maxHold / (2 + gen.rng() % 12);
    const std::string whole = StreamTesting::whole(r, text, maxHold, tail, context);
    for (std::size_t maxChunk : {1u, 7u, 100u, 5000u}) {
      StreamRedactor s = StreamTesting::make(r, maxHold, tail, context);
      const std::string got = feedAll(s, text, randomCuts(gen.rng, text.size(), maxChunk));
      if (got != whole && ++failures <= 5) {
        FAIL_CHECK("limits " << maxHold << "/" << tail << "/" << context << " chunk " << maxChunk
                             << "\n  input: " << visible(text) << "\n  whole:  " << visible(whole)
                             << "\n  stream: " << visible(got));
      }
    }
  }
  CHECK(failures == 0);
}

TEST_CASE("stream: texts longer than the cap agree with redact(), and find() matches redact()") {
  std::mt19937_64 rng(3);
  Generator gen(4);
  const Redactor r(gen.known);
  std::string text;
  while (text.size() < 3 * StreamRedactor::kMaxHold) {
    text += gen.text();
    if (rng() % 50 == 0) text += std::string(StreamRedactor::kMaxHold / 3, 'x') + " password=Hunter2Secret9 ";
  }
  const std::string whole = r.redact(text);
  CHECK(whole.find("Hunter2Secret9") == std::string::npos);
  std::string applied;
  std::size_t pos = 0;
  for (const auto& sp : r.find(text)) {
    applied.append(text, pos, sp.begin - pos);
    applied += kMarker;
    pos = sp.end;
  }
  applied.append(text, pos);
  CHECK(applied == whole);
  for (std::size_t maxChunk : {333u, 65536u, 3000000u}) {
    StreamRedactor s(r);
    CHECK(feedAll(s, text, randomCuts(rng, text.size(), maxChunk)) == whole);
  }
}

TEST_CASE("stream: memory stays bounded, and the held text is redacted at the cap") {
  const Redactor r({"Kn0wn-Secret-Value"});
  const std::size_t bound = StreamRedactor::kMaxHold + StreamRedactor::kContext + 64 * 1024;
  std::mt19937_64 rng(8);

  SUBCASE("a private key block that never ends: 64 KiB of it goes, the stream holds no more than that") {
    StreamRedactor s(r);
    std::string text = "-----BEGIN PRIVATE KEY-----\n", out;
    std::size_t maxHeld = 0;
    out += s.feed(text);
    std::vector<std::string> body;
    for (int i = 0; i < 40000; ++i) {
      body.push_back(b64Chars(rng, 64));
      out += s.feed(body.back() + "\n");
      text += body.back() + "\n";
      maxHeld = std::max(maxHeld, StreamTesting::held(s));
    }
    CHECK(!out.empty());  // released long before the end
    out += s.finish();
    CHECK(maxHeld < 2 * (64 + 1) * 1024);  // the 64 KiB it looks at for an END, and a front not yet dropped
    CHECK(out == r.redact(text));
    CHECK(out.starts_with(std::string(kMarker) + "\n"));
    for (int i = 0; i < 1000; ++i) CHECK_MESSAGE(out.find(body[static_cast<std::size_t>(i)]) == std::string::npos, i);
  }
  SUBCASE("one 5 MiB line with a secret every 100 KiB: cut inside, every secret found") {
    StreamRedactor s(r);
    std::string text, out;
    std::size_t maxHeld = 0, released = 0;
    for (int i = 0; i < 50; ++i) {
      std::string piece;
      while (piece.size() < 100 * 1024) piece += "lorem ipsum dolor ";
      piece += (i % 2 ? "Kn0wn-Secret-Value " : "password=Hunter2Secret9 ");
      text += piece;
      for (std::size_t p = 0; p < piece.size(); p += 4096) {
        out += s.feed(std::string_view(piece).substr(p, 4096));
        maxHeld = std::max(maxHeld, StreamTesting::held(s));
      }
      if (i == 25) released = out.size();
    }
    out += s.finish();
    CHECK(maxHeld <= bound);
    CHECK(released > 0);
    CHECK(out == r.redact(text));
    CHECK(out.find("Kn0wn-Secret-Value") == std::string::npos);
    CHECK(out.find("Hunter2Secret9") == std::string::npos);
  }
  SUBCASE("quoted values chained over every line end for 3 MiB") {
    StreamRedactor s(r);
    std::string text, out;
    std::size_t maxHeld = 0;
    for (int i = 0; text.size() < 3 * StreamRedactor::kMaxHold; ++i) {
      const std::string line = "\"password\": \"v" + std::to_string(i) + "\\\nw" + std::to_string(i) + "\", \"token\": \"t";
      text += line;
      out += s.feed(line);
      maxHeld = std::max(maxHeld, StreamTesting::held(s));
    }
    out += s.finish();
    CHECK(maxHeld <= bound);
    CHECK(out == r.redact(text));
  }
  SUBCASE("a token longer than kTail at the cut is redacted to the end of its line") {
    const std::string token = "sk-proj-" + randomToken(rng, 2 * StreamRedactor::kMaxHold);
    const std::string text = "key " + token + " after\nnext line\n";
    StreamRedactor s(r);
    std::string out;
    for (std::size_t p = 0; p < text.size(); p += 100000) out += s.feed(std::string_view(text).substr(p, 100000));
    out += s.finish();
    CHECK(out == "key [redacted]\nnext line\n");
    CHECK(r.redact(text) == out);
  }
}

TEST_CASE("patterns: each is found at a line start, on a continuation line, inside quotes") {
  struct Sample {
    std::string text, secret;
  };
  const std::vector<Sample> samples = {
      {"ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789", "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"},
      {"sk-proj-abcdefghijklmnopqrstuvwx1234", "abcdefghijklmnopqrstuvwx1234"},
      {"AKIAABCDEFGHIJKLMNOP", "ABCDEFGHIJKLMNOP"},
      {"xoxb-1234567890-abcdefABCDEF", "1234567890-abcdefABCDEF"},
      {"AIzaSyA1234567890abcdefghijklmnopqrstu", "SyA1234567890abcdefghijklmnopqrstu"},
      {"glpat-abcdefghij1234567890", "abcdefghij1234567890"},
      {"hf_abcdefghijklmnopqrstuvwxyz1234", "abcdefghijklmnopqrstuvwxyz1234"},
      {"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcdefghijklmnop", "eyJzdWIiOiIxMjM0In0.abcdefghijklmnop"},
      {"SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG", "abcdefghijklmnopqrstuvwxyz0123456789"},
      {"123456789:AAHabcdefghijklmnopqrstuvwxyz012345", "AAHabcdefghijklmnopqrstuvwxyz012345"},
      {"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----",
       "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"},
      {"Bearer abcDEF1234567890xyz", "abcDEF1234567890xyz"},
      {"Basic dXNlcjpwYXNzd29yZDEyMw==", "dXNlcjpwYXNzd29yZDEyMw"},
      {"password=Hunter2Secret9", "Hunter2Secret9"},
      {"api_key: Zx9Yw8Vu7Ts6", "Zx9Yw8Vu7Ts6"},
      {"https://user:pw9Xy7Zq12@db.example.com/x", "pw9Xy7Zq12"},
      {"https://hooks.slack.com/services/T0AB12CD3/B0EF45GH6/Ab12cd34Ef56gh78Ij90", "Ab12cd34Ef56gh78Ij90"},
      {"-u admin:hunter2secret", "hunter2secret"},
      {"--user admin:hunter2secret", "hunter2secret"},
      {"--password Hunter2Secret9", "Hunter2Secret9"},
      {"--token 'Tok3nValue99'", "Tok3nValue99"},
  };
  const std::vector<std::string> contexts = {
      "{}",  "log: x {} y", "first line\n{}\nlast", "curl https://x \\\n{} \\\n  -d x", "curl https://x \\\n    {}",
      "\"{}\"", "'{}'", "cmd \"{}\" x", "\t{}", "a\r\n{}\r\n",
  };
  const Redactor r({});
  std::mt19937_64 rng(1);
  for (const Sample& sample : samples) {
    for (const std::string& ctx : contexts) {
      std::string text = ctx;
      text.replace(text.find("{}"), 2, sample.text);
      const std::string out = r.redact(text);
      CHECK_MESSAGE(out.find(sample.secret) == std::string::npos, visible(text) << " -> " << visible(out));
      CHECK_MESSAGE(out.find(kMarker) != std::string::npos, visible(text));
      CHECK(streamed(r, text, rng, 3) == out);
    }
  }
}

TEST_CASE("regression: a private key block with an odd byte in its body is held until its END") {
  const Redactor r({});
  for (const char odd : {'\x01', '"', '.', '\x7f', '\''}) {
    const std::string text = std::string("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx1") + odd +
                             "zz\nSECRETKEYLINE2abcdef\n-----END RSA PRIVATE KEY-----\nafter\n";
    CHECK(r.redact(text) == "[redacted]\nafter\n");
    StreamRedactor s(r);
    std::string out;
    for (char c : text) out += s.feed(std::string_view(&c, 1));
    out += s.finish();
    CHECK_MESSAGE(out == "[redacted]\nafter\n", visible(out));
  }
}

TEST_CASE("regression: a multi-line known value followed at once by the start of its own first line") {
  const Redactor r({"first-line-AAAA\nsecond-line-BBBB"});
  const std::string text = "x first-line-AAAA\nsecond-line-BBBBfirst-line-AAAA\nzzz\n";
  CHECK(r.redact(text) == "x [redacted]first-line-AAAA\nzzz\n");
  for (std::size_t c = 1; c < text.size(); ++c) CHECK(twoPieces(r, text, c) == r.redact(text));
}

TEST_CASE("regression: a quoted flag value and a backslash-continued password across a line end") {
  const Redactor r({});
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"mysql --password \"abc\ndefSECRET\" -h db\nnext\n", "mysql --password \"[redacted]\" -h db\nnext\n"},
      {"password: \"abc\\\ndefSECRET\"\nnext\n", "password: \"[redacted]\"\nnext\n"},
      {"{\"log\":\"token: \\\"abc\\\ndefSECRET\\\"\"}\n", "{\"log\":\"token: \\\"[redacted]\\\"\"}\n"},
      // An open quote that never closes covers the rest of its line.
      {"mysql --password \"abcSECRET\nnext\n", "mysql --password \"[redacted]\nnext\n"},
  };
  for (const auto& c : cases) {
    const std::string& text = c.first;  // not a structured binding: clang 14 cannot capture those
    const std::string& expected = c.second;
    CHECK(r.redact(text) == expected);
    for (std::size_t c = 1; c < text.size(); ++c) CHECK_MESSAGE(twoPieces(r, text, c) == expected, visible(text) << " at " << c);
  }
}

TEST_CASE("regression: -u user:password at the start of a line, also through pinectl redact") {
  const Redactor r({});
  CHECK(r.redact("curl https://x \\\n-u admin:hunter2secret\n") == "curl https://x \\\n-u admin:[redacted]\n");
  CHECK(r.redact("-u admin:hunter2secret") == "-u admin:[redacted]");
  CHECK(r.redact("[\"-u admin:hunter2secret\"]") == "[\"-u admin:[redacted]\"]");
  CHECK(r.redact("menu -u x") == "menu -u x");  // not a credential: no colon
  TempHome home;
  std::istringstream in("curl https://x \\\n-u admin:hunter2secret\n");
  std::ostringstream out;
  CHECK(pine::cmdRedact(home.root.string(), in, out) == 0);
  CHECK(out.str() == "curl https://x \\\n-u admin:[redacted]\n");
}
