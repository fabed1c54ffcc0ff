#include "config/yaml_load.h"

#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <vector>

namespace pine::config {

YamlError::YamlError(Kind kind_, int line_, int column_, std::string message_, std::string hint_)
    : YAML::ParserException(
          [&] {
            YAML::Mark m = YAML::Mark::null_mark();
            if (line_ > 0) {
              m.line = line_ - 1;
              m.column = column_ > 0 ? column_ - 1 : 0;
            }
            return m;
          }(),
          hint_.empty() ? message_ : message_ + " (" + hint_ + ")"),
      kind(kind_),
      line(line_),
      column(column_),
      message(std::move(message_)),
      hint(std::move(hint_)) {}

namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";

std::string hex(unsigned v, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%0*X", digits, v);
  return buf;
}

std::string controlName(unsigned c) {
  static const char* const kC0[32] = {"NUL", "SOH", "STX", "ETX", "EOT", "ENQ", "ACK", "BEL", "BS",  "TAB", "LF",
                                      "VT",  "FF",  "CR",  "SO",  "SI",  "DLE", "DC1", "DC2", "DC3", "DC4", "NAK",
                                      "SYN", "ETB", "CAN", "EM",  "SUB", "ESC", "FS",  "GS",  "RS",  "US"};
  if (c < 32) return kC0[c];
  if (c == 0x7F) return "DEL";
  return "";
}

// Length of the UTF-8 sequence at s[i] and its code point; 0 when it is not one
// (overlong forms, surrogates and values past U+10FFFF are not UTF-8 either).
std::size_t decodeUtf8(std::string_view s, std::size_t i, char32_t& cp) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  std::size_t n = 0;
  char32_t min = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2, cp = c & 0x1F, min = 0x80;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3, cp = c & 0x0F, min = 0x800;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4, cp = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

// YAML 1.2 (5.1): a stream holds only printable characters - TAB, LF, CR, NEL,
// U+0020..U+007E, U+00A0..U+D7FF, U+E000..U+FFFD, U+10000..U+10FFFF - in UTF-8 here
// (pine writes and reads UTF-8 only). Also keeps every byte sequence that makes
// yaml-cpp guess UTF-16 or UTF-32 (a NUL among the first bytes) away from it.
// Line and column as yaml-cpp counts them: 1-based, columns in bytes.
void checkCharacters(std::string_view text) {
  int line = 1;
  std::size_t lineStart = 0;
  std::size_t i = text.substr(0, kBom.size()) == kBom ? kBom.size() : 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const int column = static_cast<int>(i - lineStart) + 1;
    if (c == '\n') {
      ++line;
      lineStart = ++i;
      continue;
    }
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7F) {
        const std::string what = "U+" + hex(c, 4) + " (" + controlName(c) + ", a control character)";
        throw YamlError(YamlError::Character, line, column, what + " is not allowed in a YAML file",
                        c == 0 ? "remove it; a file with NULs between its letters was saved as UTF-16 or UTF-32: save "
                                 "it as UTF-8"
                               : "remove it; if a value needs it, write it as an escape in double quotes (\"\\x" +
                                     hex(c, 2) + "\")");
      }
      ++i;
      continue;
    }
    char32_t cp = 0;
    const std::size_t n = decodeUtf8(text, i, cp);
    if (n == 0)
      throw YamlError(YamlError::Character, line, column,
                      "the byte 0x" + hex(c, 2) + " is not UTF-8, and pine reads YAML files only as UTF-8",
                      "save the file as UTF-8");
    if ((cp >= 0x80 && cp <= 0x9F && cp != 0x85) || cp == 0xFFFE || cp == 0xFFFF)
      throw YamlError(YamlError::Character, line, column,
                      "U+" + hex(cp, 4) + (cp <= 0x9F ? " (a C1 control character)" : " (a noncharacter)") +
                          " is not allowed in a YAML file",
                      "remove it; if a value needs it, write it as an escape in double quotes (\"\\u" + hex(cp, 4) +
                          "\")");
    if (cp == 0xFEFF)
      throw YamlError(YamlError::Character, line, column,
                      "U+FEFF (a byte order mark) is allowed only at the very start of a YAML file",
                      "remove it (it is invisible in most editors; it came from pasting another file)");
    i += n;
  }
}

