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
#include "supervisor/redact/redactor.h"

using pine::redact::kMarker;
using pine::redact::Redactor;
using pine::redact::StreamRedactor;

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
