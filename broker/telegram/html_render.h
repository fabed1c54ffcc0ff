// Renders the Markdown that language models write into Telegram's HTML parse mode, and cuts long
// answers into messages Telegram accepts. The text is outside content (a model may have been told
// what to write by an attacker): whatever it holds, the HTML is well-formed, uses only the tags
// Telegram allows and links only to http, https and tg URLs.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace pine::telegram {

// Telegram's maximum message length, in UTF-16 code units.
inline constexpr std::size_t kTelegramMessageLimit = 4096;

// Escapes & < > " for text or attribute values of HTML parse mode. Invalid UTF-8 and control
// characters other than tab and newline become U+FFFD and CR LF becomes LF, so the result is
// always sendable.
std::string escapeHtml(std::string_view text);

// Markdown → Telegram HTML: **bold** __bold__ *italic* _italic_ ~~strike~~ `code`, fenced code
// blocks, # headings (bold), > quotes, [text](url) links (http, https and tg only; others become
// "text (url)"), "- item" bullets (•) and backslash escapes. Whatever is not understood, including
// unbalanced markers and raw HTML, is shown literally.
std::string markdownToHtml(std::string_view markdown);

// Renders the Markdown and cuts the HTML into messages of at most `limit` UTF-16 code units each
// (measured on the HTML itself). Tags open at a cut are closed and reopened in the next piece.
// Cuts prefer a blank line, then a line end, then a space; only whitespace at a cut is lost.
// No piece is blank: a blank answer gives none. Limits below 8 are treated as 8.
std::vector<std::string> splitForTelegram(std::string_view markdown, std::size_t limit = kTelegramMessageLimit);

// The same cuts for plain text, sent without parse mode (when Telegram refuses the HTML).
// Invalid UTF-8 becomes U+FFFD as in escapeHtml.
std::vector<std::string> splitPlain(std::string_view text, std::size_t limit = kTelegramMessageLimit);

// Length as Telegram counts it: UTF-16 code units; each invalid UTF-8 byte counts as 1.
std::size_t utf16Length(std::string_view utf8);

}  // namespace pine::telegram
