// Markdown → Telegram HTML, and cutting HTML into messages. Rendering is done in three layers:
// lines (code fences, quotes, headings, bullets), inline spans (a simplified CommonMark delimiter
// algorithm, which nests matched pairs by construction), and a final tidy pass that re-checks the
// nesting, caps its depth and drops empty elements, so a bug above cannot produce bad HTML.
#include "broker/telegram/html_render.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>

namespace pine::telegram {
namespace {
// A named namespace inside the anonymous one: unity builds merge anonymous namespaces of several
// files, and these short helper names must not meet another file's.
namespace html_render_impl {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
constexpr size_t kMaxLinkUrl = 2048;    // bounds the scan for ')' so hostile input stays linear
constexpr size_t kMaxLangName = 32;     // a longer "language" is not one; it would only bloat every piece
constexpr size_t kMaxTagDepth = 12;     // deeper nesting is hostile; the tags are dropped, the text kept
constexpr size_t kMaxMarkerRun = 12;    // a longer run of * or _ is a separator, not formatting
constexpr size_t kUnitReserve = 6;      // the longest unit a piece must always have room for: "&quot;"
constexpr size_t kMinSplitLimit = 8;

// ---- UTF-8 ----

struct CodePoint {
  char32_t cp;
  size_t len;
  bool valid;
};

// Strict decoding: overlong forms, surrogates and values above U+10FFFF are invalid; an invalid
// sequence consumes one byte so that each bad byte is reported (and counted) once.
CodePoint decodeAt(std::string_view s, size_t i) {
  auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return {b0, 1, true};
  size_t n;
  char32_t cp, min;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2, cp = b0 & 0x1F, min = 0x80;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3, cp = b0 & 0x0F, min = 0x800;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return {0xFFFD, 1, false};
  }
  if (i + n > s.size()) return {0xFFFD, 1, false};
  for (size_t k = 1; k < n; ++k) {
    auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return {0xFFFD, 1, false};
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0xFFFD, 1, false};
  return {cp, n, true};
}

// Valid UTF-8 without NUL or other control characters (Telegram rejects the former, the latter
// are invisible tricks); CR LF and lone CR become LF so lines have one shape.
std::string sanitizeUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    CodePoint c = decodeAt(s, i);
    if (!c.valid) {
      out += kReplacement;
    } else if (c.cp == '\r') {
      out += '\n';
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else if ((c.cp < 0x20 && c.cp != '\t' && c.cp != '\n') || c.cp == 0x7F) {
      out += kReplacement;
    } else {
      out.append(s.substr(i, c.len));
    }
    i += c.len;
  }
  return out;
}

// Escapes text that is already sanitized.
void appendEscaped(std::string& out, std::string_view s) {
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
}

std::string escaped(std::string_view s) {
  std::string out;
  appendEscaped(out, s);
  return out;
}

// ---- character classes (ASCII; other bytes count as letters, which suits words in any script) ----

bool isBlank(int c) { return c == ' ' || c == '\t' || c == '\n'; }

bool isAsciiPunct(int c) {
  return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
}

bool isAsciiAlnum(int c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

bool startsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != prefix[i]) return false;
  }
  return true;
}

// ---- inline spans ----

// A piece of a line: finished HTML, or a run of * _ ~ that may become tags. A run used as a
// closer emits its closing tags before its remaining literal characters, one used as an opener
// emits its opening tags after them, which keeps the nesting of CommonMark.
struct InlineToken {
  std::string html;
  char delim = 0;
  size_t count = 0;
  size_t original = 0;
  bool canOpen = false;
  bool canClose = false;
  std::string opens;
  std::string closes;
};

// Positions of the `]` matching each `[` (npos when none), ignoring backslash-escaped brackets.
std::vector<size_t> matchBrackets(std::string_view s) {
  std::vector<size_t> match(s.size(), std::string_view::npos);
  std::vector<size_t> open;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && isAsciiPunct(static_cast<unsigned char>(s[i + 1]))) {
      ++i;
    } else if (s[i] == '[') {
      open.push_back(i);
    } else if (s[i] == ']' && !open.empty()) {
      match[open.back()] = i;
      open.pop_back();
    }
  }
  return match;
}

