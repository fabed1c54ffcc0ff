// Server-sent events (the HTML standard's text/event-stream), parsed from bytes a remote MCP
// server sends: lines end in CR, LF or CRLF (also split across reads), `:` starts a comment,
// `data` lines join with '\n', an empty line ends an event. Bytes from the internet: a line or an
// event's data over its cap stops the parser with an error instead of growing without bound.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace pine::mcp_remote {

struct SseEvent {
  std::string type = "message";  // the `event` field, "message" when none was given
  std::string data;
  std::string id;
};

class SseParser {
 public:
  SseParser(size_t maxLine, size_t maxData) : maxLine_(maxLine), maxData_(maxData) {}
  // Appends the events these bytes complete to `out`. False (and error() says why) once a cap
  // was passed; every later call is false too.
  bool feed(std::string_view bytes, std::vector<SseEvent>& out);
  const std::string& error() const { return error_; }

 private:
  void line(std::string_view l, std::vector<SseEvent>& out);
  size_t maxLine_, maxData_;
  std::string line_;
  bool afterCr_ = false, started_ = false, hasData_ = false;
  SseEvent event_;
  std::string lastId_;
  std::string error_;
};

}  // namespace pine::mcp_remote
