// A web page as readable text for a model, by gumbo (a real HTML5 parser: what browsers build,
// whatever the markup). Headings as "#" lines, paragraphs and blocks apart, list items as "- ",
// links as "text (absolute url)", images by their alt text; script, style, noscript, template,
// svg and the head (but its title) dropped; whitespace collapsed except in <pre>.
// The input is a stranger's bytes: any input gives some text, never a crash.
#pragma once
#include <string>
#include <string_view>

namespace pine::web {

// `baseUrl` absolutises links (a <base href> in the page is honoured if it resolves); empty:
// links stay as written.
std::string htmlToText(std::string_view html, const std::string& baseUrl);

}  // namespace pine::web
