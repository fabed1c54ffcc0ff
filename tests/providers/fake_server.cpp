#include "tests/providers/fake_server.h"
#include "common/cloexec.h"
#include "common/send_no_signal.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>

namespace pine::model::test {

namespace {

void writeAll(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    ssize_t n = pine::sendNoSignal(fd, s.data() + off, s.size() - off, 0);
    if (n <= 0) return;
    off += static_cast<std::size_t>(n);
  }
}

const char* reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 401: return "Unauthorized";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    default: return "Status";
  }
}

}  // namespace

FakeServer::FakeServer() {
  listenFd_ = pine::socketCloexec(AF_INET, SOCK_STREAM, 0);
  if (listenFd_ < 0) throw std::runtime_error("fake server: socket failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(listenFd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listenFd_, 8) != 0 ||
      ::getsockname(listenFd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("fake server: bind/listen on 127.0.0.1 failed");
  port_ = ntohs(a.sin_port);
  thread_ = std::thread([this] { loop(); });
}

FakeServer::~FakeServer() {
  stop_ = true;
  thread_.join();
  ::close(listenFd_);
}

void FakeServer::enqueue(FakeReply reply) {
  std::lock_guard<std::mutex> lock(mu_);
  replies_.push_back(std::move(reply));
}

std::vector<ReceivedRequest> FakeServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void FakeServer::loop() {
  while (!stop_) {
    pollfd p{listenFd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    int fd = pine::acceptCloexec(listenFd_);
    if (fd < 0) continue;
    serve(fd);
    ::close(fd);
  }
}

void FakeServer::serve(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // The request: head, then Content-Length bytes of body.
  std::string in;
  char buf[4096];
  std::size_t headEnd = std::string::npos, want = 0;
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) return;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return;
    in.append(buf, static_cast<std::size_t>(n));
    if (headEnd == std::string::npos && (headEnd = in.find("\r\n\r\n")) != std::string::npos) {
      std::string lower = in.substr(0, headEnd);
      for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      auto cl = lower.find("content-length:");
      if (cl != std::string::npos) want = std::stoul(lower.substr(cl + 15));
    }
    if (headEnd != std::string::npos && in.size() >= headEnd + 4 + want) break;
  }
  FakeReply reply;
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back({in.substr(0, headEnd), in.substr(headEnd + 4, want)});
    if (replies_.empty()) {
      reply.status = 500;
      reply.pieces = {"{\"error\":{\"message\":\"fake server: no reply queued\"}}"};
    } else {
      reply = std::move(replies_.front());
      replies_.pop_front();
    }
  }
  std::string head = "HTTP/1.1 " + std::to_string(reply.status) + " " + reason(reply.status) + "\r\n";
  for (const auto& [k, v] : reply.headers) head += k + ": " + v + "\r\n";
  head += reply.chunked ? "Transfer-Encoding: chunked\r\n" : "";
  head += "Connection: close\r\n\r\n";
  writeAll(fd, head);
  for (const auto& piece : reply.pieces) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (piece.empty()) continue;
    if (reply.chunked) {
      char size[32];
      std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
      writeAll(fd, size + piece + "\r\n");
    } else {
      writeAll(fd, piece);
    }
  }
  if (reply.chunked && !reply.cut) writeAll(fd, "0\r\n\r\n");
  ::shutdown(fd, SHUT_WR);
}

std::vector<std::string> splitAt(const std::string& text, std::vector<std::size_t> offsets) {
  std::vector<std::string> out;
  std::size_t prev = 0;
  for (std::size_t o : offsets) {
    if (o <= prev || o >= text.size()) throw std::logic_error("splitAt: offsets must ascend inside the text");
    out.push_back(text.substr(prev, o - prev));
    prev = o;
  }
  out.push_back(text.substr(prev));
  return out;
}

}  // namespace pine::model::test
