// Markdown → Telegram HTML and the cutting of long answers. The text comes from a model that may
// have been steered by an attacker, so beyond the constructs themselves the tests check, on
// thousands of pseudo-random inputs, that every output is HTML Telegram accepts: well-formed,
// allowed tags only, within the length limit, and losing no visible text.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "broker/telegram/html_render.h"

using namespace pine::telegram;

namespace {

// ---- an independent checker of Telegram's HTML parse mode ----

bool validUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    auto b = static_cast<unsigned char>(s[i]);
    size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size() || (n == 2 && b < 0xC2)) return false;
    uint32_t cp = n == 1 ? b : b & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) {
      auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

bool safeAttribute(std::string_view v) {
  if (v.find_first_of("<>\"") != std::string_view::npos) return false;
  for (size_t amp = v.find('&'); amp != std::string_view::npos; amp = v.find('&', amp + 1)) {
    std::string_view rest = v.substr(amp);
    if (rest.rfind("&amp;", 0) && rest.rfind("&lt;", 0) && rest.rfind("&gt;", 0) && rest.rfind("&quot;", 0)) return false;
  }
  std::string scheme(v.substr(0, v.find(':')));
  for (char& c : scheme) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  return (scheme == "http" || scheme == "https" || scheme == "tg") && v.substr(scheme.size(), 3) == "://";
}

struct Checked {
  std::string error;  // empty when the HTML is acceptable
  std::string visible;
};

// Telegram's rules: only its tags, properly nested, a link only to http/https/tg, nothing inside
// code or pre but `<code class="language-x">` directly in pre, no blockquote or link in another,
// text with & < > escaped, valid UTF-8 without NUL.
Checked checkHtml(std::string_view html) {
  static const std::vector<std::string_view> kSimple = {"b", "strong", "i", "em", "u", "ins", "s", "strike", "del",
                                                       "code", "pre", "blockquote"};
  Checked r;
  if (!validUtf8(html)) return {"invalid UTF-8", {}};
  if (html.find('\0') != std::string_view::npos) return {"NUL byte", {}};
  std::vector<std::string> stack;
  auto inside = [&](std::string_view name) {
    for (const auto& t : stack)
      if (t == name) return true;
    return false;
  };
  for (size_t i = 0; i < html.size();) {
    char c = html[i];
    if (c == '<') {
      size_t end = html.find('>', i);
      if (end == std::string_view::npos) return {"unterminated tag", {}};
      std::string_view tag = html.substr(i + 1, end - i - 1);
      i = end + 1;
      if (!tag.empty() && tag[0] == '/') {
        if (stack.empty() || stack.back() != tag.substr(1)) return {"bad closing tag </" + std::string(tag.substr(1)) + ">", {}};
        stack.pop_back();
        continue;
      }
      std::string name(tag.substr(0, tag.find(' ')));
      if (inside("code") || (inside("pre") && name != "code")) return {"tag inside code or pre: " + name, {}};
      if (name == "a") {
        if (tag.rfind("a href=\"", 0) != 0 || tag.back() != '"') return {"bad link tag", {}};
        if (!safeAttribute(tag.substr(8, tag.size() - 9))) return {"unsafe link " + std::string(tag), {}};
        if (inside("a")) return {"link in link", {}};
      } else if (name == "code" && tag != "code") {
        std::string_view lang = tag.substr(std::min(tag.size(), std::string_view("code class=\"language-").size()));
        if (tag.rfind("code class=\"language-", 0) != 0 || lang.size() < 2 || lang.back() != '"') return {"bad code tag", {}};
        for (char l : lang.substr(0, lang.size() - 1)) {
          if (!isalnum(static_cast<unsigned char>(l)) && l != '_' && l != '+' && l != '-') return {"bad language", {}};
        }
        if (stack.empty() || stack.back() != "pre") return {"language outside pre", {}};
      } else if (tag == "span class=\"tg-spoiler\"") {
        name = "span";
      } else if (std::find(kSimple.begin(), kSimple.end(), tag) == kSimple.end()) {
        return {"tag not allowed: <" + std::string(tag) + ">", {}};
      }
      if (name == "blockquote" && inside("blockquote")) return {"nested blockquote", {}};
      stack.push_back(name);
    } else if (c == '&') {
      static const std::pair<std::string_view, char> kEntities[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}};
      bool known = false;
      for (auto [entity, ch] : kEntities) {
        if (html.substr(i, entity.size()) == entity) {
          r.visible += ch;
          i += entity.size();
          known = true;
          break;
        }
      }
      if (!known) return {"bare &", {}};
    } else if (c == '>') {
      return {"bare >", {}};
    } else {
      r.visible += c;
      ++i;
    }
  }
  if (!stack.empty()) return {"unclosed <" + stack.back() + ">", {}};
  return r;
}

