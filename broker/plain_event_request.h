// The one request the control API serves without kj-http (plain_events.cpp): POST /v1/events in
// the plainest form HTTP/1.1 has, whole in the bytes read so far. A single-event sender (a script,
// a device bridge) sends nothing else, thousands of times a second; kj-http's promise chains and
// copies cost more than the event's commit. Anything else, however legitimate, is "Other": the
// connection goes to kj-http as it came (with these bytes first), where every rule is checked and
// every refusal is answered. So this reader only has to say yes to a strict subset of what kj-http
// and RequestFraming accept, never to decide a refusal.
#pragma once
#include <cstdint>
#include <string_view>

#include "broker/api_auth.h"

namespace pine {

// Its views point into the bytes given to readPlainEventRequest: use them while those live.
struct PlainEventRequest {
  size_t length = 0;                    // its head and body: where the next request starts
  std::string_view host, authorization, contentType;  // values without the spaces before them
  bool hasHost = false, hasAuthorization = false, hasContentType = false;
  std::string_view body;                // Content-Length bytes, at least one
};

enum class PlainVerdict {
  Plain,       // *out is a whole request of that form
  Incomplete,  // the bytes so far could still become one (more of it has not arrived)
  Other,       // they never will: kj-http serves the connection from these bytes on
};

// The request line "POST /v1/events HTTP/1.1", then header lines (a name of letters, digits and
// '-'; a value of printable ASCII, spaces and tabs, none after it) among Host, Authorization, Content-Type,
// Content-Length (digits, 1 to maxBody), User-Agent, Accept and Connection (only "keep-alive"),
// each at most once, within `limits`; then the body.
PlainVerdict readPlainEventRequest(std::string_view bytes, const HttpHeadLimits& limits, uint64_t maxBody,
                                   PlainEventRequest* out);

}  // namespace pine
