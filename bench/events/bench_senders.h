// The load client of the single-event case: many keep-alive connections, each with one
// request in flight at a time (a sender that waits for its answer before the next, as a
// webhook or a device does), all driven by one thread through epoll. Sixteen blocking
// threads cost the machine a thread wake-up per answer, on the same two CPUs the broker
// needs (bench/RESULTS.md, "Intake, second round"); one thread that takes every answer a
// wake-up brings does not, and the server sees the same requests. `trivialServer` answers
// every request at once without looking at it: the rate against it is what the client
// alone can reach, so that a figure against pine is not the client's limit.
#pragma once
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/events/bench_client.h"

namespace pine::bench {

struct SendResult {
  long ok = 0, failed = 0;  // 200 answers; anything else, or a connection that broke
};

namespace detail {

inline void setNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)
    throw std::runtime_error(std::string("fcntl O_NONBLOCK: ") + strerror(errno));
}

// Writes all of `text` to a non-blocking socket; a request or an answer is far below the
// socket's buffer, so EAGAIN (a peer that does not read) is only waited out.
inline bool writeAll(int fd, const std::string& text) {
  for (size_t off = 0; off < text.size();) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n > 0) {
      off += (size_t)n;
    } else if (n < 0 && errno == EAGAIN) {
      std::this_thread::yield();
    } else {
      return false;
    }
  }
  return true;
}

// The length of one complete HTTP message (a head, then Content-Length bytes) at the start of
// `in`; 0 when it has not all arrived. Header names are matched case-insensitively.
inline size_t messageLength(const std::string& in) {
  size_t headEnd = in.find("\r\n\r\n");
  if (headEnd == std::string::npos) return 0;
  size_t length = 0;
  for (size_t line = in.find("\r\n"); line < headEnd; line = in.find("\r\n", line + 2))
    if (strncasecmp(in.data() + line + 2, "content-length:", 15) == 0) length = strtoul(in.data() + line + 17, nullptr, 10);
  return in.size() < headEnd + 4 + length ? 0 : headEnd + 4 + length;
}

}  // namespace detail

// Sends `total` POSTs to `path` over `connections` connections to the unix socket `socketPath`,
// request k carrying body(k); each connection sends its next request only once the last one is
// answered. Returns once every request is answered (or its connection broke).
inline SendResult sendEach(const std::string& socketPath, const std::string& token, const std::string& path,
                           int connections, int total, const std::function<std::string(int)>& body) {
  struct C {
    int fd = -1;
    std::string in;
    bool busy = false;
  };
  std::vector<C> conns((size_t)connections);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) throw std::runtime_error(std::string("epoll_create1: ") + strerror(errno));
  const std::string head = "POST " + path + " HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + token +
                           "\r\nContent-Type: application/json\r\nContent-Length: ";
  SendResult result;
  int next = 0, inFlight = 0;
  auto sendNext = [&](size_t i) {
    if (next >= total) return;
    std::string b = body(next++);
    if (!detail::writeAll(conns[i].fd, head + std::to_string(b.size()) + "\r\n\r\n" + b)) {
      ++result.failed;
      return;
    }
    conns[i].busy = true;
    ++inFlight;
  };
  for (size_t i = 0; i < conns.size(); ++i) {
    conns[i].fd = connectUnix(socketPath);
    detail::setNonBlocking(conns[i].fd);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = i;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev) != 0)
      throw std::runtime_error(std::string("epoll_ctl: ") + strerror(errno));
  }
  for (size_t i = 0; i < conns.size(); ++i) sendNext(i);
  std::vector<epoll_event> events(conns.size());
  char buf[65536];
  while (inFlight > 0) {
    int n = epoll_wait(ep, events.data(), (int)events.size(), 30000);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("the single-event senders waited 30 s for an answer");
    for (int e = 0; e < n; ++e) {
      C& c = conns[events[e].data.u64];
      ssize_t got = ::read(c.fd, buf, sizeof buf);
      if (got < 0 && errno == EAGAIN) continue;
      if (got <= 0) {  // the server closed or the connection broke: its request is lost
        epoll_ctl(ep, EPOLL_CTL_DEL, c.fd, nullptr);
        if (c.busy) --inFlight, ++result.failed;
        c.busy = false;
        continue;
      }
      c.in.append(buf, (size_t)got);
      while (size_t used = detail::messageLength(c.in)) {
        int status = c.in.compare(0, 9, "HTTP/1.1 ") == 0 ? atoi(c.in.c_str() + 9) : -1;
        c.in.erase(0, used);
        if (!c.busy) continue;  // an answer nobody asked for: the server is wrong, but not counted
        c.busy = false;
        --inFlight;
        ++(status == 200 ? result.ok : result.failed);
        sendNext(events[e].data.u64);
      }
    }
  }
  for (auto& c : conns) close(c.fd);
  close(ep);
  return result;
}