std::string withoutSpace(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != ' ' && c != '\n' && c != '\t') out += c;
  return out;
}

std::string visible(std::string_view html) {
  Checked c = checkHtml(html);
  REQUIRE_MESSAGE(c.error.empty(), c.error, " in: ", std::string(html));
  return c.visible;
}

// Every piece acceptable, within the limit and non-blank; together they show everything.
void checkPieces(std::string_view markdown, size_t limit) {
  std::string whole = visible(markdownToHtml(markdown));
  std::vector<std::string> pieces = splitForTelegram(markdown, limit);
  std::string joined;
  for (const std::string& p : pieces) {
    Checked c = checkHtml(p);
    REQUIRE_MESSAGE(c.error.empty(), c.error, " in piece: ", p);
    REQUIRE_MESSAGE(utf16Length(p) <= limit, p);
    REQUIRE_MESSAGE(!withoutSpace(c.visible).empty(), "blank piece");
    joined += c.visible;
  }
  REQUIRE(withoutSpace(joined) == withoutSpace(whole));
}

}  // namespace

TEST_CASE("escapeHtml escapes what HTML parse mode needs and makes the text sendable") {
  CHECK(escapeHtml("<script>alert(\"x\") & 'y'</script>") == "&lt;script&gt;alert(&quot;x&quot;) &amp; 'y'&lt;/script&gt;");
  CHECK(escapeHtml("plain é 😀") == "plain é 😀");
  CHECK(escapeHtml(std::string_view("a\0b\xff", 4)) == "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
  CHECK(escapeHtml("a\r\nb") == "a\nb");
}

TEST_CASE("utf16Length counts as Telegram does") {
  CHECK(utf16Length("") == 0);
  CHECK(utf16Length("abc") == 3);
  CHECK(utf16Length("é中") == 2);
  CHECK(utf16Length("😀") == 2);
  CHECK(utf16Length("👍🏽") == 4);
  CHECK(utf16Length("\xff\xfe") == 2);
  CHECK(utf16Length("\xed\xa0\x80") == 3);  // an encoded surrogate is three invalid bytes
}

TEST_CASE("bold, italic, strike and inline code") {
  CHECK(markdownToHtml("**bold** and __bold__") == "<b>bold</b> and <b>bold</b>");
  CHECK(markdownToHtml("*it* and _it_") == "<i>it</i> and <i>it</i>");
  CHECK(markdownToHtml("~~gone~~ but ~one~ stays") == "<s>gone</s> but ~one~ stays");
  CHECK(markdownToHtml("***both***") == "<i><b>both</b></i>");
  CHECK(markdownToHtml("*a **b** c*") == "<i>a <b>b</b> c</i>");
  CHECK(markdownToHtml("**Note:** text") == "<b>Note:</b> text");
  CHECK(markdownToHtml("**жирный** 中文*斜体*") == "<b>жирный</b> 中文<i>斜体</i>");
  CHECK(markdownToHtml("use `a<b> && **x**` here") == "use <code>a&lt;b&gt; &amp;&amp; **x**</code> here");
  CHECK(markdownToHtml("`` `tick` ``") == "<code>`tick`</code>");
}

TEST_CASE("intra-word underscores, lone asterisks and escapes stay literal") {
  CHECK(markdownToHtml("call snake_case_name and my_var_") == "call snake_case_name and my_var_");
  CHECK(markdownToHtml("2 * 3 = 6 and 4 * 5") == "2 * 3 = 6 and 4 * 5");
  CHECK(markdownToHtml("\\*not italic\\* and \\_nor\\_ \\`this\\`") == "*not italic* and _nor_ `this`");
  CHECK(markdownToHtml("see https://x.com/a_b_c_d and **https://y.com/*x*/**") ==
        "see https://x.com/a_b_c_d and <b>https://y.com/*x*/</b>");
}

TEST_CASE("unbalanced and overlapping markers are literal and the HTML stays nested") {
  CHECK(markdownToHtml("**unclosed") == "**unclosed");
  CHECK(markdownToHtml("*unclosed and `tick") == "*unclosed and `tick");
  CHECK(markdownToHtml("~~strike **bold~~ x**") == "<s>strike **bold</s> x**");
  CHECK(markdownToHtml("**a *b** c*") == "<i><i>a <i>b</i></i> c</i>");  // as CommonMark pairs them
  CHECK(markdownToHtml("[not a link] (x) and [x](") == "[not a link] (x) and [x](");
  for (std::string_view s : {"**a _b** c_", "_a **b_ c**", "***a** b* c*", "~~a *b~~ c*", "[a **b](http://x) c**"}) {
    CAPTURE(s);
    CHECK(checkHtml(markdownToHtml(s)).error.empty());
  }
}

TEST_CASE("fenced code blocks") {
  CHECK(markdownToHtml("```python\nif a < b and c & d:\n    print(\"**x**\")\n```\nafter") ==
        "<pre><code class=\"language-python\">if a &lt; b and c &amp; d:\n    print(&quot;**x**&quot;)</code></pre>\nafter");
  CHECK(markdownToHtml("```\nplain\n```") == "<pre>plain</pre>");
  CHECK(markdownToHtml("```c++\nx\n```") == "<pre><code class=\"language-c++\">x</code></pre>");
  CHECK(markdownToHtml("```\"><script>\nx\n```") == "<pre>x</pre>");  // a hostile language is dropped
  CHECK(markdownToHtml("```c#\nx\n```") == "<pre>x</pre>");
  CHECK(markdownToHtml("~~~sh\nls\n~~~") == "<pre><code class=\"language-sh\">ls</code></pre>");
  CHECK(markdownToHtml("text\n```js\nunclosed <b>\nto the end") ==
        "text\n<pre><code class=\"language-js\">unclosed &lt;b&gt;\nto the end</code></pre>");
  CHECK(markdownToHtml("1. step\n   ```sh\n   make\n   ```") == "1. step\n<pre><code class=\"language-sh\">make</code></pre>");
  CHECK(markdownToHtml("```\n```") == "");
}

TEST_CASE("headings, quotes and lists") {
  CHECK(markdownToHtml("# Title\n## Sub *it* ##\ntext") == "<b>Title</b>\n<b>Sub <i>it</i></b>\ntext");
  CHECK(markdownToHtml("#hashtag and C#") == "#hashtag and C#");
  CHECK(markdownToHtml("> quoted **b**\n> more\n\nafter") == "<blockquote>quoted <b>b</b>\nmore</blockquote>\n\nafter");
  CHECK(markdownToHtml("> outer\n> > inner") == "<blockquote>outer\n&gt; inner</blockquote>");
  CHECK(markdownToHtml("- one\n* two *it*\n  + nested\n1. first\n2) second") ==
        "• one\n• two <i>it</i>\n  • nested\n1. first\n2) second");
  CHECK(markdownToHtml("- [ ] todo\n- [x] done") == "☐ todo\n☑ done");
  CHECK(markdownToHtml("\n\n  \ntext\n\n") == "text");
}

TEST_CASE("links: only http, https and tg, with the URL escaped") {
  CHECK(markdownToHtml("[docs](https://example.com/a_b?x=1&y=\"2\")") ==
        "<a href=\"https://example.com/a_b?x=1&amp;y=&quot;2&quot;\">docs</a>");
  CHECK(markdownToHtml("[**bold** link](http://x.y/(paren))") == "<a href=\"http://x.y/(paren)\"><b>bold</b> link</a>");
  CHECK(markdownToHtml("[me](tg://user?id=1)") == "<a href=\"tg://user?id=1\">me</a>");
  CHECK(markdownToHtml("[](https://x.y)") == "<a href=\"https://x.y\">https://x.y</a>");
  CHECK(markdownToHtml("[click](javascript:alert(1))") == "click (javascript:alert(1))");
  CHECK(markdownToHtml("[x](JavaScript:alert(document.cookie))") == "x (JavaScript:alert(document.cookie))");
  CHECK(markdownToHtml("[x](data:text/html,<script>alert(1)</script>)") == "x (data:text/html,&lt;script&gt;alert(1)&lt;/script&gt;)");
  CHECK(markdownToHtml("[rel](/etc/passwd)") == "rel (/etc/passwd)");
  CHECK(markdownToHtml("[a [b](http://in) c](http://out)") == "<a href=\"http://out\">a [b](http://in) c</a>");
  CHECK(markdownToHtml("[x](http://a.b\" onclick=\"y)") == "[x](http://a.b&quot; onclick=&quot;y)");  // spaces: no link
}

TEST_CASE("raw HTML, NUL bytes and invalid UTF-8 from the model are shown, never interpreted") {
  CHECK(markdownToHtml("<script>alert(1)</script> <a href=\"javascript:x\">y</a> &amp;") ==
        "&lt;script&gt;alert(1)&lt;/script&gt; &lt;a href=&quot;javascript:x&quot;&gt;y&lt;/a&gt; &amp;amp;");
  CHECK(markdownToHtml(std::string_view("a\0b \xff\xc3 **c\x01**", 13)) ==
        "a\xEF\xBF\xBD" "b \xEF\xBF\xBD\xEF\xBF\xBD <b>c\xEF\xBF\xBD</b>");
  CHECK(markdownToHtml("a\r\nb") == "a\nb");
}

TEST_CASE("deeply nested and pathological markers stay well-formed and fast") {
  std::string nested;
  for (int k = 0; k < 3000; ++k) nested += k % 2 ? "_" : "*";
  nested += "x";
  for (int k = 3000; k-- > 0;) nested += k % 2 ? "_" : "*";
  std::string html = markdownToHtml(nested);
  CHECK(checkHtml(html).error.empty());
  CHECK(html.find("x") != std::string::npos);

  std::string hostile;
  for (int k = 0; k < 20000; ++k) hostile += k % 3 ? "[" : "`";
  for (int k = 1; k < 300; ++k) hostile += " " + std::string(static_cast<size_t>(k), '`') + "[a](http://" + std::string(100, '(');
  hostile += std::string(20000, '*') + "a" + std::string(20000, '_');
  CHECK(checkHtml(markdownToHtml(hostile)).error.empty());
  checkPieces(hostile, 4096);
}

TEST_CASE("a long answer is cut at paragraph boundaries") {
  std::string answer;
  for (int p = 0; p < 25; ++p) {
    std::string para = "P" + std::to_string(p) + " *start*";
    while (para.size() < 393) para += " lorem";
    answer += para.substr(0, 393) + " end." + (p < 24 ? "\n\n" : "");
  }
  REQUIRE(answer.size() == 9998);
  std::vector<std::string> pieces = splitForTelegram(answer);
  REQUIRE(pieces.size() == 3);
  for (const std::string& p : pieces) {
    CAPTURE(p);
    CHECK(p.rfind("P", 0) == 0);  // starts with a paragraph
    CHECK(p.size() <= 4096);
    CHECK(p.find("\n\nP") != std::string::npos);
  }
  CHECK(pieces[0].size() > 3000);  // not cut at the first blank line
  checkPieces(answer, 4096);
}

TEST_CASE("cuts prefer a line end, then a space, and only then anywhere") {
  std::string lines;
  for (int k = 0; k < 40; ++k) lines += "line " + std::to_string(k) + " with some words\n";
  for (const std::string& p : splitForTelegram(lines, 100)) {
    CAPTURE(p);
    CHECK(p.rfind("line ", 0) == 0);
    CHECK(p.back() == 's');
  }
  std::string words;
  for (int k = 0; k < 100; ++k) words += "word" + std::to_string(k % 10) + " ";
  for (const std::string& p : splitForTelegram(words, 50)) {
    CAPTURE(p);
    CHECK(p.rfind("word", 0) == 0);
    CHECK(p.size() % 6 == 5);  // whole words only
  }
  std::vector<std::string> pieces = splitForTelegram(std::string(5000, 'x'));
  REQUIRE(pieces.size() == 2);
  CHECK(pieces[0] == std::string(4096, 'x'));
  CHECK(pieces[1] == std::string(904, 'x'));
}

TEST_CASE("tags open at a cut are closed and reopened") {
  std::string md = "**" + std::string(60, 'a') + " " + std::string(60, 'b') + "**";
  std::vector<std::string> pieces = splitForTelegram(md, 80);
  REQUIRE(pieces.size() == 2);
  CHECK(pieces[0] == "<b>" + std::string(60, 'a') + "</b>");
  CHECK(pieces[1] == "<b>" + std::string(60, 'b') + "</b>");

  pieces = splitForTelegram("[" + std::string(30, 'a') + " " + std::string(30, 'b') + "](https://example.com/x)", 70);
  REQUIRE(pieces.size() == 2);
  CHECK(pieces[0] == "<a href=\"https://example.com/x\">" + std::string(30, 'a') + "</a>");
  CHECK(pieces[1] == "<a href=\"https://example.com/x\">" + std::string(30, 'b') + "</a>");
}

TEST_CASE("a code block longer than the limit becomes several pre blocks") {
  std::string md = "Here:\n```cpp\n";
  for (int k = 0; k < 400; ++k) md += "int x" + std::to_string(k) + " = a < b && c;\n";
  md += "```\nDone.";
  std::vector<std::string> pieces = splitForTelegram(md);
  REQUIRE(pieces.size() >= 3);
  size_t blocks = 0;
  for (const std::string& p : pieces) {
    CHECK(utf16Length(p) <= 4096);
    if (p.find("<pre><code class=\"language-cpp\">int x") != std::string::npos) ++blocks;
    if (p.find("<pre>") != std::string::npos) CHECK(p.find("</code></pre>") != std::string::npos);
  }
  CHECK(blocks == pieces.size());
  checkPieces(md, 4096);
  checkPieces(md, 100);
  checkPieces(md, 20);  // too small for the language: plain pre blocks
}

TEST_CASE("emoji at a cut are not split") {
  std::string md = "a";
  for (int k = 0; k < 3000; ++k) md += "😀";
  std::vector<std::string> pieces = splitForTelegram(md);
  REQUIRE(pieces.size() == 2);
  CHECK(utf16Length(pieces[0]) == 4095);  // 4096 would cut a surrogate pair
  CHECK(validUtf8(pieces[0]));
  CHECK(validUtf8(pieces[1]));
  CHECK(pieces[0] + pieces[1] == md);
  std::vector<std::string> plain = splitPlain(md, 101);
  for (const std::string& p : plain) CHECK((validUtf8(p) && utf16Length(p) <= 101));
}

TEST_CASE("entities and tags are never cut") {
  std::string md(30, '&');
  for (size_t limit : {8, 9, 10, 11, 13, 17, 23}) {
    CAPTURE(limit);
    checkPieces(md, limit);
    checkPieces("**<<>>** `\"&\"` [&](https://a.b/&&&)", limit);
  }
}

TEST_CASE("a link whose tag alone exceeds the limit keeps its text, unlinked") {
  std::string md = "[click here](https://example.com/" + std::string(200, 'q') + ")";
  std::vector<std::string> pieces = splitForTelegram(md, 100);
  REQUIRE(pieces.size() == 1);
  CHECK(pieces[0] == "click here");
}

TEST_CASE("splitPlain cuts plain text the same way and treats markup as text") {
  std::string text;
  for (int k = 0; k < 30; ++k) text += "<b>para " + std::to_string(k) + "</b> & more\n\n";
  std::vector<std::string> pieces = splitPlain(text, 100);
  std::string joined;
  for (const std::string& p : pieces) {
    CAPTURE(p);
    CHECK(utf16Length(p) <= 100);
    CHECK(p.rfind("<b>para", 0) == 0);
    CHECK(p.substr(p.size() - 4) == "more");
    joined += p;
  }
  CHECK(withoutSpace(joined) == withoutSpace(text));
  CHECK(splitPlain("   \n\n  ").empty());
  CHECK(splitPlain(std::string_view("x\0y\xff", 4)) == std::vector<std::string>{"x\xEF\xBF\xBDy\xEF\xBF\xBD"});
}

TEST_CASE("fuzz: any input renders and splits into acceptable messages") {
  static const std::vector<std::string> kAlphabet = {
      "*", "**", "***", "_", "__", "~~", "~", "`", "``", "```", "```py\n", "```\n", "[", "]", "(", ")", "](",
      "](http://a.b/", "](https://x.y/a_b)", "](javascript:alert(1))", "](data:x)", "](tg://u)", "#", "# ", "## ", "> ",
      ">", "- ", "* ", "1. ", "\n", "\n\n", "\n\n\n", " ", "  ", "\t", "<", ">", "&", "\"", "'", "\\", "a", "word",
      "snake_case_name", "2 * 3", "é", "中文", "😀", "👍🏽", "\xff", "\xc3", "\xed\xa0\x80", std::string("\0", 1), "\r\n",
      "<script>", "</b>", "&amp;", "&#60;", "http://x.y/a_b", "https://q.r/(x)*", "- [ ] ", "~~~\n"};
  std::mt19937 rng(20240601);
  for (int round = 0; round < 2000; ++round) {
    size_t tokens = rng() % (round % 10 == 0 ? 600 : 60);
    std::string md;
    for (size_t k = 0; k < tokens; ++k) md += kAlphabet[rng() % kAlphabet.size()];
    CAPTURE(md);
    std::string html = markdownToHtml(md);
    Checked c = checkHtml(html);
    REQUIRE_MESSAGE(c.error.empty(), c.error, " in: ", html);
    for (size_t limit : {4096, 100, 20}) {
      CAPTURE(limit);
      checkPieces(md, limit);
      std::string plainJoined;
      for (const std::string& p : splitPlain(md, limit)) {
        REQUIRE(validUtf8(p));
        REQUIRE(utf16Length(p) <= limit);
        plainJoined += p;
      }
      REQUIRE(withoutSpace(plainJoined) == withoutSpace(visible(escapeHtml(md))));
    }
  }
}
