#include "pinectl/http_client.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "common/fd.h"
#include "common/home.h"
#include "pinectl/access_problem.h"
#include "common/cloexec.h"

namespace pine {

ControlClient::ControlClient(std::string home) : home_(std::move(home)) {
  Home h{home_};
  socket_ = h.socket();
  int fd = open(h.token().c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot read the control token: " + describeAccessProblem(home_, h.token(), errno));
  close(fd);
  token_ = readFile(h.token());
  while (!token_.empty() && (token_.back() == '\n' || token_.back() == ' ')) token_.pop_back();
}

int ControlClient::connectAndSend(const std::string& method, const std::string& path, const std::string& body,
                                  bool sse) {
  int fd = socketCloexec(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + strerror(errno));
  struct sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  if (socket_.size() >= sizeof addr.sun_path) {
    close(fd);
    throw std::runtime_error("the home's path is too long for a unix socket: " + socket_);
  }
  memcpy(addr.sun_path, socket_.c_str(), socket_.size() + 1);
  if (connect(fd, (struct sockaddr*)&addr, sizeof addr) != 0) {
    int e = errno;
    close(fd);
    throw std::runtime_error("cannot reach pine: " + describeAccessProblem(home_, socket_, e));
  }
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + token_ +
                    "\r\nConnection: close\r\n";
  if (sse) req += "Accept: text/event-stream\r\n";
  if (!body.empty() || method == "POST" || method == "PUT")
    req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n" + body;
  // EPIPE: pine answered and closed before reading (a refused peer gets a 403 first): read that.
  if (!writeAll(fd, req.data(), req.size()) && errno != EPIPE) {
    int e = errno;
    close(fd);
    throw std::runtime_error(std::string("sending to pine: ") + strerror(e));
  }
  return fd;
}

static ssize_t readSome(int fd, char* buf, size_t size, const volatile std::sig_atomic_t* interrupt = nullptr) {
  for (;;) {
    ssize_t n = read(fd, buf, size);
    if (n < 0 && errno == EINTR && !(interrupt && *interrupt)) continue;
    return n;
  }
}

HttpResult ControlClient::request(const std::string& method, const std::string& path, const std::string& body) {
  int fd = connectAndSend(method, path, body, false);
  // Read until the response is whole: the server may keep the connection open.
  std::string raw;
  char buf[65536];
  for (;;) {
    if (responseComplete(raw)) break;
    ssize_t n = readSome(fd, buf, sizeof buf);
    if (n <= 0) break;
    raw.append(buf, (size_t)n);
  }
  close(fd);
  return parseHttpResponse(raw);
}

HttpResult ControlClient::stream(const std::string& method, const std::string& path, const std::string& body,
                                 const std::function<bool(const SseEvent&)>& onEvent) {
  int fd = connectAndSend(method, path, body, true);
  std::string raw;
  char buf[65536];
  size_t headEnd = std::string::npos;
  while ((headEnd = raw.find("\r\n\r\n")) == std::string::npos) {
    ssize_t n = readSome(fd, buf, sizeof buf);
    if (n <= 0) break;
    raw.append(buf, (size_t)n);
  }
  std::string head = raw.substr(0, headEnd);
  for (auto& c : head) c = (char)tolower((unsigned char)c);
  bool isStream = headEnd != std::string::npos && raw.compare(0, 13, "HTTP/1.1 200 ") == 0 &&
                  head.find("\r\ncontent-type: text/event-stream") != std::string::npos;
  if (!isStream) {
    for (;;) {
      if (responseComplete(raw)) break;
      ssize_t n = readSome(fd, buf, sizeof buf);
      if (n <= 0) break;
      raw.append(buf, (size_t)n);
    }
    close(fd);
    return parseHttpResponse(raw);
  }
  bool chunked = head.find("\r\ntransfer-encoding: chunked") != std::string::npos;
  ChunkedDecoder decoder;
  SseParser parser;
  std::string pending = raw.substr(headEnd + 4);
  try {
    for (;;) {
      std::string payload;
      if (chunked) decoder.feed(pending, payload);
      else payload = pending;
      if (!parser.feed(payload, onEvent) || decoder.done() || (interrupt_ && *interrupt_)) break;
      ssize_t n = readSome(fd, buf, sizeof buf, interrupt_);
      if (n <= 0) break;
      pending.assign(buf, (size_t)n);
    }
  } catch (...) {
    close(fd);
    throw;
  }
  close(fd);
  return HttpResult{200, ""};
}

void ChunkedDecoder::feed(std::string_view bytes, std::string& out) {
  size_t i = 0;
  while (i < bytes.size() && state_ != State::Done) {
    if (state_ == State::Data) {
      size_t take = std::min(remaining_, bytes.size() - i);
      out.append(bytes.substr(i, take));
      i += take;
      remaining_ -= take;
      if (remaining_ == 0) state_ = State::DataEnd;
      continue;
    }
    // Size, DataEnd and Trailer are lines.
    char c = bytes[i++];
    if (c != '\n') {
      if (line_.size() > 1024) throw std::runtime_error("pine's answer has a malformed chunk");
      line_ += c;
      continue;
    }
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    std::string line = std::move(line_);
    line_.clear();
    if (state_ == State::DataEnd) {
      if (!line.empty()) throw std::runtime_error("pine's answer has a malformed chunk");
      state_ = State::Size;
    } else if (state_ == State::Trailer) {
      if (line.empty()) state_ = State::Done;
    } else {
      std::string hex = line.substr(0, line.find(';'));
      if (hex.empty() || hex.size() > 15 || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
        throw std::runtime_error("pine's answer has a malformed chunk size");
      remaining_ = std::stoul(hex, nullptr, 16);
      state_ = remaining_ == 0 ? State::Trailer : State::Data;
    }
  }
}

bool SseParser::feed(std::string_view bytes, const std::function<bool(const SseEvent&)>& onEvent) {
  for (char c : bytes) {
    if (c != '\n') {
      line_ += c;
      continue;
    }
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    std::string line = std::move(line_);
    line_.clear();
    if (line.empty()) {  // a blank line ends the event
      if (hasData_) {
        bool more = onEvent(current_);
        current_ = SseEvent{};
        hasData_ = false;
        if (!more) return false;
      } else {
        current_ = SseEvent{};
      }
      continue;
    }
    if (line[0] == ':') continue;  // a comment (keepalive)
    size_t colon = line.find(':');
    std::string field = line.substr(0, colon);
    std::string value = colon == std::string::npos ? "" : line.substr(colon + 1);
    if (!value.empty() && value[0] == ' ') value.erase(0, 1);
    if (field == "data") {
      if (hasData_) current_.data += "\n";
      current_.data += value;
      hasData_ = true;
    } else if (field == "event") {
      current_.event = value;
    } else if (field == "id") {
      current_.id = value;
    }
  }
  return true;
}

std::string urlEncode(std::string_view s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += (char)c;
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

bool responseComplete(const std::string& raw) {
  size_t headEnd = raw.find("\r\n\r\n");
  if (headEnd == std::string::npos) return false;
  std::string head = raw.substr(0, headEnd);
  for (auto& c : head) c = (char)tolower((unsigned char)c);
  size_t bodyLen = raw.size() - headEnd - 4;
  if (head.find("\r\ntransfer-encoding: chunked") != std::string::npos)
    return raw.size() >= 5 && raw.compare(raw.size() - 5, 5, "0\r\n\r\n") == 0;
  if (size_t cl = head.find("\r\ncontent-length: "); cl != std::string::npos)
    return bodyLen >= std::stoul(head.substr(cl + 18));
  return false;  // delimited by close
}

HttpResult parseHttpResponse(const std::string& raw) {
  size_t headEnd = raw.find("\r\n\r\n");
  if (raw.compare(0, 9, "HTTP/1.1 ") != 0 || headEnd == std::string::npos)
    throw std::runtime_error("pine's answer is not HTTP (" + std::to_string(raw.size()) + " bytes)");
  HttpResult r;
  r.status = std::atoi(raw.c_str() + 9);
  std::string head = raw.substr(0, headEnd);
  for (auto& c : head) c = (char)tolower((unsigned char)c);
  std::string rest = raw.substr(headEnd + 4);
  if (head.find("\r\ntransfer-encoding: chunked") != std::string::npos) {
    size_t pos = 0;
    for (;;) {
      size_t eol = rest.find("\r\n", pos);
      if (eol == std::string::npos) throw std::runtime_error("pine's answer was cut off");
      size_t len = std::stoul(rest.substr(pos, eol - pos), nullptr, 16);
      if (len == 0) break;
      if (eol + 2 + len > rest.size()) throw std::runtime_error("pine's answer was cut off");
      r.body.append(rest, eol + 2, len);
      pos = eol + 2 + len + 2;
    }
  } else if (size_t cl = head.find("\r\ncontent-length: "); cl != std::string::npos) {
    size_t len = std::stoul(head.substr(cl + 18));
    if (rest.size() < len) throw std::runtime_error("pine's answer was cut off");
    r.body = rest.substr(0, len);
  } else {
    r.body = rest;
  }
  return r;
}

}  // namespace pine
