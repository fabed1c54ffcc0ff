// The checks of an egress request that need no secret value and no network: the method,
// header names and values, and where each `${secret:NAME}` placeholder sits. pined makes
// them before it starts a pine-egress process (so that it sends only the values a valid
// request names, and none for a refused one); the process makes them again before it
// fills anything in (egress.cpp).
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "egress/request/request.h"

namespace pine::egress {

inline constexpr std::string_view kPlaceholderOpen = "${secret:";

struct Placeholder {
  std::size_t begin;  // offset of "${secret:"
  std::size_t end;    // one past "}"
  std::string name;
};

enum class UrlPart { Scheme, Userinfo, Host, Path, Query };

// Which part of the URL template an offset falls in. Placeholders contain none of
// "/?#@", so the template's structure is that of the URL that will be sent.
UrlPart partAt(std::string_view url, std::size_t pos);

// A secret percent-encoded so that it cannot change the URL's structure: only bytes that
// mean nothing to the part it sits in stay as they are.
std::string encodeFor(UrlPart part, std::string_view value);

// A URL template as messages show it: without its userinfo (an FTP login's placeholders, which
// read as noise once redacted), cut at 200 bytes.
std::string urlForMessages(std::string_view url);

bool isToken(std::string_view s);  // an RFC 9110 token (method, header name)
std::string lowerAscii(std::string_view s);

struct Templates {
  std::vector<Placeholder> url;
  std::vector<std::vector<Placeholder>> headers;  // one list per request header
  // Every NAME the request uses, once each, in order of first use.
  std::vector<std::string> names() const;
};

// Why the request is refused (fixed texts, never a value), or nullopt with `out` filled.
// Refused: a placeholder in the method, the body, a header name, the scheme or the host;
// a malformed placeholder; a method or header name that is not a token; CR, LF or NUL in a
// header value; the headers egress sets itself (Host, Accept-Encoding, Content-Length,
// Transfer-Encoding).
std::optional<std::string> checkTemplates(const EgressRequest& request, Templates& out);

}  // namespace pine::egress
