#include "tests/sources/page_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

namespace pine::sources::test {

std::string PageRequest::header(const std::string& name) const {
  size_t at = head.find("\r\n");
  while (at != std::string::npos && at + 2 < head.size()) {
    size_t end = head.find("\r\n", at + 2);
    std::string line = head.substr(at + 2, end == std::string::npos ? std::string::npos : end - at - 2);
    size_t colon = line.find(':');
    if (colon != std::string::npos && colon == name.size() && strncasecmp(line.c_str(), name.c_str(), colon) == 0) {
      size_t v = line.find_first_not_of(' ', colon + 1);
      return v == std::string::npos ? "" : line.substr(v);
    }
    at = end;
  }
  return "";
}

PageServer::PageServer(std::function<PageReply(const PageRequest&)> handler) : handler_(std::move(handler)) {
  listenFd_ = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(listenFd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (bind(listenFd_, (sockaddr*)&a, sizeof a) != 0 || listen(listenFd_, 16) != 0 ||
      getsockname(listenFd_, (sockaddr*)&a, &len) != 0)
    throw std::runtime_error("page server: cannot listen on 127.0.0.1");
  port_ = ntohs(a.sin_port);
  thread_ = std::thread([this] { loop(); });
}

PageServer::~PageServer() {
  stop_ = true;
  thread_.join();
  close(listenFd_);
}

void PageServer::setHandler(std::function<PageReply(const PageRequest&)> handler) {
  std::lock_guard lock(mu_);
  handler_ = std::move(handler);
}

std::vector<PageRequest> PageServer::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

void PageServer::loop() {
  while (!stop_) {
    pollfd p{listenFd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    int fd = accept(listenFd_, nullptr, nullptr);
    if (fd >= 0) serve(fd);  // one at a time: the poller asks once in a while
  }
}

void PageServer::serve(int fd) {
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string req;
  char buf[4096];
  while (req.find("\r\n\r\n") == std::string::npos) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    req.append(buf, (size_t)n);
  }
  if (req.find("\r\n\r\n") == std::string::npos) {
    close(fd);
    return;
  }
  PageRequest r;
  r.head = req.substr(0, req.find("\r\n\r\n") + 2);
  size_t sp = r.head.find(' ');
  r.path = r.head.substr(sp + 1, r.head.find(' ', sp + 1) - sp - 1);
  PageReply reply;
  {
    std::lock_guard lock(mu_);
    requests_.push_back(r);
    reply = handler_(r);
  }
  std::string out = "HTTP/1.1 " + std::to_string(reply.status) + " X\r\nConnection: close\r\n";
  for (auto& [k, v] : reply.headers) out += k + ": " + v + "\r\n";
  if (reply.status != 304) out += "Content-Length: " + std::to_string(reply.body.size()) + "\r\n";
  out += "\r\n";
  if (reply.status != 304) out += reply.body;
  size_t off = 0;
  while (off < out.size()) {
    ssize_t n = write(fd, out.data() + off, out.size() - off);
    if (n <= 0) break;
    off += (size_t)n;
  }
  close(fd);
}

}  // namespace pine::sources::test
