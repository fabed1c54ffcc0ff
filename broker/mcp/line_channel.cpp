#include "broker/mcp/line_channel.h"

#include <kj/debug.h>

namespace pine::mcp {

LineChannel::LineChannel(kj::Own<kj::AsyncIoStream> stream, size_t maxLine)
    : stream_(kj::mv(stream)), maxLine_(maxLine), writeTail_(kj::Promise<void>(kj::READY_NOW).fork()) {}

kj::Promise<kj::Maybe<std::string>> LineChannel::readLine() {
  size_t nl = buffer_.find('\n', scanned_);
  if (nl != std::string::npos) {
    std::string line = buffer_.substr(0, nl);
    buffer_.erase(0, nl + 1);
    scanned_ = 0;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.size() > maxLine_)
      return KJ_EXCEPTION(FAILED, "the server sent a message larger than the limit", maxLine_);
    return kj::Maybe<std::string>(kj::mv(line));
  }
  scanned_ = buffer_.size();
  if (buffer_.size() > maxLine_) return KJ_EXCEPTION(FAILED, "the server sent a message larger than the limit", maxLine_);
  if (eof_) {
    if (buffer_.empty()) return kj::Maybe<std::string>(nullptr);
    std::string last = kj::mv(buffer_);  // a last line without '\n'
    buffer_.clear();
    scanned_ = 0;
    return kj::Maybe<std::string>(kj::mv(last));
  }
  return stream_->tryRead(chunk_, 1, sizeof chunk_).then([this](size_t n) {
    if (n == 0) eof_ = true;
    buffer_.append(chunk_, n);
    return readLine();
  });
}

kj::Promise<void> LineChannel::writeLine(std::string line) {
  line.push_back('\n');
  auto text = kj::heap<std::string>(kj::mv(line));
  auto next = writeTail_.addBranch().then([this, t = text.get()]() { return stream_->write(t->data(), t->size()); })
                  .attach(kj::mv(text))
                  .fork();
  writeTail_ = next.addBranch().fork();
  return next.addBranch();
}

void LineChannel::shutdownWrite() { stream_->shutdownWrite(); }

}  // namespace pine::mcp