// Runs alongside yaml-cpp's parser and stops it, before any node is built, at the
// first bound it would pass. Counts what a walk of the finished tree would visit:
// an alias counts as the whole node it names, wherever it is used.
class BoundsCheck : public YAML::EventHandler {
 public:
  struct SecondDocument {
    YAML::Mark mark;
  };

  explicit BoundsCheck(const YamlLimits& limits) : limits_(limits) {}

  void OnDocumentStart(const YAML::Mark& mark) override {
    // The first document is all pine reads; a second one is an error, never parsed,
    // so no input makes this loop (yaml-cpp 0.7's LoadAll restarts forever on a
    // token no document can begin with).
    if (++documents_ == 2) throw SecondDocument{mark};
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { leaf(mark, anchor); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, const std::string&) override {
    leaf(mark, anchor);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto it = done_.find(anchor);
    if (it == done_.end())
      throw error(YamlError::Cycle, mark, "this alias is inside the node its anchor names, which would contain itself",
                  "an alias (*name) may only repeat a node that ends before it");
    if (static_cast<int>(open_.size()) + it->second.height > limits_.maxDepth)
      throw error(YamlError::Limit, mark,
                  "this alias nests lists and maps deeper than " + std::to_string(limits_.maxDepth) + " levels",
                  "configuration is never that deep; write the structure out");
    add(mark, it->second.nodes, it->second.height);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    start(mark, anchor);
  }
  void OnSequenceEnd() override { end(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    start(mark, anchor);
  }
  void OnMapEnd() override { end(); }

 private:
  struct Size {
    std::size_t nodes = 0;
    int height = 0;  // 0 for a scalar; 1 + the highest item for a list or map
  };
  struct Open {
    YAML::anchor_t anchor;
    Size size;
  };

  YamlError error(YamlError::Kind kind, const YAML::Mark& mark, std::string message, std::string hint) const {
    return YamlError(kind, mark.line + 1, mark.column + 1, std::move(message), std::move(hint));
  }

  void add(const YAML::Mark& mark, std::size_t nodes, int height) {
    // total_ and nodes are each at most maxNodes, so this cannot overflow.
    total_ += nodes;
    if (total_ > limits_.maxNodes)
      throw error(YamlError::Limit, mark,
                  "the file has more than " + std::to_string(limits_.maxNodes) +
                      " values (keys, values and list items, an alias counting as all it repeats)",
                  "configuration is never that large; is this the right file?");
    if (!open_.empty()) {
      open_.back().size.nodes += nodes;
      open_.back().size.height = std::max(open_.back().size.height, height + 1);
    }
  }

  void leaf(const YAML::Mark& mark, YAML::anchor_t anchor) {
    add(mark, 1, 0);
    if (anchor != YAML::NullAnchor) done_[anchor] = {1, 0};
  }

  void start(const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (static_cast<int>(open_.size()) + 1 > limits_.maxDepth)
      throw error(YamlError::Limit, mark, "lists and maps are nested deeper than " + std::to_string(limits_.maxDepth) + " levels",
                  "configuration is never that deep; look for unclosed '[' or '{'");
    add(mark, 1, 1);
    open_.push_back({anchor, {0, 1}});
  }

  void end() {
    if (open_.empty()) return;  // yaml-cpp pairs them; this only keeps a broken pairing harmless
    Open o = open_.back();
    open_.pop_back();
    if (!open_.empty()) {
      open_.back().size.nodes += o.size.nodes;
      open_.back().size.height = std::max(open_.back().size.height, o.size.height + 1);
    }
    if (o.anchor != YAML::NullAnchor) done_[o.anchor] = {o.size.nodes + 1, o.size.height};
  }

  const YamlLimits& limits_;
  int documents_ = 0;
  std::size_t total_ = 0;
  std::vector<Open> open_;
  std::unordered_map<YAML::anchor_t, Size> done_;
};

YamlError syntaxError(const YAML::Exception& e) {
  const bool known = !e.mark.is_null() && e.mark.line >= 0 && e.mark.column >= 0;
  return YamlError(YamlError::Syntax, known ? e.mark.line + 1 : 0, known ? e.mark.column + 1 : 0, e.msg, "");
}

// Whether the last line with content before offset `at` is a document end marker
// ("..."), after which a bare second document may start without "---".
bool afterDocumentEnd(std::string_view text, std::size_t at) {
  std::size_t end = text.rfind('\n', at == 0 ? 0 : at - 1);
  while (end != std::string_view::npos && end > 0) {
    const std::size_t begin = text.rfind('\n', end - 1);
    const std::size_t from = begin == std::string_view::npos ? 0 : begin + 1;
    std::string_view line = text.substr(from, end - from);
    const std::size_t content = line.find_first_not_of(" \t\r");
    if (content != std::string_view::npos && line[content] != '#')
      return content == 0 && line.substr(0, 3) == "..." &&
             (line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r' || line[3] == '#');
    if (begin == std::string_view::npos) break;
    end = begin;
  }
  return false;
}

// What to say about a second document that starts at mark.
YamlError secondDocument(std::string_view text, std::size_t bom, const YAML::Mark& mark) {
  const int line = mark.line + 1, column = mark.column + 1;
  const std::size_t at = bom + static_cast<std::size_t>(mark.pos < 0 ? 0 : mark.pos);
  const std::string_view rest = at < text.size() ? text.substr(at) : std::string_view();
  if ((mark.column == 0 && rest.substr(0, 3) == "---") || afterDocumentEnd(text, at))
    return YamlError(YamlError::Documents, line, column, "more than one document in the file",
                     "pine reads one document a file: remove this '---' (or the '...' before it) and merge what "
                     "follows into the first");
  // A token the document could not use: yaml-cpp ends the document before it.
  std::string shown;
  if (!rest.empty()) {
    std::size_t n = 1;
    char32_t cp;
    if (static_cast<unsigned char>(rest[0]) >= 0x80) n = std::max<std::size_t>(1, decodeUtf8(rest, 0, cp));
    shown = std::string(rest.substr(0, n));
  }
  const bool bracket = shown == "," || shown == "]" || shown == "}";
  return YamlError(YamlError::Syntax, line, column,
                   shown.empty() ? "the document cannot continue here" : "unexpected '" + shown + "': the document cannot continue here",
                   bracket ? "',', ']' and '}' belong inside [ ] or { }; put text that starts with one in quotes"
                           : "check the indentation and the brackets before this point; pine reads one document a file");
}

}  // namespace

YAML::Node loadYaml(std::string_view text, const YamlLimits& limits) {
  if (text.size() > limits.maxBytes)
    throw YamlError(YamlError::Limit, 0, 0,
                    "the file is larger than " +
                        (limits.maxBytes % (1u << 20) == 0 ? std::to_string(limits.maxBytes >> 20) + " MiB"
                                                           : std::to_string(limits.maxBytes) + " bytes"),
                    "configuration files are small; is this the right file?");
  checkCharacters(text);
  const std::size_t bom = text.substr(0, kBom.size()) == kBom ? kBom.size() : 0;
  const std::string owned(text);
  // First pass: events only, no nodes, stopped at the first bound. yaml-cpp's own
  // recursion guard (500 levels) is deeper than maxDepth, so ours fires first.
  try {
    std::istringstream in(owned);
    YAML::Parser parser(in);
    BoundsCheck check(limits);
    if (!parser.HandleNextDocument(check)) return YAML::Node(YAML::NodeType::Null);
    parser.HandleNextDocument(check);  // throws SecondDocument when there is one
  } catch (const BoundsCheck::SecondDocument& d) {
    throw secondDocument(text, bom, d.mark);
  } catch (const YamlError&) {
    throw;
  } catch (const YAML::Exception& e) {
    throw syntaxError(e);
  }
  // Second pass: the same tokens, now known to be one document within the bounds.
  try {
    return YAML::Load(owned);
  } catch (const YAML::Exception& e) {
    throw syntaxError(e);
  }
}

}  // namespace pine::config
