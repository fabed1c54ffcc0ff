// Markdown → Telegram HTML and the cutting into messages (broker/telegram/html_render.h) over
// any bytes, the text a model writes (which an attacker may have dictated). With a limit drawn
// from a hash of the input (4096, 200, 20, or 8 to 107):
//   1. markdownToHtml, splitForTelegram, splitPlain and escapeHtml do not crash (ASan, UBSan);
//   2. the HTML, every piece of it and escapeHtml's text are what Telegram's HTML parse mode
//      accepts: valid UTF-8 without NUL or control characters but tab and newline,
//      well-formed, only the allowed tags (b strong i em u ins s strike del, span
//      class="tg-spoiler", a href to http/https/tg only, code, pre with at most
//      `<code class="language-x">` directly in it, blockquote not nested, no link in a link),
//      only the entities &lt; &gt; &amp; &quot;;
//   3. every piece of both splits fits the limit in UTF-16 code units (utf16Length) and is
//      not blank; no split loses or adds visible text (only whitespace may go at a cut).
// The checker is independent of the renderer (a compact copy of the one in
// tests/telegram/html_render_test.cpp).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "broker/telegram/html_render.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

// Strict UTF-8 (no overlong forms, surrogates or values above U+10FFFF); `control` is set
// when a C0 control other than tab and newline, or DEL, occurs.
bool tgFuzzValidUtf8(std::string_view s, bool& control) {
  control = false;
  for (std::size_t i = 0; i < s.size();) {
    auto b = static_cast<unsigned char>(s[i]);
    std::size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size() || (n == 2 && b < 0xC2)) return false;
    std::uint32_t cp = n == 1 ? b : b & (0x7F >> n);
    for (std::size_t k = 1; k < n; ++k) {
      auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    if ((cp < 0x20 && cp != '\t' && cp != '\n') || cp == 0x7F) control = true;
    i += n;
  }
  return true;
}

// Text with only the four entities; appends what it shows to `visible`.
bool tgFuzzDecodeText(std::string_view s, std::string& visible) {
  static constexpr std::pair<std::string_view, char> kEntities[] = {
      {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}};
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] == '>' || s[i] == '<') return false;
    if (s[i] != '&') {
      visible += s[i++];
      continue;
    }
    bool known = false;
    for (auto [entity, ch] : kEntities) {
      if (s.substr(i, entity.size()) == entity) {
        visible += ch;
        i += entity.size();
        known = true;
        break;
      }
    }
    if (!known) return false;
  }
  return true;
}

bool tgFuzzSafeHref(std::string_view v) {
  std::string decoded;
  if (v.find('"') != std::string_view::npos || !tgFuzzDecodeText(v, decoded)) return false;
  std::string scheme = decoded.substr(0, decoded.find("://"));
  for (char& c : scheme) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return (scheme == "http" || scheme == "https" || scheme == "tg") && decoded.size() > scheme.size() + 3;
}

