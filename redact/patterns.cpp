// Patterned secrets in one pass. Every pattern starts at a recognisable pair of
// bytes (a prefix such as "gh" of ghp_, "ey" of a JWT, "--" of a PEM header, or a
// '=' / ':' that may end a key such as password=). A 64 Ki-bit table of those
// pairs rejects almost every position with one load and one bit test; only the
// hits run the small matchers below. Each matcher checks the byte before the
// match, so "task-sk-1", "risk-free" and hashes inside longer words stay. Matchers
// see only their own line unless they are one of the three that may span lines, and
// those report when the view ends too early: that is what lets StreamRedactor emit
// text as soon as its redaction is final, and no sooner.
#include <algorithm>
#include <array>
#include <cstring>

#include "redact/detail.h"

namespace pine::redact::detail {
namespace {

// What a matcher that may run past the end of its line reads: the whole view, where
// the line ends, and whether the view ends where the input does. When it does not and
// the answer lies past it, the matcher sets `open` and pushes nothing: the caller
// tries again from the same position once more text has arrived.
struct Reach {
  std::string_view all;
  std::size_t lineStop;  // just past the line's '\n', or all.size()
  bool atEnd;
  bool open = false;
};

enum class Need : std::uint8_t {
  kNone,     // the prefix alone is distinctive
  kEntropy,  // the body must hold a digit or both cases (hyphenated words are not keys)
};

struct Prefix {
  std::string_view text;
  std::uint16_t body;  // character classes of the part after the prefix
  std::uint16_t min;   // body length bounds (max 0 = unbounded)
  std::uint16_t max;
  Need need;
};

// Formats from the providers' documentation. Stripe publishable keys (pk_live_,
// pk_test_) and Twilio account SIDs (AC...) are absent on purpose: they are public
// identifiers that ship in web pages, and hiding them would only hinder debugging.
constexpr Prefix kPrefixes[] = {
    // OpenAI, Anthropic and compatible providers
    {"sk-proj-", kTok, 20, 0, Need::kNone},
    {"sk-svcacct-", kTok, 20, 0, Need::kNone},
    {"sk-admin-", kTok, 20, 0, Need::kNone},
    {"sk-ant-", kTok, 20, 0, Need::kNone},
    {"sk-or-", kTok, 20, 0, Need::kNone},
    {"sk-", kTok, 20, 0, Need::kEntropy},
    // Stripe secret and restricted keys, webhook secrets
    {"sk_live_", kAlnum, 16, 0, Need::kNone},
    {"sk_test_", kAlnum, 16, 0, Need::kNone},
    {"rk_live_", kAlnum, 16, 0, Need::kNone},
    {"rk_test_", kAlnum, 16, 0, Need::kNone},
    {"whsec_", kB64, 20, 0, Need::kNone},
    // GitHub
    {"ghp_", kAlnum, 30, 0, Need::kNone},
    {"gho_", kAlnum, 30, 0, Need::kNone},
    {"ghu_", kAlnum, 30, 0, Need::kNone},
    {"ghs_", kAlnum, 30, 0, Need::kNone},
    {"ghr_", kAlnum, 30, 0, Need::kNone},
    {"github_pat_", kAlnum | kUnder, 40, 0, Need::kNone},
    // GitLab
    {"glpat-", kTok, 20, 0, Need::kNone},
    {"gldt-", kTok, 20, 0, Need::kNone},
    {"glrt-", kTok, 20, 0, Need::kNone},
    {"glptt-", kTok, 20, 0, Need::kNone},
    {"glft-", kTok, 20, 0, Need::kNone},
    {"glsoat-", kTok, 20, 0, Need::kNone},
    {"glcbt-", kTok, 20, 0, Need::kNone},
    {"glimt-", kTok, 20, 0, Need::kNone},
    {"gloas-", kTok, 20, 0, Need::kNone},
    // Grafana
    {"glc_", kB64 | kUnder, 32, 0, Need::kNone},
    {"glsa_", kAlnum | kUnder, 32, 0, Need::kNone},
    // AWS access key ids (exactly 16 after the prefix)
    {"AKIA", kUpper | kDigit, 16, 16, Need::kNone},
    {"ASIA", kUpper | kDigit, 16, 16, Need::kNone},
    {"ABIA", kUpper | kDigit, 16, 16, Need::kNone},
    {"ACCA", kUpper | kDigit, 16, 16, Need::kNone},
    // Slack
    {"xoxb-", kAlnum | kDash, 10, 0, Need::kEntropy},
    {"xoxp-", kAlnum | kDash, 10, 0, Need::kEntropy},
    {"xoxa-", kAlnum | kDash, 10, 0, Need::kEntropy},
    {"xoxr-", kAlnum | kDash, 10, 0, Need::kEntropy},
    {"xoxs-", kAlnum | kDash, 10, 0, Need::kEntropy},
    {"xoxo-", kAlnum | kDash, 10, 0, Need::kEntropy},
    {"xoxe.xoxp-", kAlnum | kDash, 10, 0, Need::kEntropy},
    {"xoxe-", kAlnum | kDash, 10, 0, Need::kEntropy},
    {"xapp-", kAlnum | kDash, 20, 0, Need::kEntropy},
    // Google
    {"AIza", kTok, 30, 0, Need::kNone},
    {"GOCSPX-", kTok, 20, 0, Need::kNone},
    {"ya29.", kTok | kDot, 20, 0, Need::kNone},
    // Package registries and model hubs
    {"npm_", kAlnum, 30, 0, Need::kNone},
    {"pypi-", kTok, 32, 0, Need::kNone},
    {"hf_", kAlnum, 30, 0, Need::kNone},
    {"api_org_", kAlnum, 30, 0, Need::kNone},
    // Twilio API key SID, DigitalOcean, Shopify, Square, Linear, Postman, Databricks
    {"SK", kHex, 32, 32, Need::kNone},
    {"dop_v1_", kHexLower, 40, 0, Need::kNone},
    {"doo_v1_", kHexLower, 40, 0, Need::kNone},
    {"dor_v1_", kHexLower, 40, 0, Need::kNone},
    {"shpat_", kAlnum, 32, 0, Need::kNone},
    {"shpss_", kAlnum, 32, 0, Need::kNone},
    {"shpca_", kAlnum, 32, 0, Need::kNone},
    {"shppa_", kAlnum, 32, 0, Need::kNone},
    {"sq0atp-", kTok, 22, 0, Need::kNone},
    {"sq0csp-", kTok, 40, 0, Need::kNone},
    {"lin_api_", kAlnum, 32, 0, Need::kNone},
    {"PMAK-", kAlnum | kDash, 40, 0, Need::kNone},
    {"dapi", kHexLower, 32, 32, Need::kNone},
    // HashiCorp Vault, New Relic, Sentry, Atlassian, Doppler, age, Mailgun, fly.io
    {"hvs.", kTok, 24, 0, Need::kNone},
    {"hvb.", kTok, 24, 0, Need::kNone},
    {"NRAK-", kUpper | kDigit, 27, 0, Need::kNone},
    {"sntrys_", kB64 | kUnder, 40, 0, Need::kNone},
    {"sntryu_", kHexLower, 64, 0, Need::kNone},
    {"ATATT", kTok | kEq, 50, 0, Need::kNone},
    {"dp.pt.", kAlnum, 40, 0, Need::kNone},
    {"dp.st.", kAlnum | kDot | kUnder, 40, 0, Need::kNone},
    {"dp.ct.", kAlnum, 40, 0, Need::kNone},
    {"dp.sa.", kAlnum, 40, 0, Need::kNone},
    {"AGE-SECRET-KEY-1", kUpper | kDigit, 50, 0, Need::kNone},
    {"key-", kHexLower, 32, 32, Need::kNone},
    {"fo1_", kTok, 40, 0, Need::kNone},
    // Docker Hub, Notion, Figma, Mapbox secret tokens, Facebook access tokens
    {"dckr_pat_", kTok, 20, 0, Need::kNone},
    {"dckr_oat_", kTok, 20, 0, Need::kNone},
    {"ntn_", kAlnum, 40, 0, Need::kNone},
    {"secret_", kAlnum, 40, 0, Need::kEntropy},
    {"figd_", kTok, 30, 0, Need::kNone},
    {"sk.eyJ", kTok | kDot, 40, 0, Need::kNone},
    {"EAA", kAlnum, 60, 0, Need::kEntropy},
};

// A prefix's first (up to) four bytes as one word, so most candidates are rejected
// by a single compare instead of a memcmp call.
struct PrefixKey {
  std::uint32_t word;
  std::uint32_t mask;
  const Prefix* prefix;
};

struct Tables {
  // One bit per (byte before is a token character, byte, next byte). Matchers that
  // start at a letter need a word boundary, so with a token character before them
  // their pairs are absent: "ke" in monkey or "sk" in desk never leave the table.
  std::array<std::uint64_t, 2048> trigger{};
  std::array<std::vector<PrefixKey>, 256> byFirst;
};

inline std::uint32_t load32(const char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

void mark(Tables& t, unsigned char a, unsigned char b) {
  for (unsigned tokBefore = 0; tokBefore < 2; ++tokBefore) {
    if (tokBefore && is(static_cast<char>(a), kUpper | kLower)) continue;
    const unsigned v = a | (b << 8) | (tokBefore << 16);
    t.trigger[v >> 6] |= 1ull << (v & 63);
  }
}

const Tables& tables() {
  static const Tables t = [] {
    Tables t;
    for (const Prefix& p : kPrefixes) {
      mark(t, p.text[0], p.text[1]);
      PrefixKey key{0, 0, &p};
      for (std::size_t k = 0; k < 4 && k < p.text.size(); ++k) {
        key.word |= static_cast<std::uint32_t>(static_cast<unsigned char>(p.text[k])) << (8 * k);
        key.mask |= 0xFFu << (8 * k);
      }
      t.byFirst[static_cast<unsigned char>(p.text[0])].push_back(key);
    }
    for (auto& list : t.byFirst) {
      std::stable_sort(list.begin(), list.end(), [](const PrefixKey& a, const PrefixKey& b) {
        return a.prefix->text.size() > b.prefix->text.size();
      });
    }
    for (int b = 0; b < 256; ++b) {
      mark(t, '=', b);  // key=value
      mark(t, ':', b);  // key: value, scheme://user:pass@, bot id:token
    }
    mark(t, '-', '-');  // -----BEGIN ... PRIVATE KEY, --password VALUE
    mark(t, '-', 'u');  // curl -u user:pass
    for (char a : {'B', 'b'}) {
      for (char b : {'E', 'e', 'A', 'a'}) mark(t, a, b);  // Bearer, Basic
    }
    mark(t, 'e', 'y');  // JWT
    for (char c : {'1', '2', '5', '6', '7', 'y', 'g', 'a'}) mark(t, '$', c);  // crypt hashes: $6$salt$hash
    mark(t, '-', 'p');                                                     // mysql -pPASS, sshpass -p PASS
    for (char a : {'p', 'P'}) mark(t, a, 'a');                             // .netrc: ... password PASS
    for (char a : {'C', 'c', 'S', 's'}) mark(t, a, a == 'C' || a == 'c' ? 'o' : 'e');  // Cookie:, Set-Cookie:
    mark(t, 'S', 'G');  // SendGrid
    // Discord bot tokens start with the base64 of a decimal user id.
    for (char a : {'M', 'N', 'O'}) {
      for (char b : {'D', 'T', 'j', 'z'}) mark(t, a, b);
    }
    return t;
  }();
  return t;
}

inline bool boundaryBefore(std::string_view t, std::size_t i) { return i == 0 || !is(t[i - 1], kTok); }

inline std::size_t runEnd(std::string_view t, std::size_t i, std::uint16_t mask) {
  while (i < t.size() && is(t[i], mask)) ++i;
  return i;
}

inline char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

// Case-insensitive match of a lowercase word at t[i].
bool iAt(std::string_view t, std::size_t i, std::string_view word) {
  if (t.size() - i < word.size()) return false;
  for (std::size_t k = 0; k < word.size(); ++k) {
    if (lower(t[i + k]) != word[k]) return false;
  }
  return true;
}

bool hasClass(std::string_view s, std::uint16_t mask) {
  return std::any_of(s.begin(), s.end(), [&](char c) { return is(c, mask); });
}

// Random-looking rather than a word: a digit, a symbol, or an upper-case letter after the first.
bool tokenish(std::string_view s) {
  if (hasClass(s, kDigit | kDot | kDash | kUnder | kPlus | kSlash | kEq | kTilde)) return true;
  return hasClass(s.substr(1), kUpper) && hasClass(s, kLower);
}

bool entropyOk(std::string_view body) {
  return hasClass(body, kDigit) || (hasClass(body, kUpper) && hasClass(body, kLower));
}

// ---------------------------------------------------------------- prefixes

std::size_t matchPrefix(std::string_view t, std::size_t i, std::vector<Span>& out) {
  const auto& list = tables().byFirst[static_cast<unsigned char>(t[i])];
  if (list.empty() || !boundaryBefore(t, i) || t.size() - i < 4) return 0;
  const std::uint32_t word = load32(t.data() + i);
  for (const PrefixKey& key : list) {
    if ((word & key.mask) != key.word) continue;
    const Prefix* p = key.prefix;
    if (t.compare(i, p->text.size(), p->text) != 0) continue;
    const std::size_t b = i + p->text.size();
    const std::size_t e = runEnd(t, b, p->body);
    const std::size_t len = e - b;
    if (len < p->min || (p->max && len > p->max)) continue;
    if (e < t.size() && is(t[e], kAlnum)) continue;  // part of a longer word
    if (p->need == Need::kEntropy && !entropyOk(t.substr(b, len))) continue;
    if (isPlaceholder(t.substr(b, len))) continue;  // glpat-xxxxxxxxxxxxxxxxxxxx in documentation
    out.push_back({i, e});
    return e;
  }
  return 0;
}

// ---------------------------------------------------------------- structured tokens

// header.payload.signature (and the five parts of a JWE), header starting "eyJ".
std::size_t matchJwt(std::string_view t, std::size_t i, std::vector<Span>& out) {
  if (i + 2 >= t.size() || t[i + 2] != 'J' || !boundaryBefore(t, i) || (i > 0 && t[i - 1] == '.')) return 0;
  std::size_t pos = runEnd(t, i, kTok);
  if (pos - i < 10) return 0;
  int parts = 1;
  std::size_t rest = 0, lastLen = 0, lastDot = 0;
  while (pos < t.size() && t[pos] == '.' && parts < 5) {
    const std::size_t e = runEnd(t, pos + 1, kTok);
    lastDot = pos;
    lastLen = e - pos - 1;
    rest += lastLen;
    pos = e;
    ++parts;
  }
  if (parts > 3 && lastLen == 0) {  // a sentence's full stop after the token
    pos = lastDot;
    --parts;
  }
  if (parts < 3 || rest < 8) return 0;
  out.push_back({i, pos});
  return pos;
}

// Discord bot token: base64(user id) . 6-7 chars . 27+ chars.
std::size_t matchDiscord(std::string_view t, std::size_t i, std::vector<Span>& out) {
  if (!boundaryBefore(t, i)) return 0;
  std::size_t e1 = runEnd(t, i, kTok);
  if (e1 - i < 23 || e1 - i > 28 || e1 >= t.size() || t[e1] != '.') return 0;
  std::size_t e2 = runEnd(t, e1 + 1, kTok);
  if (e2 - e1 - 1 < 6 || e2 - e1 - 1 > 7 || e2 >= t.size() || t[e2] != '.') return 0;
  std::size_t e3 = runEnd(t, e2 + 1, kTok);
  if (e3 - e2 - 1 < 27 || e3 - e2 - 1 > 40) return 0;
  if (!hasClass(t.substr(i, e3 - i), kDigit)) return 0;
  out.push_back({i, e3});
  return e3;
}

// SendGrid: SG.<22>.<43>
std::size_t matchSendGrid(std::string_view t, std::size_t i, std::vector<Span>& out) {
  if (i + 2 >= t.size() || t[i + 2] != '.' || !boundaryBefore(t, i)) return 0;
  std::size_t e1 = runEnd(t, i + 3, kTok);
  if (e1 - i - 3 < 16 || e1 >= t.size() || t[e1] != '.') return 0;
  std::size_t e2 = runEnd(t, e1 + 1, kTok);
  if (e2 - e1 - 1 < 16) return 0;
  out.push_back({i, e2});
  return e2;
}

// "-----BEGIN <kind> PRIVATE KEY-----" through the matching END line, found within
// kPemWindow bytes of the body whatever bytes the body holds. Without an END (a
// truncated paste) the block runs while the bytes look like PEM body, for at most
// kPemWindow bytes (and to the end of the line it reaches there): no key is that long,
// and the bound is what lets a stream decide.
std::size_t matchPem(Reach& r, std::size_t i, std::vector<Span>& out) {
  const std::string_view line = r.all.substr(0, r.lineStop);
  if (i + 11 > line.size() || line[i + 2] != '-' || line.compare(i, 11, "-----BEGIN ") != 0) return 0;
  const std::string_view header = line.substr(i + 11, 80);
  const std::size_t dashes = header.find("-----");
  if (dashes == std::string_view::npos) return 0;
  const std::string_view kind = header.substr(0, dashes);
  if (kind.find("PRIVATE KEY") == std::string_view::npos || kind.find('\n') != std::string_view::npos) return 0;
  const std::string_view t = r.all;
  const std::size_t n = t.size();
  const std::size_t body = i + 11 + dashes + 5;
  const std::size_t windowEnd = body + kPemWindow;
  auto more = [&](std::size_t need) { return !r.atEnd && n < need; };  // the answer lies past the view
  const std::size_t end = t.substr(0, windowEnd).find("-----END ", body);
  if (end == std::string_view::npos) {
    if (more(windowEnd)) return r.open = true, 0;
  } else {
    // The END line's closing dashes start within 100 bytes of "-----END ".
    const std::size_t closeLimit = std::min(windowEnd, end + 104);
    const std::size_t close = t.substr(0, closeLimit).find("-----", end + 9);
    if (close != std::string_view::npos) {
      out.push_back({i, close + 5});
      return close + 5;
    }
    if (more(closeLimit)) return r.open = true, 0;
  }
  const std::size_t stop = std::min(n, windowEnd);
  std::size_t e = body;
  while (e < stop && (is(t[e], kB64 | kSpace | kEol | kDash) || t[e] == '\\' || t[e] == ':' || t[e] == ',')) ++e;
  if (e == n && more(windowEnd)) return r.open = true, 0;
  if (e == windowEnd) {  // still key-like at the bound: the line it reached goes too
    while (e < n && !is(t[e], kEol)) ++e;
    if (e == n && !r.atEnd) return r.open = true, 0;
  }
  out.push_back({i, e});
  return e;
}

// ---------------------------------------------------------------- key = value

enum class KeyKind { kNone, kSecret, kAuthorization };

// Key names are compared lowercase with '-', '_' and '.' removed, so api_key,
// API-KEY, apiKey and spring.datasource.password all normalise the same way.
constexpr std::string_view kSecretSuffixes[] = {
    "password", "passwd", "passphrase", "secret", "token", "apikey", "accesskey", "secretkey",
    "privatekey", "accountkey", "encryptionkey", "signingkey", "masterkey", "sharedkey", "authkey",
    "xamzsignature", "secretkeybase",
};
constexpr std::string_view kSecretExact[] = {"pass", "pwd", "pw", "auth", "sig"};

KeyKind classifyKey(std::string_view key) {
  // Cheap reject on the last letter before normalising.
  std::size_t k = key.size();
  while (k > 0 && (key[k - 1] == '-' || key[k - 1] == '_' || key[k - 1] == '.')) --k;
  if (k == 0) return KeyKind::kNone;
  switch (lower(key[k - 1])) {
    case 'd': case 'e': case 't': case 'n': case 'y': case 's': case 'g': case 'h': case 'w':
      break;
    default:
      return KeyKind::kNone;
  }
  char buf[24];
  std::size_t len = 0;
  bool more = false;
  for (std::size_t j = k; j-- > 0;) {
    const char c = key[j];
    if (c == '-' || c == '_' || c == '.') continue;
    if (len == sizeof buf) {
      more = true;
      break;
    }
    buf[len++] = lower(c);
  }
  // buf holds the normalised key reversed: compare suffixes from their last letter.
  auto endsWith = [&](std::string_view s) {
    if (s.size() > len) return false;
    for (std::size_t k = 0; k < s.size(); ++k) {
      if (buf[k] != s[s.size() - 1 - k]) return false;
    }
    return true;
  };
  if (endsWith("authorization")) return KeyKind::kAuthorization;
  for (std::string_view s : kSecretSuffixes) {
    if (s.back() == buf[0] && endsWith(s)) return KeyKind::kSecret;
  }
  if (!more) {
    for (std::string_view s : kSecretExact) {
      if (s.size() == len && endsWith(s)) return KeyKind::kSecret;
    }
  }
  return KeyKind::kNone;
}

// The last two letters of every secret key name (password, token, api_key, auth ...):
// JSON and log keys almost all stop here, before the key is read.
inline bool plausibleEnding(char a, char b) {
  switch (b) {
    case '-': case '_': case '.': return true;  // normalised later
    case 'd': return a == 'r' || a == 'w';       // password, passwd, pwd
    case 'e': return a == 's' || a == 'r';       // passphrase, x-amz-signature
    case 't': return a == 'e';                   // secret
    case 'n': return a == 'e' || a == 'o';       // token, authorization
    case 'y': return a == 'e';                   // *key
    case 's': return a == 's';                   // pass
    case 'h': return a == 't';                   // auth
    case 'g': return a == 'i';                   // sig
    case 'w': return a == 'p';                   // pw
    default: return false;
  }
}

// An expression in code (os.environ["X"], get_token(), self.password, Optional[str])
// rather than a literal value.
bool isCodeLike(std::string_view v) {
  if (v.empty() || !(is(v[0], kUpper | kLower) || v[0] == '_')) return false;
  if (v.find('(') != std::string_view::npos || v.find('[') != std::string_view::npos) return true;
  if (v.find('.') == std::string_view::npos || v.back() == '.' || v.find("..") != std::string_view::npos) {
    return false;
  }
  return std::all_of(v.begin(), v.end(), [](char c) { return is(c, kAlnum | kUnder | kDot); });
}

// The value repeats the key's last segment: code passing a variable along.
bool sameWord(std::string_view value, std::string_view key) {
  const std::size_t dot = key.find_last_of('.');
  if (dot != std::string_view::npos) key = key.substr(dot + 1);
  if (value.size() != key.size()) return false;
  for (std::size_t k = 0; k < key.size(); ++k) {
    if (lower(value[k]) != lower(key[k])) return false;
  }
  return true;
}

enum class Mode {
  kAssign,  // key=value, key = value, key := value, key => value
  kQuoted,  // "key": value (JSON, Python dicts)
  kLine,    // key: value at the start of a line (YAML, HTTP headers)
  kWeak,    // key: value in running text
};

bool isAuthScheme(std::string_view w) {
  constexpr std::string_view kSchemes[] = {"bearer", "basic", "token", "bot", "digest", "apikey",
                                           "api-key", "key", "sso-key", "ssws", "negotiate", "ntlm",
                                           "aws4-hmac-sha256", "hmac", "oauth", "splunk", "dsn"};
  if (w.empty() || w.size() > 20) return false;
  char buf[20];
  for (std::size_t k = 0; k < w.size(); ++k) buf[k] = lower(w[k]);
  const std::string_view lw(buf, w.size());
  return std::find(std::begin(kSchemes), std::end(kSchemes), lw) != std::end(kSchemes);
}

// Where a quoted value that starts at vs ends: at its closing quote (or, for a value in
// \"...\" inside a JSON string, at the next \"), or at the end of its line. A backslash
// before the end of the line carries the value on to the next line (shell and YAML
// double quotes); past its first line a value runs for at most kMaxContinuation bytes.
std::size_t quotedEnd(Reach& r, std::size_t vs, char q) {
  const std::string_view t = r.all;
  const std::size_t n = t.size();
  const std::size_t bound = std::min(n, r.lineStop + kMaxContinuation);
  std::size_t ve = vs;
  if (q == '\\') {
    while (ve < bound && !(t[ve] == '\\' && ve + 1 < n && t[ve + 1] == '"') && !is(t[ve], kEol)) {
      ve += t[ve] == '\\' ? 2 : 1;
    }
  } else {
    while (ve < bound && t[ve] != q && !is(t[ve], kEol)) ve += (t[ve] == '\\' && ve + 1 < n && q != '\'') ? 2 : 1;
  }
  // Only a value carried past the end of its line can reach the end of the view.
  if (ve >= n && !r.atEnd && n < r.lineStop + kMaxContinuation) r.open = true;
  return std::min(ve, bound);
}

std::size_t matchKeyValue(Reach& r, std::size_t i, std::vector<Span>& out) {
  // Everything but a quoted value that goes on past its line is read from the line alone.
  const std::string_view t = r.all.substr(0, r.lineStop);
  const std::size_t n = t.size();
  const char sep = t[i];
  const char next = i + 1 < n ? t[i + 1] : '\0';
  const char prev = i > 0 ? t[i - 1] : '\0';
  std::size_t k = i;  // where the lookback starts
  if (sep == ':') {
    if (next == ':' || next == '=' || prev == ':') return 0;  // scope operator, := is seen at '='
  } else {
    if (next == '=' || prev == '=' || prev == '!' || prev == '<' || prev == '>') return 0;  // comparisons
    if (prev == ':' || prev == '?' || prev == '+') k = i - 1;
  }
  // Key: optional spaces, optional closing quote (or \" inside a JSON string), the name.
  std::size_t j = k;
  int spaces = 0;
  while (j > 0 && is(t[j - 1], kSpace) && spaces < 8) --j, ++spaces;
  bool quotedKey = false;
  if (j > 0 && (t[j - 1] == '"' || t[j - 1] == '\'')) {
    quotedKey = true;
    --j;
    if (j > 0 && t[j - 1] == '\\') --j;
  }
  const std::size_t keyEnd = j;
  if (keyEnd < 2 || !plausibleEnding(lower(t[keyEnd - 2]), lower(t[keyEnd - 1]))) return 0;
  while (j > 0 && is(t[j - 1], kAlnum | kUnder | kDash | kDot) && keyEnd - j < 128) --j;
  const std::size_t keyBegin = j;
  if (keyBegin == keyEnd) return 0;
  if (keyBegin >= 2 && t[keyBegin - 1] == '{' && t[keyBegin - 2] == '$') return 0;  // ${secret:NAME}
  // A quoted path whose last part looks like a key, followed by words: "refused '/etc/passwd': it is
  // outside". Only that: /run/secrets/db_password:VALUE and {"/app/password": "VALUE"} are secrets.
  const bool quotedPath = quotedKey && sep == ':' && keyBegin >= 1 && t[keyBegin - 1] == '/';
  if (sep == ':' && keyBegin >= 3 && t.compare(keyBegin - 3, 3, "://") == 0) return 0;  // user:pass@ (matchUrl)
  const KeyKind kind = classifyKey(t.substr(keyBegin, keyEnd - keyBegin));
  if (kind == KeyKind::kNone) return 0;

  Mode mode = Mode::kWeak;
  if (sep == '=') {
    mode = Mode::kAssign;
  } else if (quotedKey) {
    mode = Mode::kQuoted;
  } else {
    // Only indentation, a YAML list dash or an opening quote between the line start and the key.
    std::size_t p = keyBegin;
    int steps = 0;
    while (p > 0 && steps < 64 && (is(t[p - 1], kSpace) || t[p - 1] == '-')) --p, ++steps;
    if (p == 0 || t[p - 1] == '\n') mode = Mode::kLine;
  }

  // Value.
  std::size_t v = i + 1;
  if (sep == '=' && v < n && t[v] == '>') ++v;
  const std::size_t sepEnd = v;
  while (v < n && is(t[v], kSpace)) ++v;
  const bool spaced = spaces > 0 || v > sepEnd;
  if (v >= n || is(t[v], kEol)) return 0;
  if (t.compare(v, kMarker.size(), kMarker) == 0) return 0;  // already redacted: redacting is idempotent

  std::size_t vs = v, ve = v;
  bool quotedValue = false;
  if (quotedPath && t[v] != '"' && t[v] != '\'' && t[v] != '`') return 0;
  if (t[v] == '"' || t[v] == '\'' || t[v] == '`') {
    quotedValue = true;
    vs = v + 1;
    ve = quotedEnd(r, vs, t[v]);
    if (r.open) return 0;
  } else if (t[v] == '\\' && v + 1 < n && t[v + 1] == '"') {  // \"value\" inside a JSON string
    quotedValue = true;
    vs = v + 2;
    ve = quotedEnd(r, vs, '\\');
    if (r.open) return 0;
  } else if (kind == KeyKind::kAuthorization) {
    while (ve < n && !is(t[ve], kEol) && t[ve] != '"' && t[ve] != '\'' && t[ve] != '`' &&
           !(t[ve] == '\\' && ve + 1 < n && t[ve + 1] == '"')) {
      ++ve;
    }
  } else if (mode == Mode::kLine) {
    if (std::string_view("|>{[&*!").find(t[v]) != std::string_view::npos) return 0;  // YAML structure
    while (ve < n && !is(t[ve], kEol)) ++ve;
    const std::size_t comment = t.substr(vs, ve - vs).find(" #");
    if (comment != std::string_view::npos) ve = vs + comment;
  } else {
    auto stop = [&](std::size_t p) {
      const char c = t[p];
      if (is(c, kSpace | kEol) || c == '"' || c == '\'' || c == '`') return true;
      if (c == '\\') {  // a JSON escape ends an unquoted value inside a JSON string
        const char d = p + 1 < n ? t[p + 1] : '\0';
        return d == 'n' || d == 'r' || d == 't' || d == '"' || d == '\\' || d == 'u' || d == '/';
      }
      switch (mode) {
        case Mode::kAssign: return c == '&' || c == ';' || c == ',' || c == ')' || c == ']' || c == '}' || c == '<' || c == '>' || c == '|';
        case Mode::kQuoted: return c == ',' || c == '}' || c == ']';
        default: return c == ',' || c == ';' || c == ')' || c == ']' || c == '}';
      }
    };
    while (ve < n && !stop(ve)) ++ve;
  }
  // A quoted value may end past its line: read it from the whole view.
  const std::string_view all = r.all;
  while (ve > vs && is(all[ve - 1], kSpace | kEol)) --ve;

  bool scheme = false;
  if (kind == KeyKind::kAuthorization) {
    // Keep the scheme ("Bearer", "Basic", "token"): only the credential is secret.
    std::size_t w = vs;
    while (w < ve && (is(all[w], kAlnum | kDash))) ++w;
    if (w < ve && is(all[w], kSpace) && isAuthScheme(all.substr(vs, w - vs))) {
      scheme = true;
      vs = w;
      while (vs < ve && is(all[vs], kSpace)) ++vs;
    } else if (!quotedValue) {
      std::size_t e = vs;
      while (e < ve && !is(all[e], kSpace)) ++e;
      ve = e;
    }
  }
  if (ve <= vs) return 0;
  std::string_view value = all.substr(vs, ve - vs);
  if (!quotedValue && mode != Mode::kAssign) {
    // "password: string;" in a type declaration, "token: x," in a flow mapping
    while (!value.empty() && (value.back() == ',' || value.back() == ';')) value.remove_suffix(1);
    ve = vs + value.size();
  }
  if (isPlaceholder(value)) return 0;
  if (!quotedValue && !scheme) {
    if ((mode != Mode::kAssign || spaced) && isCodeLike(value)) return 0;
    if (mode == Mode::kWeak && !(tokenish(value) || value.size() >= 16)) return 0;
    if (spaced && sameWord(value, t.substr(keyBegin, keyEnd - keyBegin))) return 0;  // self.password = password
    if (mode == Mode::kLine && value.back() == '.' && value.find(' ') != std::string_view::npos) {
      return 0;  // "Token: a unit of text." is a sentence, not a setting
    }
  }
  out.push_back({vs, ve});
  return ve;
}

// ---------------------------------------------------------------- ':' specials

// Telegram bot token: <bot id>:<35 characters>, also after "bot" in API URLs.
std::size_t matchTelegram(std::string_view t, std::size_t i, std::vector<Span>& out) {
  std::size_t j = i;
  while (j > 0 && is(t[j - 1], kDigit) && i - j <= 12) --j;
  const std::size_t digits = i - j;
  if (digits < 6 || digits > 12) return 0;
  if (!(boundaryBefore(t, j) || (j >= 3 && iAt(t, j - 3, "bot")))) return 0;
  const std::size_t e = runEnd(t, i + 1, kTok);
  const std::size_t len = e - i - 1;
  if (len < 30 || len > 45) return 0;
  out.push_back({j, e});
  return e;
}

// scheme://user:password@host keeps the user; Slack and Discord webhook URLs are secrets.
std::size_t matchUrl(std::string_view t, std::size_t i, std::vector<Span>& out) {
  const std::size_t n = t.size();
  std::size_t s = i;
  while (s > 0 && is(t[s - 1], kAlnum | kPlus | kDot | kDash)) --s;
  if (i - s < 2) return 0;
  const std::size_t a = i + 3;
  std::size_t e = a;
  while (e < n && !is(t[e], kSpace | kEol) && std::string_view("/?#\"'`<>\\").find(t[e]) == std::string_view::npos) ++e;
  const std::string_view authority = t.substr(a, e - a);
  const std::size_t at = authority.rfind('@');
  std::size_t hostBegin = a;
  if (at != std::string_view::npos) {
    hostBegin = a + at + 1;
    const std::string_view userinfo = authority.substr(0, at);
    const std::size_t colon = userinfo.find(':');
    if (colon != std::string_view::npos) {
      const std::string_view pw = userinfo.substr(colon + 1);
      if (!pw.empty() && !isPlaceholder(pw)) out.push_back({a + colon + 1, a + at});
    } else if (userinfo.size() >= 32 && hasClass(userinfo, kDigit) && hasClass(userinfo, kUpper | kLower) &&
               !isPlaceholder(userinfo)) {
      out.push_back({a, a + at});  // a token used as the user name
    }
  }
  std::string_view host = t.substr(hostBegin, e - hostBegin);
  host = host.substr(0, host.find(':'));
  const std::string_view path = t.substr(e);
  auto secretPath = [&](std::string_view prefix) {
    if (!path.starts_with(prefix)) return;
    const std::size_t b = e + prefix.size();
    std::size_t x = b;
    while (x < n && is(t[x], kTok | kSlash)) ++x;
    if (x - b >= 16) out.push_back({b, x});
  };
  if (host == "hooks.slack.com") {
    secretPath("/services/");
    secretPath("/workflows/");
  } else if (host == "discord.com" || host == "discordapp.com" || host.ends_with(".discord.com")) {
    // /api/webhooks/<id>/<token>: the id is public, the token is not.
    if (path.starts_with("/api/webhooks/")) {
      std::size_t b = e + 14;
      while (b < n && is(t[b], kDigit)) ++b;
      if (b < n && t[b] == '/') {
        const std::size_t x = runEnd(t, b + 1, kTok);
        if (x - b - 1 >= 16) out.push_back({b + 1, x});
      }
    }
  }
  return 0;  // keep scanning: query parameters (?token=...) follow
}

// ---------------------------------------------------------------- words

// "Bearer <token>" and "Basic <base64>" outside an Authorization header.
std::size_t matchScheme(std::string_view t, std::size_t i, std::vector<Span>& out) {
  if (!boundaryBefore(t, i)) return 0;
  std::size_t b;
  std::uint16_t body;
  if (iAt(t, i, "bearer")) {
    b = i + 6;
    body = kTok | kDot | kPlus | kSlash | kEq | kTilde;
  } else if (iAt(t, i, "basic")) {
    b = i + 5;
    body = kB64;
  } else {
    return 0;
  }
  if (b >= t.size() || !is(t[b], kSpace)) return 0;
  while (b < t.size() && is(t[b], kSpace)) ++b;
  const std::size_t e = runEnd(t, b, body);
  const std::string_view tok = t.substr(b, e - b);
  if (tok.size() < 8 || !tokenish(tok) || isPlaceholder(tok)) return 0;
  if (e < t.size() && (t[e] == '$' || t[e] == '{' || t[e] == '<')) return 0;  // part of a placeholder
  out.push_back({b, e});
  return e;
}

// curl -u user:password, --user user:password
std::size_t matchUserPass(std::string_view t, std::size_t v, std::vector<Span>& out) {
  while (v < t.size() && is(t[v], kSpace)) ++v;
  if (v < t.size() && (t[v] == '"' || t[v] == '\'')) ++v;
  std::size_t e = v;
  while (e < t.size() && !is(t[e], kSpace | kEol) && t[e] != '"' && t[e] != '\'') ++e;
  const std::string_view tok = t.substr(v, e - v);
  const std::size_t colon = tok.find(':');
  if (colon == std::string_view::npos || colon + 1 == tok.size()) return 0;
  if (isPlaceholder(tok.substr(colon + 1))) return 0;
  out.push_back({v + colon + 1, e});
  return e;
}

// A flag or "-u" stands at the start of a word: after a space, a line start (a `\`
// continuation line of a long command) or an opening quote.
inline bool flagStart(std::string_view t, std::size_t i) {
  return i == 0 || is(t[i - 1], kSpace | kEol) || t[i - 1] == '"' || t[i - 1] == '\'';
}

// --password VALUE, --api-key VALUE (the '=' form is a key=value). A quoted value may
// span lines (shell quotes do), for at most kMaxContinuation bytes past its first line;
// a quote that does not close within that covers the rest of the line.
std::size_t matchFlag(Reach& r, std::size_t i, std::vector<Span>& out) {
  const std::string_view t = r.all.substr(0, r.lineStop);
  if (!flagStart(t, i)) return 0;
  const std::size_t f = i + 2;
  const std::size_t e = runEnd(t, f, kAlnum | kUnder | kDash);
  if (e == f || e >= t.size() || t[e] != ' ') return 0;
  const std::string_view name = t.substr(f, e - f);
  if (name == "user") return matchUserPass(t, e + 1, out);
  if (classifyKey(name) == KeyKind::kNone) return 0;
  std::size_t v = e + 1;
  while (v < t.size() && is(t[v], kSpace)) ++v;
  if (v >= t.size() || t[v] == '-' || is(t[v], kEol)) return 0;
  std::size_t vs = v, ve;
  std::string_view all = t;
  if (t[v] == '"' || t[v] == '\'') {
    vs = v + 1;
    all = r.all;
    const std::size_t bound = r.lineStop + kMaxContinuation;
    ve = all.substr(0, bound).find(t[v], vs);
    if (ve == std::string_view::npos) {
      if (!r.atEnd && all.size() < bound) return r.open = true, 0;
      ve = vs;
      while (ve < t.size() && !is(t[ve], kEol)) ++ve;
      while (ve > vs && is(t[ve - 1], kSpace)) --ve;
    }
  } else {
    // A quote ends an unquoted value: it closes the string the command sits in (JSON
    // `"command": "... --token VALUE"`, escaped as \" one level down), so it stays.
    ve = v;
    while (ve < t.size() && !is(t[ve], kSpace | kEol) && t[ve] != '"' &&
           !(t[ve] == '\\' && ve + 1 < t.size() && t[ve + 1] == '"')) {
      ++ve;
    }
  }
  if (ve <= vs || isPlaceholder(all.substr(vs, ve - vs))) return 0;
  out.push_back({vs, ve});
  return ve;
}

// crypt(3) password hashes in a shadow or htpasswd line, or anywhere: $6$salt$hash,
// $2b$12$<53>, $apr1$salt$hash, $y$j9T$salt$hash, $argon2id$v=19$m=65536,t=3,p=4$salt$hash.
// One offline guess loop away from the password.
std::size_t matchCryptHash(std::string_view t, std::size_t i, std::vector<Span>& out) {
  if (i > 0 && (is(t[i - 1], kAlnum) || t[i - 1] == '$')) return 0;
  constexpr std::string_view kIds[] = {"argon2id$", "argon2i$", "argon2d$", "apr1$", "2a$", "2b$", "2x$", "2y$",
                                       "gy$",       "1$",       "5$",       "6$",    "7$",  "y$"};
  std::size_t b = 0;
  for (std::string_view id : kIds)
    if (t.compare(i + 1, id.size(), id) == 0) {
      b = i + 1 + id.size();
      break;
    }
  if (!b) return 0;
  std::size_t e = b, dollars = 0, lastDollar = 0;
  while (e < t.size() && (is(t[e], kAlnum | kDot | kSlash | kEq | kPlus | kDash) || t[e] == '$' || t[e] == ',')) {
    if (t[e] == '$') ++dollars, lastDollar = e;
    ++e;
  }
  // A salt (or cost) and the hash after it: "$5 and $6" or a price never get here.
  if (dollars == 0 || e - lastDollar - 1 < 20) return 0;
  out.push_back({i, e});
  return e;
}

// The value of a `-p` that takes a password: attached to it for mysql and its kin
// (`mysql -u root -pS3cret`; `-p dbname` with a space only asks for one), and attached or
// after a space for sshpass. Only on a line that runs one of those commands.
std::size_t matchDashP(std::string_view t, std::size_t i, std::vector<Span>& out) {
  if (!flagStart(t, i) || i + 2 >= t.size()) return 0;
  // Only the words of the same command: `echo mysql; tar -pcf ...` is another command's -p.
  std::string_view before = t.substr(0, i);
  const std::size_t cut = before.find_last_of(";&|(`\n");
  if (cut != std::string_view::npos) before = before.substr(cut + 1);
  const bool sshpass = before.find("sshpass") != std::string_view::npos;
  if (!sshpass && before.find("mysql") == std::string_view::npos && before.find("mariadb") == std::string_view::npos)
    return 0;
  std::size_t v = i + 2;
  if (is(t[v], kSpace)) {
    if (!sshpass) return 0;
    while (v < t.size() && is(t[v], kSpace)) ++v;
  }
  if (v >= t.size() || is(t[v], kEol) || t[v] == '-') return 0;
  std::size_t vs = v, ve;
  if (t[v] == '"' || t[v] == '\'') {
    vs = v + 1;
    ve = t.find(t[v], vs);
    if (ve == std::string_view::npos) ve = t.size();
  } else {
    ve = v;
    while (ve < t.size() && !is(t[ve], kEol) && t[ve] != '"' && t[ve] != '\'') {
      if (t[ve] == '\\' && ve + 1 < t.size() && !is(t[ve + 1], kEol)) {  // an escaped space goes on
        ve += 2;
        continue;
      }
      if (is(t[ve], kSpace)) break;
      ++ve;
    }
  }
  while (ve > vs && is(t[ve - 1], kEol)) --ve;
  if (ve <= vs || isPlaceholder(t.substr(vs, ve - vs))) return 0;
  out.push_back({vs, ve});
  return ve;
}

// A .netrc line: `machine HOST login USER password PASS` (or `default ...`), where the
// password follows its word after a space, not a '=' or ':'.
std::size_t matchNetrc(std::string_view t, std::size_t i, std::vector<Span>& out) {
  if (!iAt(t, i, "password") || i + 8 >= t.size() || !is(t[i + 8], kSpace) || !flagStart(t, i)) return 0;
  std::size_t l = 0;
  while (l < i && is(t[l], kSpace)) ++l;
  if (!iAt(t, l, "machine ") && !iAt(t, l, "default ")) return 0;
  std::size_t eol = t.size();
  while (eol > 0 && is(t[eol - 1], kEol)) --eol;
  const std::string_view line = t.substr(0, eol);
  if (line.find(" login ") == std::string_view::npos && line.find("\tlogin\t") == std::string_view::npos) return 0;
  std::size_t v = i + 8;
  while (v < t.size() && is(t[v], kSpace)) ++v;
  std::size_t e = v;
  if (v < t.size() && t[v] == '"') {  // a quoted value may hold spaces
    e = t.find('"', ++v);
    if (e == std::string_view::npos) e = eol;
  } else {
    while (e < t.size() && !is(t[e], kSpace | kEol)) ++e;
  }
  if (e <= v || isPlaceholder(t.substr(v, e - v))) return 0;
  out.push_back({v, e});
  return e;
}

// Cookie: a=1; b=2 (every value is a credential as good as a password while the session
// lasts) and Set-Cookie: name=value; Path=/ (only the first pair's value; the rest are
// attributes).
std::size_t matchCookie(std::string_view t, std::size_t i, std::vector<Span>& out) {
  const bool set = iAt(t, i, "set-cookie:");
  if (!set && !iAt(t, i, "cookie:")) return 0;
  std::size_t p = i + (set ? 11 : 7);
  std::size_t last = 0;
  while (p < t.size()) {
    while (p < t.size() && (is(t[p], kSpace) || t[p] == ';')) ++p;
    std::size_t eq = p;
    while (eq < t.size() && t[eq] != '=' && t[eq] != ';' && !is(t[eq], kSpace | kEol) && t[eq] != '"' && t[eq] != '\'')
      ++eq;
    if (eq >= t.size() || t[eq] != '=' || eq == p) break;
    std::size_t vs = eq + 1, e = vs;
    if (e < t.size() && t[e] == '"') {  // cookie-value may be quoted (RFC 6265)
      vs = ++e;
      while (e < t.size() && t[e] != '"' && !is(t[e], kEol)) ++e;
    } else {
      while (e < t.size() && t[e] != ';' && !is(t[e], kSpace | kEol) && t[e] != '"' && t[e] != '\'') ++e;
    }
    if (e > vs && !isPlaceholder(t.substr(vs, e - vs))) {
      out.push_back({vs, e});
      last = e;
    }
    if (e < t.size() && t[e] == '"' && vs > eq + 1) ++e;  // past the closing quote
    if (set || e >= t.size() || t[e] != ';') break;
    p = e;
  }
  return last;
}

// The matcher for the trigger at t[i], on the line that ends at lineStop. Matchers that
// take a string_view see only that line, so what they find cannot change when more
// text arrives after it; the three that may run past the line (a PEM block, a quoted
// value carried on by a backslash, a quoted flag value) take the Reach and say when
// they need bytes past the view.
std::size_t dispatch(Reach& r, std::size_t i, std::vector<Span>& out) {
  const std::string_view t = r.all.substr(0, r.lineStop);
  const char c = t[i];
  std::size_t m = 0;
  switch (c) {
    case '=':
      return matchKeyValue(r, i, out);
    case ':':
      if (t.compare(i, 3, "://") == 0) return matchUrl(t, i, out);
      if ((m = matchTelegram(t, i, out))) return m;
      return matchKeyValue(r, i, out);
    case '$':
      return matchCryptHash(t, i, out);
    case '-':
      if (t[i + 1] == 'u') {
        if (i + 2 < t.size() && t[i + 2] == ' ' && flagStart(t, i)) return matchUserPass(t, i + 3, out);
        return 0;
      }
      if (t[i + 1] == 'p') return matchDashP(t, i, out);
      if ((m = matchPem(r, i, out)) || r.open) return m;
      return matchFlag(r, i, out);
    case 'B':
    case 'b':
      return matchScheme(t, i, out);
    case 'e':
      return matchJwt(t, i, out);
    case 'M':
    case 'O':
      return matchDiscord(t, i, out);
    case 'N':
      if ((m = matchDiscord(t, i, out))) return m;
      break;
    case 'p':
    case 'P':
      if ((m = matchNetrc(t, i, out))) return m;
      break;
    case 'C':
    case 'c':
      if ((m = matchCookie(t, i, out))) return m;
      break;
    case 's':
    case 'S':
      if ((t[i + 1] == 'e' || t[i + 1] == 'E') && (m = matchCookie(t, i, out))) return m;
      if (c == 'S' && t[i + 1] == 'G') return matchSendGrid(t, i, out);
      break;
    default:
      break;
  }
  return matchPrefix(t, i, out);
}

}  // namespace

bool isPlaceholder(std::string_view v) {
  if (v.empty() || v == "~") return true;  // ~ is YAML's null
  for (std::string_view p : {"${", "$(", "{{", "%(", "%{", "#{", "<"}) {
    if (v.starts_with(p)) return true;
  }
  if (v.front() == '[' && v.back() == ']') return true;  // [redacted], [SEP]
  if (v.front() == '$' && v.size() > 1 && (is(v[1], kUpper | kLower) || v[1] == '_')) return true;
  if (v.size() >= 3 && v.find_first_not_of(v.front()) == std::string_view::npos) return true;  // xxx, ***, ...
  for (std::string_view p : {"xxxx", "XXXX", "****", "...", "\xE2\x80\xA2" /* bullet */}) {
    if (v.find(p) != std::string_view::npos) return true;
  }
  if (v.size() > 16) return false;
  char buf[16];
  for (std::size_t k = 0; k < v.size(); ++k) buf[k] = lower(v[k]);
  const std::string_view lv(buf, v.size());
  constexpr std::string_view kWords[] = {"null", "nil", "none", "true", "false", "undefined", "empty",
                                         "redacted", "hidden", "masked", "omitted", "required", "optional",
                                         "string", "str", "bytes", "int", "secretstr"};
  if (std::find(std::begin(kWords), std::end(kWords), lv) != std::end(kWords)) return true;
  if (lv.starts_with("your_") || lv.starts_with("your-") || v.starts_with("YOUR")) return true;
  return lv.ends_with("_here") || lv.ends_with("-here");
}

ScanStop findPatterns(std::string_view t, std::size_t floor, std::size_t from, bool atEnd, std::vector<Span>& out,
                      std::vector<Span>* consumed) {
  const std::size_t n = t.size();
  if (from + 1 >= n) return {from, false};  // a trigger is two bytes
  const auto& trig = tables().trigger;
  const unsigned char* s = reinterpret_cast<const unsigned char*>(t.data());
  auto hit = [&](std::size_t i) -> unsigned {
    const unsigned tokBefore = i > floor && (kClass[s[i - 1]] & kTok) ? 1 : 0;
    const unsigned v = s[i] | (s[i + 1] << 8) | (tokBefore << 16);
    return (trig[v >> 6] >> (v & 63)) & 1;
  };
  auto hitInner = [&](std::size_t i) -> unsigned {  // i > floor
    const unsigned v = s[i] | (s[i + 1] << 8) | ((kClass[s[i - 1]] & kTok) ? 1u << 16 : 0u);
    return (trig[v >> 6] >> (v & 63)) & 1;
  };
  // A matcher sees the text from the start of its line (or from `floor`) on, so what it
  // finds depends on that line alone, and on the lines after it for the three that
  // may span lines. Positions only grow: each line's bounds are looked up once.
  std::size_t lineStart = 0, lineStop = 0;
  bool open = false;
  auto run = [&](std::size_t at) -> std::size_t {
    if (at >= lineStop) {
      // The line starts after the last '\n' before `at`; none lies before the old line's end.
      const std::size_t from = std::max(floor, lineStop);
      const void* prev = at > from ? memrchr(s + from, '\n', at - from) : nullptr;
      lineStart = prev ? static_cast<std::size_t>(static_cast<const unsigned char*>(prev) - s) + 1 : from;
      const void* nl = memchr(s + at, '\n', n - at);
      lineStop = nl ? static_cast<std::size_t>(static_cast<const unsigned char*>(nl) - s) + 1 : n;
    }
    Reach reach{t.substr(lineStart), lineStop - lineStart, atEnd};
    const std::size_t first = out.size();
    std::size_t next = dispatch(reach, at - lineStart, out);
    if (reach.open) {
      open = true;
      return at;
    }
    for (std::size_t k = first; k < out.size(); ++k) out[k] = {out[k].begin + lineStart, out[k].end + lineStart};
    if (next) next += lineStart;
    if (consumed && next > at + 1) consumed->push_back({at, next});
    return next;
  };
  std::size_t i = from;
  if (hit(i)) {
    const std::size_t next = run(i);
    if (open) return {i, true};
    i = next > i + 1 ? next : i + 1;
  } else {
    ++i;
  }
  // Eight positions per step without a branch each; most steps have no hit at all.
  while (i + 9 <= n) {
    unsigned mask = 0;
#pragma GCC unroll 8
    for (unsigned k = 0; k < 8; ++k) mask |= hitInner(i + k) << k;
    if (mask == 0) [[likely]] {
      i += 8;
      continue;
    }
    const std::size_t block = i;
    std::size_t resume = block + 8;
    while (mask) {
      const std::size_t at = block + static_cast<std::size_t>(__builtin_ctz(mask));
      mask &= mask - 1;
      if (at < i) continue;  // inside a match that was just consumed
      const std::size_t next = run(at);
      if (open) return {at, true};
      i = next > at + 1 ? next : at + 1;
      resume = std::max(resume, i);
    }
    i = resume;
  }
  for (; i + 1 < n; ++i) {
    if (!hit(i)) continue;
    const std::size_t next = run(i);
    if (open) return {i, true};
    if (next > i + 1) i = next - 1;
  }
  return {i, false};
}

}  // namespace pine::redact::detail
