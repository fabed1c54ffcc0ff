// What one look at an `http` source's address means: a redirect to follow, no change (304, or
// a body with the SHA-256 of the last one), a change (one event), or an error. Pure: the
// poller (http_poller.h) does the fetching, the remembering and the publishing.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace pine::sources {

// What an http source remembers between looks (the store's source_state, one row per key), so
// that a restart of the broker makes no event for content it already reported.
struct PageMemory {
  std::string url;  // the configured address the rest was learnt from
  std::string etag, lastModified, sha256;
  // Nothing is remembered for another address than `configuredUrl` (the owner changed it).
  static PageMemory from(const std::map<std::string, std::string>& rows, const std::string& configuredUrl);
  std::map<std::string, std::string> rows() const;
};

// pined's answer to pollSource: the head, the body (redacted by egress), or why there is none.
struct PageAnswer {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string error;
};

enum class PageVerdict { Unchanged, Changed, Redirect, Failed };

struct PageLook {
  PageVerdict verdict = PageVerdict::Failed;
  std::string error;     // Failed: what went wrong
  std::string location;  // Redirect: the Location as sent
  PageMemory memory;     // Unchanged, Changed: what to remember now
  std::string payload;   // Changed: the event's JSON
};

constexpr size_t kPageEventBytes = 256 << 10;  // body text carried in an event; the rest is cut

// `before` is what was remembered, `url` the address the answer is for.
PageLook judgePage(const PageMemory& before, const std::string& url, const PageAnswer& answer);

// The value of a header (name compared without case), or "".
std::string headerValue(const std::vector<std::pair<std::string, std::string>>& headers, const std::string& name);

}  // namespace pine::sources
