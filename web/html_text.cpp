#include "web/html_text.h"

#include <gumbo.h>

#include <cctype>
#include <vector>

#include "web/url.h"

namespace pine::web {
namespace {

// Deeper than this the page is not text for a person; and it keeps the walk's stack bounded.
constexpr size_t kMaxDepth = 512;

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

class Writer {
 public:
  std::string out;

  void text(std::string_view s, bool pre) {
    for (char c : s) {
      if (!pre && isSpace(c)) {
        space_ = true;
        continue;
      }
      if (pre && c == '\n') {
        out += '\n';
        space_ = false;
        breaks_ = 0;
        continue;
      }
      flush();
      out += c;
    }
  }
  // A line break (1) or a blank line (2) before whatever comes next.
  void block(int n) {
    if (breaks_ < n) breaks_ = n;
    space_ = false;
  }
  void raw(std::string_view s) {
    flush();
    out += s;
  }
  std::string finish() {
    while (!out.empty() && isSpace(out.back())) out.pop_back();
    size_t lead = 0;
    while (lead < out.size() && isSpace(out[lead])) ++lead;  // a <pre> first
    return out.substr(lead);
  }

 private:
  void flush() {
    if (breaks_ > 0 && !out.empty()) {
      while (!out.empty() && out.back() == ' ') out.pop_back();
      int have = 0;
      for (size_t i = out.size(); i > 0 && out[i - 1] == '\n' && have < 2; --i) ++have;
      for (int i = have; i < breaks_; ++i) out += '\n';
    } else if (space_ && !out.empty() && !isSpace(out.back())) {
      out += ' ';
    }
    breaks_ = 0;
    space_ = false;
  }
  bool space_ = false;
  int breaks_ = 0;
};

bool dropped(GumboTag t) {
  return t == GUMBO_TAG_SCRIPT || t == GUMBO_TAG_STYLE || t == GUMBO_TAG_NOSCRIPT || t == GUMBO_TAG_TEMPLATE ||
         t == GUMBO_TAG_SVG || t == GUMBO_TAG_MATH || t == GUMBO_TAG_IFRAME || t == GUMBO_TAG_OBJECT ||
         t == GUMBO_TAG_CANVAS || t == GUMBO_TAG_HEAD || t == GUMBO_TAG_SELECT || t == GUMBO_TAG_BUTTON;
}

int blockBreaks(GumboTag t) {
  switch (t) {
    case GUMBO_TAG_P: case GUMBO_TAG_DIV: case GUMBO_TAG_SECTION: case GUMBO_TAG_ARTICLE: case GUMBO_TAG_HEADER:
    case GUMBO_TAG_FOOTER: case GUMBO_TAG_MAIN: case GUMBO_TAG_NAV: case GUMBO_TAG_ASIDE: case GUMBO_TAG_BLOCKQUOTE:
    case GUMBO_TAG_PRE: case GUMBO_TAG_TABLE: case GUMBO_TAG_FORM: case GUMBO_TAG_FIGURE: case GUMBO_TAG_UL:
    case GUMBO_TAG_OL: case GUMBO_TAG_DL: case GUMBO_TAG_HR: case GUMBO_TAG_ADDRESS: case GUMBO_TAG_FIELDSET:
    case GUMBO_TAG_DETAILS:
      return 2;
    case GUMBO_TAG_TR: case GUMBO_TAG_LI: case GUMBO_TAG_DT: case GUMBO_TAG_DD: case GUMBO_TAG_FIGCAPTION:
    case GUMBO_TAG_CAPTION: case GUMBO_TAG_SUMMARY:
      return 1;
    default:
      return 0;
  }
}

int headingLevel(GumboTag t) {
  switch (t) {
    case GUMBO_TAG_H1: return 1;
    case GUMBO_TAG_H2: return 2;
    case GUMBO_TAG_H3: return 3;
    case GUMBO_TAG_H4: return 4;
    case GUMBO_TAG_H5: return 5;
    case GUMBO_TAG_H6: return 6;
    default: return 0;
  }
}

const char* attr(const GumboElement& e, const char* name) {
  const GumboAttribute* a = gumbo_get_attribute(&e.attributes, name);
  return a ? a->value : nullptr;
}

std::string trimmed(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && isSpace(s[b])) ++b;
  while (e > b && isSpace(s[e - 1])) --e;
  return std::string(s.substr(b, e - b));
}

// The link as the model should see it: absolute, and nothing for links that go nowhere.
std::string linkTarget(const std::string& base, const char* href) {
  std::string h = trimmed(href ? href : "");
  if (h.empty() || h[0] == '#') return {};
  std::string lowerStart;
  for (size_t i = 0; i < h.size() && i < 11; ++i) lowerStart += static_cast<char>(std::tolower(static_cast<unsigned char>(h[i])));
  if (lowerStart.rfind("javascript:", 0) == 0 || lowerStart.rfind("data:", 0) == 0) return {};
  if (base.empty()) return h;
  return resolveUrl(base, h).value_or(h);
}

struct Frame {
  GumboNode* node;
  unsigned next = 0;     // the next child to visit
  size_t linkStart = 0;  // <a>: where its text starts in the output
  int item = 0;          // <ol>: the last number given
};

std::string findTitleAndBase(GumboNode* root, std::string& base) {
  std::string title;
  std::vector<GumboNode*> todo{root};
  size_t seen = 0;
  while (!todo.empty() && seen++ < 4096) {
    GumboNode* n = todo.back();
    todo.pop_back();
    if (n->type != GUMBO_NODE_ELEMENT) continue;
    const GumboElement& e = n->v.element;
    if (e.tag == GUMBO_TAG_BODY) continue;
    if (e.tag == GUMBO_TAG_TITLE && title.empty() && e.children.length > 0) {
      auto* c = static_cast<GumboNode*>(e.children.data[0]);
      if (c->type == GUMBO_NODE_TEXT) {
        Writer w;
        w.text(c->v.text.text, false);
        title = w.finish();
      }
    }
    if (e.tag == GUMBO_TAG_BASE && !base.empty()) {
      if (const char* h = attr(e, "href"))
        if (auto r = resolveUrl(base, h)) base = *r;
    }
    for (unsigned i = e.children.length; i > 0; --i) todo.push_back(static_cast<GumboNode*>(e.children.data[i - 1]));
  }
  return title;
}

}  // namespace