// Start positions of every maximal backtick run, by length: finding the run that closes a code
// span is then a binary search instead of a rescan of the line (quadratic on hostile input).
std::map<size_t, std::vector<size_t>> backtickRuns(std::string_view s) {
  std::map<size_t, std::vector<size_t>> runs;
  for (size_t i = 0; i < s.size();) {
    if (s[i] != '`') {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < s.size() && s[j] == '`') ++j;
    runs[j - i].push_back(i);
    i = j;
  }
  return runs;
}

struct LineScan {
  std::string_view text;
  bool allowLinks;
  std::vector<size_t> brackets;
  std::map<size_t, std::vector<size_t>> ticks;
  std::vector<InlineToken> tokens;
};

std::string renderInline(std::string_view text, bool allowLinks);

void appendHtml(LineScan& scan, std::string_view html) {
  if (scan.tokens.empty() || scan.tokens.back().delim != 0) scan.tokens.emplace_back();
  scan.tokens.back().html += html;
}

// `code`: a run of n backticks closed by the next run of exactly n. Returns the end, or 0 when
// the run is literal.
size_t scanCodeSpan(LineScan& scan, size_t i) {
  std::string_view s = scan.text;
  size_t n = 0;
  while (i + n < s.size() && s[i + n] == '`') ++n;
  auto it = scan.ticks.find(n);
  if (it != scan.ticks.end()) {
    auto pos = std::lower_bound(it->second.begin(), it->second.end(), i + n);
    if (pos != it->second.end()) {
      std::string_view body = s.substr(i + n, *pos - i - n);
      // As CommonMark: one space on each side is padding, so `` `x` `` can show a backtick.
      if (body.size() >= 2 && body.front() == ' ' && body.back() == ' ' &&
          body.find_first_not_of(' ') != std::string_view::npos) {
        body = body.substr(1, body.size() - 2);
      }
      appendHtml(scan, "<code>" + escaped(body) + "</code>");
      return *pos + n;
    }
  }
  appendHtml(scan, s.substr(i, n));
  return i + n;
}

bool isSafeUrl(std::string_view url) {
  for (std::string_view scheme : {"http://", "https://", "tg://"}) {
    if (startsWithNoCase(url, scheme) && url.size() > scheme.size()) return true;
  }
  return false;
}

// [text](url). Returns the end, or 0 when this `[` does not start a link.
size_t scanLink(LineScan& scan, size_t i) {
  std::string_view s = scan.text;
  size_t close = scan.brackets[i];
  if (close == std::string_view::npos || close + 1 >= s.size() || s[close + 1] != '(') return 0;
  size_t start = close + 2, depth = 0, q = start;
  for (; q < s.size() && q - start <= kMaxLinkUrl; ++q) {
    char c = s[q];
    if (isBlank(static_cast<unsigned char>(c))) return 0;
    if (c == '(') ++depth;
    if (c == ')' && depth-- == 0) break;
  }
  if (q >= s.size() || s[q] != ')' || q == start) return 0;
  std::string_view label = s.substr(i + 1, close - i - 1);
  std::string_view url = s.substr(start, q - start);
  std::string inner = renderInline(label, false);  // no links inside links: Telegram forbids them
  if (label.find_first_not_of(" \t") == std::string_view::npos) inner = escaped(url);
  if (isSafeUrl(url)) {
    appendHtml(scan, "<a href=\"" + escaped(url) + "\">" + inner + "</a>");
  } else {
    // javascript:, data:, relative paths…: the reader still sees where it pointed, unclickable.
    appendHtml(scan, inner + " (" + escaped(url) + ")");
  }
  return q + 1;
}

// A bare URL is kept whole, so the underscores and asterisks in it are not read as emphasis.
// Trailing punctuation is left out of it, as GitHub's autolinks do. Returns the end, or 0.
size_t scanBareUrl(LineScan& scan, size_t i) {
  std::string_view s = scan.text;
  if (i > 0 && isAsciiAlnum(static_cast<unsigned char>(s[i - 1]))) return 0;
  if (!startsWithNoCase(s.substr(i), "http://") && !startsWithNoCase(s.substr(i), "https://")) return 0;
  size_t end = i;
  while (end < s.size() && !isBlank(static_cast<unsigned char>(s[end])) && s[end] != '<') ++end;
  for (;;) {
    std::string_view url = s.substr(i, end - i);
    char last = url.back();
    bool unbalanced = (last == ')' && std::count(url.begin(), url.end(), '(') < std::count(url.begin(), url.end(), ')')) ||
                      (last == ']' && std::count(url.begin(), url.end(), '[') < std::count(url.begin(), url.end(), ']'));
    if (!unbalanced && std::string_view(".,:;!?*_~'\"`").find(last) == std::string_view::npos) break;
    --end;
  }
  appendHtml(scan, escaped(s.substr(i, end - i)));
  return end;
}

