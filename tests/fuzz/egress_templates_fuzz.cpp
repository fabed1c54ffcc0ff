// The checks pined makes on the broker's egress request before any secret is looked up
// (egress/request/placeholders.h): where each ${secret:NAME} sits, and the encoding a value
// gets in the URL. Properties: no crash; deterministic; an accepted request's placeholders
// are well-formed, in order, and never in the method, body, a header name, the scheme or
// the host; names() lists each name once; and filling any value into the URL, encoded for
// its part, leaves the host exactly as the template had it and decodes back to the value.
//
// Input: '\n'-separated lines: the method, the URL, header lines ("name:value") up to an
// empty line, then the body, which is also the value filled into every placeholder.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "egress/request/placeholders.h"
#include "fuzz_check.h"

using namespace pine::egress;

namespace {

// The characters of `url` that partAt() puts in the host, in order.
std::string templatesHostOf(const std::string& url) {
  std::string host;
  for (size_t i = 0; i < url.size(); ++i)
    if (partAt(url, i) == UrlPart::Host) host += url[i];
  return host;
}

std::string templatesDecode(std::string_view s) {
  auto hex = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; };
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

void templatesCheckList(const std::vector<Placeholder>& list, const std::string& text) {
  size_t last = 0;
  for (const Placeholder& p : list) {
    FUZZ_CHECK(p.begin >= last && p.begin < p.end && p.end <= text.size(), "placeholders in order, inside the text");
    FUZZ_CHECK(text.compare(p.begin, p.end - p.begin, std::string(kPlaceholderOpen) + p.name + "}") == 0,
               "a placeholder's range is ${secret:NAME}");
    FUZZ_CHECK(!p.name.empty() && p.name.size() <= 128, "a name of 1 to 128 bytes");
    for (char c : p.name)
      FUZZ_CHECK((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                     c == '.',
                 "a name of letters, digits, '_', '-', '.'");
    last = p.end;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> lines;
  size_t at = 0;
  while (lines.size() < 2 && at <= in.size()) {
    size_t nl = in.find('\n', at);
    if (nl == std::string_view::npos) nl = in.size();
    lines.emplace_back(in.substr(at, nl - at));
    at = nl + 1;
  }
  EgressRequest req;
  req.method = lines.size() > 0 ? lines[0] : "";
  req.url = lines.size() > 1 ? lines[1] : "";
  while (at < in.size()) {
    size_t nl = in.find('\n', at);
    if (nl == std::string_view::npos) nl = in.size();
    std::string_view line = in.substr(at, nl - at);
    at = nl + 1;
    if (line.empty()) break;
    size_t colon = line.find(':');
    req.headers.emplace_back(std::string(line.substr(0, colon)),
                             colon == std::string_view::npos ? "" : std::string(line.substr(colon + 1)));
  }
  if (at < in.size()) req.body = std::string(in.substr(at));

  Templates t;
  auto why = checkTemplates(req, t);
  Templates again;
  auto why2 = checkTemplates(req, again);
  FUZZ_CHECK(why.has_value() == why2.has_value() && (!why || *why == *why2), "deterministic");
  if (why) {
    FUZZ_CHECK(!why->empty(), "a refusal says why");
    return 0;
  }
  FUZZ_CHECK(isToken(req.method), "an accepted method is a token");
  FUZZ_CHECK(req.method.find(kPlaceholderOpen) == std::string::npos, "no placeholder in the method");
  FUZZ_CHECK(req.body.find(kPlaceholderOpen) == std::string::npos, "no placeholder in the body");
  FUZZ_CHECK(t.headers.size() == req.headers.size(), "one list per header");
  templatesCheckList(t.url, req.url);
  for (const Placeholder& p : t.url) {
    UrlPart part = partAt(req.url, p.begin);
    FUZZ_CHECK(part != UrlPart::Host && part != UrlPart::Scheme, "never in the scheme or the host");
  }
  std::vector<std::string> all;
  for (const Placeholder& p : t.url) all.push_back(p.name);
  for (size_t i = 0; i < req.headers.size(); ++i) {
    const auto& [name, value] = req.headers[i];
    FUZZ_CHECK(isToken(name) && name.find(kPlaceholderOpen) == std::string::npos, "a header name is a plain token");
    FUZZ_CHECK(value.find_first_of(std::string_view("\r\n\0", 3)) == std::string::npos, "no CR, LF, NUL in a value");
    templatesCheckList(t.headers[i], value);
    for (const Placeholder& p : t.headers[i]) all.push_back(p.name);
  }
  std::vector<std::string> names = t.names();
  for (size_t i = 0; i < names.size(); ++i)
    for (size_t j = i + 1; j < names.size(); ++j) FUZZ_CHECK(names[i] != names[j], "each name once");
  for (const std::string& n : all) {
    bool listed = false;
    for (const std::string& m : names) listed |= m == n;
    FUZZ_CHECK(listed, "every name used is listed");
  }

  // Filled in with any value, the URL keeps the template's host, and each value decodes back.
  const std::string& value = req.body;
  std::string filled;
  size_t from = 0;
  for (const Placeholder& p : t.url) {
    const std::string encoded = encodeFor(partAt(req.url, p.begin), value);
    FUZZ_CHECK(templatesDecode(encoded) == value, "an encoded value decodes back to the value");
    filled.append(req.url, from, p.begin - from);
    filled += encoded;
    from = p.end;
  }
  filled.append(req.url, from, std::string::npos);
  if (!t.url.empty()) FUZZ_CHECK(templatesHostOf(filled) == templatesHostOf(req.url), "a value never changes the host");
  return 0;
}
