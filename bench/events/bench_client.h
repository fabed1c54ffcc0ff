// A minimal HTTP/1.1 client for the benchmarks: keep-alive requests and
// server-sent-event streams over a pine home's unix socket, with the home's
// token. Kept apart from the harness so that a timed loop reuses one
// connection and parses nothing it does not need.
#pragma once
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.h"

namespace pine::bench {

inline int connectUnix(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  if (fd < 0 || connect(fd, (sockaddr*)&a, sizeof a) != 0) {
    if (fd >= 0) close(fd);
    throw std::runtime_error("cannot connect to " + path + ": " + strerror(errno) + " (is pined running?)");
  }
  return fd;
}

inline std::string homeToken(const std::string& home) {
  std::string t = pine::test::readText(home + "/data/http-token");
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

inline std::string lower(std::string s) {
  for (auto& c : s) c = (char)tolower((unsigned char)c);
  return s;
}

// One connection to the control API. request() sends and reads one answer with a
// Content-Length; openStream() sends and reads the head of a chunked SSE answer,
// after which nextEvent() yields its events one by one.
class Conn {
 public:
  explicit Conn(const std::string& home) : fd_(connectUnix(home + "/pine.sock")), token_(homeToken(home)) {}
  ~Conn() { close(fd_); }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  // The status code, or -1 when the connection failed; the body goes to *out.
  int request(const std::string& method, const std::string& path, const std::string& body = "",
              std::string* out = nullptr) {
    if (!send(method, path, body, "")) return -1;
    size_t headEnd;
    if (!readHead(&headEnd)) return -1;
    std::string head = lower(in_.substr(0, headEnd));
    auto cl = head.find("content-length:");
    size_t want = headEnd + 4 + (cl == std::string::npos ? 0 : std::stoul(head.substr(cl + 15)));
    while (in_.size() < want)
      if (!fill()) return -1;
    int status = atoi(in_.c_str() + 9);
    if (out) *out = in_.substr(headEnd + 4, want - headEnd - 4);
    in_.erase(0, want);
    return status;
  }

  // Starts a streamed request; true when the answer is 200 and chunked.
  bool openStream(const std::string& method, const std::string& path, const std::string& body = "") {
    if (!send(method, path, body, "Accept: text/event-stream\r\n")) return false;
    size_t headEnd;
    if (!readHead(&headEnd)) return false;
    std::string head = lower(in_.substr(0, headEnd));
    int status = atoi(in_.c_str() + 9);
    in_.erase(0, headEnd + 4);
    return status == 200 && head.find("transfer-encoding: chunked") != std::string::npos;
  }

  struct Event {
    std::string name, data;
  };
  // The next SSE event (comments skipped); false when the stream ended or the connection failed.
  bool nextEvent(Event* ev) {
    ev->name.clear();
    ev->data.clear();
    while (true) {
      size_t nl;
      while ((nl = sse_.find('\n')) == std::string::npos)
        if (!fillChunk()) return false;
      std::string line = sse_.substr(0, nl);
      sse_.erase(0, nl + 1);
      if (line.empty()) {
        if (!ev->name.empty() || !ev->data.empty()) return true;
      } else if (line.rfind("event: ", 0) == 0) {
        ev->name = line.substr(7);
      } else if (line.rfind("data: ", 0) == 0) {
        ev->data = line.substr(6);
      }
    }
  }

  void shutdownRead() { ::shutdown(fd_, SHUT_RDWR); }
  // A read that waits longer fails (a test's stream that never delivers ends instead of hanging).
  void setReadTimeout(int ms) {
    timeval tv{ms / 1000, (ms % 1000) * 1000};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }

 private:
  bool send(const std::string& method, const std::string& path, const std::string& body, const std::string& extra) {
    std::string req = method + " " + path + " HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + token_ + "\r\n" +
                      extra;
    if (!body.empty() || method == "POST" || method == "PUT")
      req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
    req += "\r\n" + body;
    for (size_t off = 0; off < req.size();) {
      ssize_t n = write(fd_, req.data() + off, req.size() - off);
      if (n <= 0) return false;
      off += (size_t)n;
    }
    return true;
  }
  bool fill() {
    char buf[65536];
    ssize_t n = read(fd_, buf, sizeof buf);
    if (n <= 0) return false;
    in_.append(buf, (size_t)n);
    return true;
  }
  bool readHead(size_t* headEnd) {
    while ((*headEnd = in_.find("\r\n\r\n")) == std::string::npos)
      if (!fill()) return false;
    return in_.rfind("HTTP/1.1 ", 0) == 0;
  }
  // Decodes one chunk of the chunked body into sse_; false at the last chunk or on failure.
  bool fillChunk() {
    size_t eol;
    while ((eol = in_.find("\r\n")) == std::string::npos)
      if (!fill()) return false;
    size_t size = std::stoul(in_.substr(0, eol), nullptr, 16);
    if (size == 0) return false;
    while (in_.size() < eol + 2 + size + 2)
      if (!fill()) return false;
    sse_.append(in_, eol + 2, size);
    in_.erase(0, eol + 2 + size + 2);
    return true;
  }

  int fd_;
  std::string token_, in_, sse_;
};

// Counts the events of an SSE stream on its own thread, noting when the last one arrived.
class SseCounter {
 public:
  SseCounter(const std::string& home, const std::string& path) : conn_(home) {
    if (!conn_.openStream("GET", path)) throw std::runtime_error("GET " + path + " did not open an event stream");
    thread_ = std::thread([this] {
      Conn::Event ev;
      while (conn_.nextEvent(&ev)) {
        if (ev.name == "overflow") {
          overflowed = true;
          return;
        }
        if (ev.name != "event") continue;
        ++count;
        lastNs = std::chrono::steady_clock::now().time_since_epoch().count();
      }
    });
  }
  ~SseCounter() {
    conn_.shutdownRead();
    thread_.join();
  }
  std::atomic<long> count{0};
  std::atomic<long long> lastNs{0};
  std::atomic<bool> overflowed{false};

 private:
  Conn conn_;
  std::thread thread_;
};

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, (size_t)(p * (double)(v.size() - 1) + 0.5))];
}

}  // namespace pine::bench