// A run of * _ or ~~, with CommonMark's flanking rules deciding whether it may open or close;
// `_` must also not be inside a word, so snake_case_names stay as they are.
size_t scanDelimiterRun(LineScan& scan, size_t i) {
  std::string_view s = scan.text;
  char c = s[i];
  size_t n = 0;
  while (i + n < s.size() && s[i + n] == c) ++n;
  if ((c == '~' && n != 2) || n > kMaxMarkerRun) {  // also bounds the tags one run can carry
    appendHtml(scan, s.substr(i, n));
    return i + n;
  }
  int prev = i > 0 ? static_cast<unsigned char>(s[i - 1]) : -1;
  int next = i + n < s.size() ? static_cast<unsigned char>(s[i + n]) : -1;
  bool prevBlank = prev < 0 || isBlank(prev), nextBlank = next < 0 || isBlank(next);
  bool prevPunct = prev >= 0 && isAsciiPunct(prev), nextPunct = next >= 0 && isAsciiPunct(next);
  bool left = !nextBlank && (!nextPunct || prevBlank || prevPunct);
  bool right = !prevBlank && (!prevPunct || nextBlank || nextPunct);
  InlineToken t;
  t.delim = c;
  t.count = t.original = n;
  t.canOpen = c == '_' ? left && (!right || prevPunct) : left;
  t.canClose = c == '_' ? right && (!left || nextPunct) : right;
  scan.tokens.push_back(std::move(t));
  return i + n;
}

size_t scanOne(LineScan& scan, size_t i) {
  std::string_view s = scan.text;
  char c = s[i];
  if (c == '\\' && i + 1 < s.size() && isAsciiPunct(static_cast<unsigned char>(s[i + 1]))) {
    appendHtml(scan, escaped(s.substr(i + 1, 1)));
    return i + 2;
  }
  if (c == '`') return scanCodeSpan(scan, i);
  if (c == '[' && scan.allowLinks) {
    if (size_t end = scanLink(scan, i)) return end;
  }
  if (c == 'h' || c == 'H') {
    if (size_t end = scanBareUrl(scan, i)) return end;
  }
  if (c == '*' || c == '_' || c == '~') return scanDelimiterRun(scan, i);
  size_t j = i + 1;  // plain text up to the next character that may mean something
  while (j < s.size() && std::string_view("\\`[hH*_~").find(s[j]) == std::string_view::npos) ++j;
  appendHtml(scan, escaped(s.substr(i, j - i)));
  return j;
}

int delimIndex(char c) { return c == '*' ? 0 : c == '_' ? 1 : 2; }

// CommonMark's "process emphasis", in one pass with a stack of potential openers. Delimiters
// between a matched pair leave the stack, so matched pairs always nest. openersBottom remembers
// where a failed search stopped, which keeps runs of unmatched markers linear.
void matchDelimiters(std::vector<InlineToken>& tokens) {
  std::vector<size_t> stack;
  size_t bottom[3][2][3] = {};
  for (size_t ti = 0; ti < tokens.size(); ++ti) {
    InlineToken& closer = tokens[ti];
    if (closer.delim == 0) continue;
    size_t& floor = bottom[delimIndex(closer.delim)][closer.canOpen ? 1 : 0][closer.original % 3];
    while (closer.canClose && closer.count > 0) {
      size_t s = stack.size();
      for (; s > floor; --s) {
        const InlineToken& o = tokens[stack[s - 1]];
        if (o.delim != closer.delim) continue;
        bool oddMatch = (o.canClose || closer.canOpen) && (o.original + closer.original) % 3 == 0 &&
                        !(o.original % 3 == 0 && closer.original % 3 == 0);
        if (!oddMatch || closer.delim == '~') break;
      }
      if (s <= floor) {
        floor = stack.size();
        break;
      }
      InlineToken& opener = tokens[stack[s - 1]];
      size_t use = closer.delim == '~' ? 2 : (opener.count >= 2 && closer.count >= 2 ? 2 : 1);
      std::string_view tag = closer.delim == '~' ? "s" : use == 2 ? "b" : "i";
      opener.opens = "<" + std::string(tag) + ">" + opener.opens;
      closer.closes += "</" + std::string(tag) + ">";
      opener.count -= use;
      closer.count -= use;
      stack.resize(opener.count > 0 ? s : s - 1);
      for (auto& byKind : bottom)
        for (auto& byOpen : byKind)
          for (size_t& b : byOpen) b = std::min(b, stack.size());
    }
    if (closer.canOpen && closer.count > 0) stack.push_back(ti);
  }
}