// A server that answers every request on a unix socket at once with a fixed 200 (the same size as
// pine's answer to a single event, about 300 bytes), reading only as much as it must to find where
// each request ends. On its own thread until destroyed.
class TrivialServer {
 public:
  explicit TrivialServer(const std::string& socketPath) : path_(socketPath) {
    listen_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    strncpy(a.sun_path, path_.c_str(), sizeof a.sun_path - 1);
    unlink(path_.c_str());
    if (listen_ < 0 || bind(listen_, (sockaddr*)&a, sizeof a) != 0 || listen(listen_, 64) != 0)
      throw std::runtime_error("trivial server: cannot listen on " + path_ + ": " + strerror(errno));
    if (pipe2(stop_, O_CLOEXEC) != 0) throw std::runtime_error("trivial server: pipe2 failed");
    thread_ = std::thread([this] { run(); });
  }
  ~TrivialServer() {
    (void)!::write(stop_[1], "x", 1);
    thread_.join();
    close(listen_);
    close(stop_[0]);
    close(stop_[1]);
    unlink(path_.c_str());
  }

 private:
  void run() {
    const std::string body(260, 'x');
    const std::string answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                               std::to_string(body.size()) + "\r\n\r\n" + body;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = listen_;
    epoll_ctl(ep, EPOLL_CTL_ADD, listen_, &ev);
    ev.data.fd = stop_[0];
    epoll_ctl(ep, EPOLL_CTL_ADD, stop_[0], &ev);
    std::vector<std::string> in(1024);  // by descriptor: what arrived of the next request
    std::vector<bool> open(in.size());   // the connections this server accepted
    epoll_event events[64];
    char buf[65536];
    for (;;) {
      int n = epoll_wait(ep, events, 64, -1);
      for (int e = 0; e < n; ++e) {
        int fd = events[e].data.fd;
        if (fd == stop_[0]) {
          close(ep);
          for (int c = 0; c < (int)open.size(); ++c)
            if (open[c]) close(c);
          return;
        }
        if (fd == listen_) {
          int c = accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
          if (c < 0 || c >= (int)in.size()) {
            if (c >= 0) close(c);
            continue;
          }
          ev.data.fd = c;
          epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
          open[c] = true;
          continue;
        }
        ssize_t got = ::read(fd, buf, sizeof buf);
        if (got <= 0) {
          epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
          close(fd);
          in[fd].clear();
          open[fd] = false;
          continue;
        }
        in[fd].append(buf, (size_t)got);
        // A request is framed like an answer: a head and Content-Length bytes.
        std::string out;
        while (size_t used = detail::messageLength(in[fd])) {
          in[fd].erase(0, used);
          out += answer;
        }
        if (!out.empty()) detail::writeAll(fd, out);
      }
    }
  }
  std::string path_;
  int listen_ = -1, stop_[2] = {-1, -1};
  std::thread thread_;
};

}  // namespace pine::bench