std::string htmlToText(std::string_view html, const std::string& baseUrl) {
  GumboOptions options = kGumboDefaultOptions;
  options.max_errors = 1000;  // errors are not reported to anyone; keep their list small
  GumboOutput* parsed = gumbo_parse_with_options(&options, html.data(), html.size());
  if (parsed == nullptr) return {};
  std::string base = baseUrl;
  Writer w;
  std::string title = findTitleAndBase(parsed->root, base);
  if (!title.empty()) {
    w.raw("Title: " + title);
    w.block(2);
  }
  int pre = 0;
  std::vector<Frame> stack;
  stack.push_back({parsed->root});
  while (!stack.empty()) {
    Frame& f = stack.back();
    GumboNode* n = f.node;
    if (n->type == GUMBO_NODE_TEXT || n->type == GUMBO_NODE_CDATA || n->type == GUMBO_NODE_WHITESPACE) {
      w.text(n->v.text.text, pre > 0);
      stack.pop_back();
      continue;
    }
    if (n->type != GUMBO_NODE_ELEMENT && n->type != GUMBO_NODE_DOCUMENT && n->type != GUMBO_NODE_TEMPLATE) {
      stack.pop_back();  // comments
      continue;
    }
    const GumboVector& children = n->type == GUMBO_NODE_DOCUMENT ? n->v.document.children : n->v.element.children;
    const GumboTag tag = n->type == GUMBO_NODE_DOCUMENT ? GUMBO_TAG_HTML : n->v.element.tag;
    if (f.next == 0) {  // entering
      if ((n->type != GUMBO_NODE_DOCUMENT && dropped(tag)) || stack.size() > kMaxDepth) {
        stack.pop_back();
        continue;
      }
      if (int h = headingLevel(tag)) {
        w.block(2);
        w.raw(std::string(static_cast<size_t>(h), '#') + " ");
      } else if (tag == GUMBO_TAG_LI) {
        w.block(1);
        int number = 0;
        if (stack.size() >= 2) {
          Frame& parent = stack[stack.size() - 2];
          if (parent.node->type == GUMBO_NODE_ELEMENT && parent.node->v.element.tag == GUMBO_TAG_OL)
            number = ++parent.item;
        }
        w.raw(number ? std::to_string(number) + ". " : "- ");
      } else if (tag == GUMBO_TAG_BR) {
        w.block(1);
      } else if (tag == GUMBO_TAG_IMG) {
        if (const char* alt = attr(n->v.element, "alt"); alt && !trimmed(alt).empty()) {
          w.text(" [image: ", false);
          w.text(alt, false);
          w.text("] ", false);
        }
      } else if (tag == GUMBO_TAG_TD || tag == GUMBO_TAG_TH) {
        w.text(" ", false);
      } else if (int b = blockBreaks(tag)) {
        w.block(b);
      }
      if (tag == GUMBO_TAG_PRE || tag == GUMBO_TAG_TEXTAREA) ++pre;
      if (tag == GUMBO_TAG_A) f.linkStart = w.out.size();
    }
    if (f.next < children.length) {
      auto* child = static_cast<GumboNode*>(children.data[f.next++]);
      stack.push_back({child});
      continue;
    }
    // leaving
    if (tag == GUMBO_TAG_A && n->type == GUMBO_NODE_ELEMENT) {
      std::string target = linkTarget(base, attr(n->v.element, "href"));
      std::string label = trimmed(std::string_view(w.out).substr(std::min(f.linkStart, w.out.size())));
      if (!target.empty() && target != label) {
        if (label.empty()) w.text(" ", false);
        w.raw(label.empty() ? "(" + target + ")" : " (" + target + ")");
      }
    }
    if (tag == GUMBO_TAG_PRE || tag == GUMBO_TAG_TEXTAREA) --pre;
    if (headingLevel(tag)) w.block(2);
    else if (int b = blockBreaks(tag)) w.block(b);
    stack.pop_back();
  }
  gumbo_destroy_output(&options, parsed);
  return w.finish();
}

}  // namespace pine::web
