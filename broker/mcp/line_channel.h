// Newline-delimited messages over a byte stream (MCP's stdio transport): lines in, at most
// `maxLine` bytes each (a longer one ends the channel with an error instead of growing the
// broker's memory), and lines out, written one after another in the order given.
#pragma once
#include <kj/async-io.h>

#include <cstddef>
#include <string>

namespace pine::mcp {

class LineChannel {
 public:
  LineChannel(kj::Own<kj::AsyncIoStream> stream, size_t maxLine);
  LineChannel(const LineChannel&) = delete;
  LineChannel& operator=(const LineChannel&) = delete;

  // The next line without its '\n' (a trailing '\r' is dropped too); nullptr at the end of the
  // stream. Throws (a rejected promise) when a line is longer than maxLine.
  kj::Promise<kj::Maybe<std::string>> readLine();
  // Queues `line` + '\n'; resolves once it is written. A failed write fails every later one.
  kj::Promise<void> writeLine(std::string line);
  // No more writes: the other side reads the end of its input.
  void shutdownWrite();

 private:
  kj::Own<kj::AsyncIoStream> stream_;
  size_t maxLine_;
  std::string buffer_;
  size_t scanned_ = 0;  // bytes of buffer_ already searched for '\n'
  bool eof_ = false;
  char chunk_[16384];
  kj::ForkedPromise<void> writeTail_;
};

}  // namespace pine::mcp
