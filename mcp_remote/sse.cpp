#include "mcp_remote/sse.h"

namespace pine::mcp_remote {

bool SseParser::feed(std::string_view bytes, std::vector<SseEvent>& out) {
  if (!error_.empty()) return false;
  for (char c : bytes) {
    if (c == '\n' && afterCr_) {
      afterCr_ = false;  // the LF of a CRLF: the line already ended
      continue;
    }
    afterCr_ = c == '\r';
    if (c == '\r' || c == '\n') {
      line(line_, out);
      line_.clear();
      if (!error_.empty()) return false;
      continue;
    }
    if (line_.size() >= maxLine_) {
      error_ = "a line of the event stream is over " + std::to_string(maxLine_) + " bytes";
      return false;
    }
    line_ += c;
  }
  return true;
}

void SseParser::line(std::string_view l, std::vector<SseEvent>& out) {
  if (!started_) {
    started_ = true;
    if (l.substr(0, 3) == "\xEF\xBB\xBF") l.remove_prefix(3);  // a byte order mark may open the stream
  }
  if (l.empty()) {
    if (hasData_) {
      if (!event_.data.empty() && event_.data.back() == '\n') event_.data.pop_back();
      event_.id = lastId_;
      out.push_back(std::move(event_));
    }
    event_ = SseEvent{};
    hasData_ = false;
    return;
  }
  if (l[0] == ':') return;  // a comment (servers send them to keep the connection open)
  size_t colon = l.find(':');
  std::string_view field = l.substr(0, colon), value;
  if (colon != std::string_view::npos) {
    value = l.substr(colon + 1);
    if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (event_.data.size() + value.size() + 1 > maxData_) {
      error_ = "an event's data is over " + std::to_string(maxData_) + " bytes";
      return;
    }
    event_.data.append(value);
    event_.data += '\n';
    hasData_ = true;
  } else if (field == "event") {
    event_.type = value.empty() ? "message" : std::string(value);
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) lastId_ = std::string(value);
  }
  // `retry` and unknown fields are ignored: the client decides when it reconnects.
}

}  // namespace pine::mcp_remote
