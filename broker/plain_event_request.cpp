#include "broker/plain_event_request.h"

#include <strings.h>

#include <utility>

namespace pine {

namespace {

constexpr std::string_view kTarget = "/v1/events";
constexpr std::string_view kRequestLine = "POST /v1/events HTTP/1.1\r\n";

bool nameByte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}
bool valueByte(unsigned char c) { return (c >= 0x20 && c <= 0x7e) || c == '\t'; }

bool named(std::string_view name, std::string_view want) {
  return name.size() == want.size() && strncasecmp(name.data(), want.data(), want.size()) == 0;
}

std::string_view trimmed(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

}  // namespace

PlainVerdict readPlainEventRequest(std::string_view bytes, const HttpHeadLimits& limits, uint64_t maxBody,
                                   PlainEventRequest* out) {
  *out = PlainEventRequest{};
  if (bytes.size() < kRequestLine.size())
    return kRequestLine.substr(0, bytes.size()) == bytes ? PlainVerdict::Incomplete : PlainVerdict::Other;
  if (bytes.substr(0, kRequestLine.size()) != kRequestLine || kTarget.size() > limits.maxTarget)
    return PlainVerdict::Other;
  size_t at = kRequestLine.size(), lines = 0;
  bool seenLength = false, seenAgent = false, seenAccept = false, seenConnection = false;
  uint64_t length = 0;
  while (true) {
    size_t end = bytes.find("\r\n", at);
    size_t lineLength = (end == std::string_view::npos ? bytes.size() : end) - at;
    if (lineLength > limits.maxHeaderLine || (end == std::string_view::npos ? bytes.size() : end + 2) > limits.maxHead)
      return PlainVerdict::Other;
    if (end == std::string_view::npos) return PlainVerdict::Incomplete;
    std::string_view line = bytes.substr(at, lineLength);
    at = end + 2;
    if (line.empty()) break;  // the head's end
    if (++lines > limits.maxHeaderLines) return PlainVerdict::Other;
    size_t colon = 0;
    while (colon < line.size() && nameByte((unsigned char)line[colon])) ++colon;
    if (colon == 0 || colon == line.size() || line[colon] != ':') return PlainVerdict::Other;
    for (size_t i = colon + 1; i < line.size(); ++i)
      if (!valueByte((unsigned char)line[i])) return PlainVerdict::Other;
    // Spaces after a value: kj-http and RequestFraming each see them their own way (RequestFraming
    // keeps them in a Content-Length, and ends the connection for it); not plain.
    if (line.back() == ' ' || line.back() == '\t') return PlainVerdict::Other;
    std::string_view name = line.substr(0, colon), value = trimmed(line.substr(colon + 1));
    auto once = [](bool& seen) { return !std::exchange(seen, true); };
    if (named(name, "host")) {
      if (!once(out->hasHost)) return PlainVerdict::Other;
      out->host = value;
    } else if (named(name, "authorization")) {
      if (!once(out->hasAuthorization)) return PlainVerdict::Other;
      out->authorization = value;
    } else if (named(name, "content-type")) {
      if (!once(out->hasContentType)) return PlainVerdict::Other;
      out->contentType = value;
    } else if (named(name, "content-length")) {
      if (!once(seenLength) || value.empty() || value.size() > 9) return PlainVerdict::Other;
      for (char c : value) {
        if (c < '0' || c > '9') return PlainVerdict::Other;
        length = length * 10 + uint64_t(c - '0');
      }
      if (length == 0 || length > maxBody) return PlainVerdict::Other;
    } else if (named(name, "user-agent")) {
      if (!once(seenAgent)) return PlainVerdict::Other;
    } else if (named(name, "accept")) {
      if (!once(seenAccept)) return PlainVerdict::Other;
    } else if (named(name, "connection")) {
      if (!once(seenConnection) || !named(value, "keep-alive")) return PlainVerdict::Other;
    } else {
      return PlainVerdict::Other;
    }
  }
  if (!seenLength) return PlainVerdict::Other;
  if (bytes.size() - at < length) return PlainVerdict::Incomplete;
  out->body = bytes.substr(at, length);
  out->length = at + length;
  return PlainVerdict::Plain;
}

}  // namespace pine