std::string renderInline(std::string_view text, bool allowLinks) {
  LineScan scan{text, allowLinks, allowLinks ? matchBrackets(text) : std::vector<size_t>{}, backtickRuns(text), {}};
  for (size_t i = 0; i < text.size();) i = scanOne(scan, i);
  matchDelimiters(scan.tokens);
  std::string out;
  for (const InlineToken& t : scan.tokens) {
    out += t.delim ? t.closes + std::string(t.count, t.delim) + t.opens : t.html;
  }
  return out;
}

// ---- lines and blocks ----

std::string_view trimRight(std::string_view s) {
  size_t end = s.find_last_not_of(" \t");
  return end == std::string_view::npos ? std::string_view() : s.substr(0, end + 1);
}

std::string_view trimLeft(std::string_view s) {
  size_t start = s.find_first_not_of(" \t");
  return start == std::string_view::npos ? std::string_view() : s.substr(start);
}

std::string_view trimBlank(std::string_view s) {
  size_t start = s.find_first_not_of(" \t\n");
  return start == std::string_view::npos ? std::string_view() : s.substr(start, s.find_last_not_of(" \t\n") + 1 - start);
}

// "# Title" → bold; "- item" → "• item" (Telegram has no lists); anything else is inline text.
std::string renderLine(std::string_view line) {
  line = trimRight(line);
  size_t indent = line.find_first_not_of(' ');
  if (indent == std::string_view::npos) return "";
  std::string_view rest = line.substr(indent);
  size_t hashes = rest.find_first_not_of('#');
  if (indent <= 3 && hashes >= 1 && hashes <= 6 && (hashes == rest.size() || isBlank(static_cast<unsigned char>(rest[hashes])))) {
    std::string_view title = trimLeft(rest.substr(hashes));
    size_t closing = title.find_last_not_of('#');  // "## Title ##"
    if (closing != std::string_view::npos && closing + 1 < title.size() && isBlank(static_cast<unsigned char>(title[closing]))) {
      title = trimRight(title.substr(0, closing));
    } else if (closing == std::string_view::npos) {
      title = {};
    }
    return "<b>" + renderInline(title, true) + "</b>";
  }
  if (rest.size() >= 2 && (rest[0] == '-' || rest[0] == '*' || rest[0] == '+') && isBlank(static_cast<unsigned char>(rest[1]))) {
    std::string_view item = trimLeft(rest.substr(2));
    std::string bullet = "• ";
    if (item.size() >= 3 && item[0] == '[' && item[2] == ']' && (item.size() == 3 || item[3] == ' ')) {
      if (item[1] == ' ') bullet = "☐ ", item = trimLeft(item.substr(3));
      else if (item[1] == 'x' || item[1] == 'X') bullet = "☑ ", item = trimLeft(item.substr(3));
    }
    return std::string(indent, ' ') + bullet + renderInline(item, true);
  }
  return std::string(indent, ' ') + renderInline(rest, true);
}

struct Fence {
  char marker;
  size_t length;
  size_t indent;
  std::string_view info;
};

// ``` or ~~~ (three or more), at any indentation since models indent code inside list items.
std::optional<Fence> openingFence(std::string_view line) {
  size_t indent = line.find_first_not_of(' ');
  if (indent == std::string_view::npos || (line[indent] != '`' && line[indent] != '~')) return std::nullopt;
  char marker = line[indent];
  size_t end = line.find_first_not_of(marker, indent);
  size_t length = (end == std::string_view::npos ? line.size() : end) - indent;
  if (length < 3) return std::nullopt;
  std::string_view info = trimLeft(trimRight(line.substr(indent + length)));
  if (marker == '`' && info.find('`') != std::string_view::npos) return std::nullopt;  // ```inline``` on one line
  return Fence{marker, length, indent, info};
}

