// web/html_text: a page as readable text (headings, paragraphs, lists, links absolutised,
// script/style/noscript dropped, whitespace collapsed) through gumbo.
#include <doctest/doctest.h>

#include <string>

#include "web/html_text.h"

using pine::web::htmlToText;

namespace {
bool htmlHas(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("html to text: headings, paragraphs, lists and the title") {
  std::string t = htmlToText(
      "<html><head><title>The  Page</title><style>p{color:red}</style></head><body>"
      "<h1>Main   heading</h1><p>First\n   paragraph  with <b>bold</b> words.</p><p>Second.</p>"
      "<h2>Sub</h2><ul><li>one</li><li>two</li></ul><ol><li>a</li><li>b</li></ol></body></html>",
      "https://example.org/dir/page.html");
  CAPTURE(t);
  CHECK(t.rfind("Title: The Page\n\n", 0) == 0);
  CHECK(htmlHas(t, "# Main heading\n\nFirst paragraph with bold words.\n\nSecond.\n\n## Sub\n\n- one\n- two\n\n1. a\n2. b"));
  CHECK_FALSE(htmlHas(t, "color:red"));
}

TEST_CASE("html to text: links as text (absolute url); script, style and noscript dropped") {
  std::string t = htmlToText(
      "<p>See <a href=\"/docs/x?y=1\">the docs</a>, <a href=\"other.html\">other</a>, "
      "<a href=\"https://b.example/\">https://b.example/</a>, <a href=\"#top\">top</a>, "
      "<a href=\"javascript:alert(1)\">js</a>.</p>"
      "<script>var secret = 'do not show';</script><noscript>enable js</noscript><template>tpl</template>",
      "https://example.org/dir/page.html");
  CAPTURE(t);
  CHECK(htmlHas(t, "the docs (https://example.org/docs/x?y=1)"));
  CHECK(htmlHas(t, "other (https://example.org/dir/other.html)"));
  CHECK(htmlHas(t, "https://b.example/,"));  // a link whose text is its address is said once
  CHECK(htmlHas(t, "top,"));
  CHECK(htmlHas(t, "js."));
  CHECK_FALSE(htmlHas(t, "do not show"));
  CHECK_FALSE(htmlHas(t, "enable js"));
  CHECK_FALSE(htmlHas(t, "tpl"));
  CHECK_FALSE(htmlHas(t, "javascript"));
}

TEST_CASE("html to text: <base href>, pre kept as written, entities decoded, broken markup still read") {
  std::string t = htmlToText("<head><base href=\"https://cdn.example/root/\"></head><a href=\"x\">x link</a>"
                             "<pre>a  b\n  c</pre><p>&lt;tag&gt; &amp; caf&eacute;<p>unclosed <div>nested",
                             "https://example.org/");
  CAPTURE(t);
  CHECK(htmlHas(t, "x link (https://cdn.example/root/x)"));
  CHECK(htmlHas(t, "a  b\n  c"));
  CHECK(htmlHas(t, "<tag> & café"));
  CHECK(htmlHas(t, "unclosed"));
  CHECK(htmlHas(t, "nested"));
}

TEST_CASE("html to text: no base leaves links as written; empty and hostile input give text, not a crash") {
  CHECK(htmlToText("<a href=\"/x\">y</a>", "") == "y (/x)");
  CHECK(htmlToText("", "https://e.org/").empty());
  CHECK(htmlToText(std::string("\0\xff\xfe<p>\x80", 7), "https://e.org/").size() < 64);
  // Nested far deeper than any page: the walk stops going down, it does not overflow its stack.
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "<div>";
  deep += "bottom";
  std::string t = htmlToText(deep, "https://e.org/");
  CHECK(t.size() < 1000);
  std::string wide;
  for (int i = 0; i < 20000; ++i) wide += "<p>w</p>";
  CHECK(htmlToText(wide, "").size() == 20000 * 3 - 2);
}