// Returns what is wrong with the HTML (nullptr when Telegram accepts it) and its visible text.
const char* tgFuzzCheckHtml(std::string_view html, std::string& visible) {
  static constexpr std::string_view kSimple[] = {"b",   "strong", "i",    "em",   "u",   "ins",
                                                 "s",   "strike", "del",  "code", "pre", "blockquote"};
  bool control = false;
  if (!tgFuzzValidUtf8(html, control)) return "invalid UTF-8";
  if (html.find('\0') != std::string_view::npos) return "NUL byte";
  if (control) return "control character";
  std::vector<std::string> stack;
  auto inside = [&](std::string_view name) { return std::find(stack.begin(), stack.end(), name) != stack.end(); };
  for (std::size_t i = 0; i < html.size();) {
    if (html[i] != '<') {
      std::size_t end = std::min(html.find('<', i), html.size());
      if (!tgFuzzDecodeText(html.substr(i, end - i), visible)) return "bare > or & or an entity not allowed";
      i = end;
      continue;
    }
    std::size_t end = html.find('>', i);
    if (end == std::string_view::npos) return "unterminated tag";
    std::string_view tag = html.substr(i + 1, end - i - 1);
    i = end + 1;
    if (!tag.empty() && tag[0] == '/') {
      if (stack.empty() || stack.back() != tag.substr(1)) return "closing tag that closes nothing open";
      stack.pop_back();
      continue;
    }
    std::string name(tag.substr(0, tag.find(' ')));
    if (inside("code") || (inside("pre") && name != "code")) return "tag inside code or pre";
    if (name == "a") {
      if (tag.size() < 10 || tag.rfind("a href=\"", 0) != 0 || tag.back() != '"') return "bad link tag";
      if (!tgFuzzSafeHref(tag.substr(8, tag.size() - 9))) return "link not to http, https or tg";
      if (inside("a")) return "link in a link";
    } else if (name == "code" && tag != "code") {
      constexpr std::string_view kPrefix = "code class=\"language-";
      if (tag.rfind(kPrefix, 0) != 0 || tag.size() < kPrefix.size() + 2 || tag.back() != '"') return "bad code tag";
      for (char l : tag.substr(kPrefix.size(), tag.size() - kPrefix.size() - 1)) {
        bool alnum = (l >= '0' && l <= '9') || (l >= 'a' && l <= 'z') || (l >= 'A' && l <= 'Z');
        if (!alnum && l != '_' && l != '+' && l != '-') return "bad language name";
      }
      if (stack.empty() || stack.back() != "pre") return "language outside pre";
    } else if (tag == "span class=\"tg-spoiler\"") {
      name = "span";
    } else if (std::find(std::begin(kSimple), std::end(kSimple), tag) == std::end(kSimple)) {
      return "tag not allowed";
    }
    if (name == "blockquote" && inside("blockquote")) return "nested blockquote";
    stack.push_back(name);
  }
  if (!stack.empty()) return "unclosed tag";
  return nullptr;
}

std::string tgFuzzWithoutSpace(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != ' ' && c != '\n' && c != '\t') out += c;
  return out;
}

void tgFuzzReport(const char* what, std::string_view where) {
  std::fprintf(stderr, "%s in: %.*s\n", what, static_cast<int>(std::min<std::size_t>(where.size(), 2000)),
               where.data());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pine::telegram;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::uint64_t h = pine::fuzz::hashOf(text);
  static constexpr std::size_t kLimits[] = {4096, 200, 20};
  const std::size_t limit = h % 4 < 3 ? kLimits[h % 4] : 8 + (h >> 8) % 100;

  const std::string html = markdownToHtml(text);
  std::string whole;
  const char* bad = tgFuzzCheckHtml(html, whole);
  if (bad) tgFuzzReport(bad, html);
  FUZZ_CHECK(bad == nullptr, "markdownToHtml gave HTML Telegram refuses");

  std::string joined;
  for (const std::string& piece : splitForTelegram(text, limit)) {
    std::string shown;
    bad = tgFuzzCheckHtml(piece, shown);
    if (bad) tgFuzzReport(bad, piece);
    FUZZ_CHECK(bad == nullptr, "a piece of splitForTelegram is HTML Telegram refuses");
    FUZZ_CHECK(utf16Length(piece) <= limit, "a piece of splitForTelegram is over the limit");
    FUZZ_CHECK(!tgFuzzWithoutSpace(shown).empty(), "a piece of splitForTelegram is blank");
    joined += shown;
  }
  FUZZ_CHECK(tgFuzzWithoutSpace(joined) == tgFuzzWithoutSpace(whole), "splitForTelegram lost or added visible text");

  std::string plainJoined;
  for (const std::string& piece : splitPlain(text, limit)) {
    bool control = false;
    FUZZ_CHECK(tgFuzzValidUtf8(piece, control), "a piece of splitPlain is not valid UTF-8");
    FUZZ_CHECK(piece.find('\0') == std::string::npos && !control, "a piece of splitPlain has a control character");
    FUZZ_CHECK(utf16Length(piece) <= limit, "a piece of splitPlain is over the limit");
    FUZZ_CHECK(!tgFuzzWithoutSpace(piece).empty(), "a piece of splitPlain is blank");
    plainJoined += piece;
  }
  std::string escapedShown;
  FUZZ_CHECK(tgFuzzCheckHtml(escapeHtml(text), escapedShown) == nullptr, "escapeHtml gave HTML Telegram refuses");
  FUZZ_CHECK(tgFuzzWithoutSpace(plainJoined) == tgFuzzWithoutSpace(escapedShown),
             "splitPlain lost or added visible text");
  return 0;
}