bool closesFence(std::string_view line, const Fence& fence) {
  std::string_view t = trimLeft(trimRight(line));
  return t.size() >= fence.length && t.find_first_not_of(fence.marker) == std::string_view::npos;
}

// Only a plain identifier may go into the class attribute; anything else is dropped.
std::string_view languageOf(std::string_view info) {
  std::string_view lang = info.substr(0, info.find_first_of(" \t{"));
  if (lang.empty() || lang.size() > kMaxLangName) return {};
  for (char c : lang) {
    if (!isAsciiAlnum(static_cast<unsigned char>(c)) && c != '_' && c != '+' && c != '-') return {};
  }
  return lang;
}

std::string renderCodeBlock(const std::vector<std::string_view>& lines, const Fence& fence) {
  std::string body;
  for (size_t k = 0; k < lines.size(); ++k) {
    std::string_view l = lines[k];
    size_t strip = std::min(fence.indent, l.find_first_not_of(' ') == std::string_view::npos ? l.size() : l.find_first_not_of(' '));
    if (k) body += '\n';
    appendEscaped(body, l.substr(strip));
  }
  std::string_view lang = languageOf(fence.info);
  if (lang.empty()) return "<pre>" + body + "</pre>";
  return "<pre><code class=\"language-" + std::string(lang) + "\">" + body + "</code></pre>";
}

bool isQuoteLine(std::string_view line) {
  size_t indent = line.find_first_not_of(' ');
  return indent != std::string_view::npos && indent <= 3 && line[indent] == '>';
}

std::string_view unquote(std::string_view line) {
  line = line.substr(line.find('>') + 1);
  return !line.empty() && line[0] == ' ' ? line.substr(1) : line;
}

std::vector<std::string_view> splitLines(std::string_view s) {
  std::vector<std::string_view> lines;
  for (size_t start = 0;;) {
    size_t nl = s.find('\n', start);
    lines.push_back(s.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start));
    if (nl == std::string_view::npos) return lines;
    start = nl + 1;
  }
}

// ---- HTML units: what the tidy pass and the splitter walk over ----

struct HtmlUnit {
  enum class Kind : std::uint8_t { Text, Open, Close };
  Kind kind;
  char blank;             // for text: ' ' (space or tab), '\n', or 0 when visible
  size_t u16;             // length as Telegram counts it
  std::string_view text;  // the unit's bytes
  std::string_view name;  // for tags: the element name
};

// Splits our own HTML (or plain text, markup=false) into tags, entities and code points: the
// units that must never be cut.
std::vector<HtmlUnit> htmlUnits(std::string_view s, bool markup) {
  std::vector<HtmlUnit> units;
  for (size_t i = 0; i < s.size();) {
    size_t end = std::string_view::npos;
    if (markup && (s[i] == '<' || s[i] == '&')) end = s.find(s[i] == '<' ? '>' : ';', i);
    if (end != std::string_view::npos) {
      std::string_view text = s.substr(i, end + 1 - i);
      if (s[i] == '&') {
        units.push_back({HtmlUnit::Kind::Text, 0, text.size(), text, {}});
      } else {
        bool close = text.size() > 1 && text[1] == '/';
        std::string_view name = text.substr(close ? 2 : 1);
        name = name.substr(0, std::min(name.find(' '), name.size() - 1));
        units.push_back({close ? HtmlUnit::Kind::Close : HtmlUnit::Kind::Open, 0, text.size(), text, name});
      }
      i = end + 1;
      continue;
    }
    CodePoint c = decodeAt(s, i);
    char blank = c.cp == '\n' ? '\n' : (c.cp == ' ' || c.cp == '\t') ? ' ' : 0;
    units.push_back({HtmlUnit::Kind::Text, blank, c.valid && c.cp >= 0x10000 ? 2u : 1u, s.substr(i, c.len), {}});
    i += c.len;
  }
  return units;
}

std::string closeTag(std::string_view name) { return "</" + std::string(name) + ">"; }

