// What the control API's answers say beside their bodies, for both ways it writes them: kj-http's
// (control_api.cpp) and its own for plain single events (plain_events.cpp).
#pragma once

namespace pine {

// Deeper than any request body of this API needs; shallow enough for every copy and dump of it.
constexpr int kMaxApiBodyNesting = 64;

inline const char* statusText(unsigned status) {
  switch (status) {
    case 200: return "OK";
    case 202: return "Accepted";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

}  // namespace pine
