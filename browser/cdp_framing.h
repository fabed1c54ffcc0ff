// Chromium's --remote-debugging-pipe framing: DevTools protocol messages, JSON, each ended by
// a NUL byte. The bytes are Chromium's, which renders strangers' pages: a message over the
// limit is dropped whole (and counted), never buffered without end.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace pine::browser {

class NulFramer {
 public:
  explicit NulFramer(size_t maxMessageBytes) : max_(maxMessageBytes) {}
  // Adds bytes; the messages they complete are appended to `out`.
  void feed(std::string_view bytes, std::vector<std::string>& out);
  size_t dropped() const { return dropped_; }  // messages over the limit, skipped

 private:
  size_t max_;
  std::string buf_;
  bool skipping_ = false;
  size_t dropped_ = 0;
};

}  // namespace pine::browser