// The safety net over the renderer and the splitter: stray closing tags are dropped, unclosed
// ones closed, tags nested deeper than kMaxTagDepth dropped (their text kept), and elements left
// empty (by a cut, or an empty `code`) removed.
std::string tidyHtml(std::string_view html) {
  struct Open {
    std::string_view name;
    bool kept;
    size_t tagStart;
    size_t contentStart;
  };
  std::string out;
  std::vector<Open> stack;
  auto closeTop = [&] {
    Open top = stack.back();
    stack.pop_back();
    if (!top.kept) return;
    if (out.size() == top.contentStart) {
      out.resize(top.tagStart);
    } else {
      out += closeTag(top.name);
    }
  };
  for (const HtmlUnit& u : htmlUnits(html, true)) {
    if (u.kind == HtmlUnit::Kind::Text) {
      out += u.text;
    } else if (u.kind == HtmlUnit::Kind::Open) {
      bool keep = stack.size() < kMaxTagDepth;
      size_t tagStart = out.size();
      if (keep) out += u.text;
      stack.push_back({u.name, keep, tagStart, out.size()});
    } else if (!stack.empty() && stack.back().name == u.name) {
      closeTop();
    }
  }
  while (!stack.empty()) closeTop();
  return out;
}

bool hasVisibleText(std::string_view text, bool markup) {
  for (const HtmlUnit& u : htmlUnits(text, markup)) {
    if (u.kind == HtmlUnit::Kind::Text && !u.blank) return true;
  }
  return false;
}

// ---- cutting into messages ----

struct OpenTag {
  size_t unit;  // the opening tag's unit, reopened at the start of each following piece
  bool emitted;  // false when the tag did not fit in this piece: its text goes out unformatted
};

// The state of a piece being filled, which a cut rewinds to.
struct PieceState {
  size_t unit = 0;
  size_t outLength = 0;
  size_t used = 0;     // UTF-16 units in the piece so far
  size_t closers = 0;  // UTF-16 units the closing tags of `stack` will take
  std::vector<OpenTag> stack;
  bool valid = false;
};

class PieceFiller {
 public:
  PieceFiller(const std::vector<HtmlUnit>& units, size_t limit, const std::vector<OpenTag>& stack)
      : units_(units), limit_(limit) {
    for (OpenTag t : stack) {
      t.emitted = false;
      openTag(t);
    }
  }

  // Fills the piece from unit `i`; returns where the next piece starts.
  size_t fill(size_t i) {
    for (size_t j = i; j < units_.size(); ++j) {
      const HtmlUnit& u = units_[j];
      if (u.kind != HtmlUnit::Kind::Text || !u.blank) endBlankRun();
      if (u.kind == HtmlUnit::Kind::Text) {
        if (u.blank) noteBlank(j, u.blank);
        if (s_.used + u.u16 + s_.closers > limit_) return cut(j);
        out_ += u.text;
        s_.used += u.u16;
        visible_ = visible_ || !u.blank;
      } else if (u.kind == HtmlUnit::Kind::Open) {
        if (!openTag({j, false}) && visible_) {
          s_.stack.pop_back();
          return cut(j);  // the next piece has room for it
        }
      } else if (!s_.stack.empty()) {
        OpenTag top = s_.stack.back();
        s_.stack.pop_back();
        if (top.emitted) {
          out_ += u.text;
          s_.used += u.u16;
          s_.closers -= u.u16;
        }
      }
    }
    return units_.size();
  }

  // The piece with its open tags closed, and the tags still open for the next one.
  std::string finish(std::vector<OpenTag>& stack) {
    for (auto it = s_.stack.rbegin(); it != s_.stack.rend(); ++it) {
      if (it->emitted) out_ += closeTag(units_[it->unit].name);
    }
    stack = s_.stack;
    return out_;
  }

 private:
  // Emits the tag if it, its closing tag and one more unit fit; returns whether it did.
  bool openTag(OpenTag t) {
    const HtmlUnit& u = units_[t.unit];
    size_t closeLength = u.name.size() + 3;
    t.emitted = s_.used + s_.closers + u.u16 + closeLength + kUnitReserve <= limit_;
    if (t.emitted) {
      out_ += u.text;
      s_.used += u.u16;
      s_.closers += closeLength;
    }
    s_.stack.push_back(t);
    return t.emitted;
  }

  void noteBlank(size_t j, char blank) {
    if (!inRun_) {
      inRun_ = true;
      newlines_ = 0;
      pending_ = s_;
      pending_.unit = j;
      pending_.outLength = out_.size();
      pending_.valid = visible_;  // a cut before any visible text would leave an empty piece
    }
    if (blank == '\n') ++newlines_;
  }

