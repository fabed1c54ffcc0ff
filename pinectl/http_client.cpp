#include "pinectl/http_client.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/fd.h"
#include "common/home.h"

namespace pine {

ControlClient::ControlClient(std::string home) : home_(std::move(home)) {
  Home h{home_};
  socket_ = h.socket();
  try {
    token_ = readFile(h.token());
  } catch (std::exception&) {
    throw std::runtime_error("cannot read the control token " + h.token() +
                             ": is pined running on this home? (pinectl --home DIR, or set PINE_HOME)");
  }
  while (!token_.empty() && (token_.back() == '\n' || token_.back() == ' ')) token_.pop_back();
}

HttpResult ControlClient::request(const std::string& method, const std::string& path, const std::string& body) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
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
    throw std::runtime_error("cannot reach pine at " + socket_ + ": " + strerror(e) + " (is pined running?)");
  }
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + token_ +
                    "\r\nConnection: close\r\n";
  if (!body.empty() || method == "POST" || method == "PUT")
    req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n" + body;
  if (!writeAll(fd, req.data(), req.size())) {
    int e = errno;
    close(fd);
    throw std::runtime_error(std::string("sending to pine: ") + strerror(e));
  }
  // Read until the response is whole: the server may keep the connection open.
  std::string raw;
  char buf[65536];
  for (;;) {
    if (responseComplete(raw)) break;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    raw.append(buf, (size_t)n);
  }
  close(fd);
  return parseHttpResponse(raw);
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