  void endBlankRun() {
    if (!inRun_) return;
    inRun_ = false;
    if (pending_.valid) candidates_[newlines_ >= 2 ? 0 : newlines_ == 1 ? 1 : 2] = pending_;
  }

  // Blank line, else line end, else space, as long as the piece is at least half full; else the
  // latest of them; else right here.
  size_t cut(size_t j) {
    endBlankRun();
    const PieceState* best = nullptr;
    for (const PieceState& c : candidates_) {
      if (c.valid && c.used * 2 >= limit_) {
        best = &c;
        break;
      }
    }
    const PieceState* latest = nullptr;
    for (const PieceState& c : candidates_) {
      if (c.valid && (!latest || c.unit > latest->unit)) latest = &c;
    }
    if (!best) best = latest;
    if (!best) return j;
    s_ = *best;
    out_.resize(s_.outLength);
    size_t next = s_.unit;
    while (next < units_.size() && units_[next].kind == HtmlUnit::Kind::Text && units_[next].blank) ++next;
    return next;
  }

  const std::vector<HtmlUnit>& units_;
  size_t limit_;
  std::string out_;
  PieceState s_;
  bool visible_ = false;
  bool inRun_ = false;
  size_t newlines_ = 0;
  PieceState pending_;
  std::array<PieceState, 3> candidates_;
};

std::vector<std::string> splitUnits(std::string_view text, bool markup, size_t limit) {
  limit = std::max(limit, kMinSplitLimit);
  std::vector<HtmlUnit> units = htmlUnits(text, markup);
  std::vector<std::string> pieces;
  std::vector<OpenTag> stack;
  for (size_t i = 0; i < units.size();) {
    PieceFiller filler(units, limit, stack);
    i = filler.fill(i);
    std::string piece = filler.finish(stack);
    if (markup) {
      piece = tidyHtml(piece);  // drops the elements a cut left empty
    } else {
      piece = std::string(trimBlank(piece));  // Telegram would trim it anyway
    }
    if (hasVisibleText(piece, markup)) pieces.push_back(std::move(piece));  // whitespace alone is not a message
  }
  return pieces;
}

}  // namespace html_render_impl
}  // namespace

std::string escapeHtml(std::string_view text) { return html_render_impl::escaped(html_render_impl::sanitizeUtf8(text)); }

std::string markdownToHtml(std::string_view markdown) {
  using namespace html_render_impl;
  std::string clean = sanitizeUtf8(markdown);
  std::vector<std::string_view> lines = splitLines(clean);
  std::vector<std::string> blocks;
  for (size_t i = 0; i < lines.size();) {
    if (auto fence = openingFence(lines[i])) {
      size_t end = i + 1;
      while (end < lines.size() && !closesFence(lines[end], *fence)) ++end;  // unclosed: to the end
      blocks.push_back(renderCodeBlock({lines.begin() + i + 1, lines.begin() + end}, *fence));
      i = std::min(end + 1, lines.size());
    } else if (isQuoteLine(lines[i])) {
      std::string quote;
      for (; i < lines.size() && isQuoteLine(lines[i]); ++i) {
        if (!quote.empty()) quote += '\n';
        quote += renderLine(unquote(lines[i]));
      }
      blocks.push_back("<blockquote>" + quote + "</blockquote>");
    } else {
      blocks.push_back(renderLine(lines[i++]));
    }
  }
  while (!blocks.empty() && blocks.back().empty()) blocks.pop_back();
  size_t first = 0;
  while (first < blocks.size() && blocks[first].empty()) ++first;
  std::string html;
  for (size_t k = first; k < blocks.size(); ++k) {
    if (k > first) html += '\n';
    html += blocks[k];
  }
  return tidyHtml(html);
}

std::vector<std::string> splitForTelegram(std::string_view markdown, std::size_t limit) {
  using namespace html_render_impl;
  return splitUnits(markdownToHtml(markdown), true, limit);
}

std::vector<std::string> splitPlain(std::string_view text, std::size_t limit) {
  using namespace html_render_impl;
  return splitUnits(sanitizeUtf8(text), false, limit);
}

std::size_t utf16Length(std::string_view utf8) {
  size_t n = 0;
  for (size_t i = 0; i < utf8.size();) {
    auto c = html_render_impl::decodeAt(utf8, i);
    n += c.valid && c.cp >= 0x10000 ? 2 : 1;
    i += c.len;
  }
  return n;
}

}  // namespace pine::telegram
