// The load client of bench-mqtt: several MQTT 3.1.1 publishers at QoS 1, all driven by one
// thread through epoll, speaking the protocol over plain sockets. Each keeps up to `window`
// PUBLISH packets unacknowledged by the server, and writes whatever its window allows in one
// write. libmosquitto's clients (one network thread each, a lock and a wake-up a message, and
// a read system call for each part of each packet) cost the 2-CPU machine about 23 us a
// message, as much as pine-mqtt and the broker together, and alone reached only about 0.4 of
// the floor: the client, not pine, was the limit (bench/RESULTS.md). The server sees the same
// packets, one PUBLISH per message, each acknowledged by its own PUBACK.
#pragma once
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/events/bench_senders.h"

namespace pine::bench {

namespace mqtt_detail {

// MQTT's variable-length "remaining length" (1 to 4 bytes, 7 bits each, low first).
inline void appendLength(std::string& out, size_t n) {
  do {
    unsigned char b = n % 128;
    n /= 128;
    out += (char)(n ? b | 0x80 : b);
  } while (n);
}

inline void appendString(std::string& out, const std::string& s) {
  out += (char)(s.size() >> 8);
  out += (char)(s.size() & 0xff);
  out += s;
}

inline std::string connectPacket(const std::string& clientId) {
  std::string body;
  appendString(body, "MQTT");
  body += (char)4;     // protocol level: 3.1.1
  body += (char)0x02;  // clean session, no will, no login
  body += (char)0;     // keep alive: 60 s
  body += (char)60;
  appendString(body, clientId);
  std::string p(1, (char)0x10);
  appendLength(p, body.size());
  return p + body;
}

inline void appendPublish(std::string& out, const std::string& topic, const std::string& payload, unsigned id) {
  out += (char)0x32;  // PUBLISH, QoS 1
  appendLength(out, 2 + topic.size() + 2 + payload.size());
  appendString(out, topic);
  out += (char)(id >> 8);
  out += (char)(id & 0xff);
  out += payload;
}

inline void writeAll(int fd, const std::string& bytes) {
  if (!detail::writeAll(fd, bytes)) throw std::runtime_error(std::string("writing to mosquitto: ") + strerror(errno));
}

}  // namespace mqtt_detail

// Publishes `total` messages, message i on `topic`/t<i % 8> with the payload {"n":i}, from
// `publishers` connections to mosquitto on 127.0.0.1:`port`, each with up to `window`
// unacknowledged. `mayPublish`, when set, is asked before each message, and while it says no the
// client waits a moment and asks again. Returns the seconds from the first PUBLISH to the last
// PUBACK; `cpu`, when given, receives the CPU seconds this thread spent on it.
inline double publishRaw(int port, const std::string& topic, int total, int publishers, int window,
                         const std::function<bool()>& mayPublish = nullptr, double* cpu = nullptr) {
  using namespace mqtt_detail;
  if (window < 1 || window > 60000) throw std::runtime_error("the window must be 1 to 60000 (packet ids are 16 bits)");
  struct P {
    int fd = -1;
    std::string in, out;
    long sent = 0, acked = 0;
    bool connected = false;
  };
  std::vector<P> ps((size_t)publishers);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) throw std::runtime_error(std::string("epoll_create1: ") + strerror(errno));
  static int instance = 0;
  ++instance;
  for (size_t i = 0; i < ps.size(); ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (sockaddr*)&a, sizeof a) != 0)
      throw std::runtime_error("the load client cannot connect to mosquitto on port " + std::to_string(port) + ": " +
                               strerror(errno));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    writeAll(fd, connectPacket("bench-" + std::to_string(getpid()) + "-" + std::to_string(instance) + "-" +
                               std::to_string(i)));
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = i;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) throw std::runtime_error(std::string("epoll_ctl: ") + strerror(errno));
    ps[i].fd = fd;
  }
  // Message k goes to publisher k % publishers, in order.
  long next = 0, acked = 0;
  int connected = 0;
  auto threadCpu = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
  };
  double cpu0 = threadCpu();
  auto t0 = std::chrono::steady_clock::now();
  auto fill = [&]() {
    bool held = false;  // mayPublish said no: look again shortly
    for (auto& p : ps) {
      if (!p.connected) continue;
      while (next < total && p.sent - p.acked < window && &ps[(size_t)(next % publishers)] == &p) {
        if (mayPublish && !mayPublish()) {
          held = true;
          break;
        }
        appendPublish(p.out, topic + "/t" + std::to_string(next % 8), "{\"n\":" + std::to_string(next) + "}",
                      (unsigned)(p.sent % 65535) + 1);
        ++p.sent;
        ++next;
        // The next message is another publisher's: take turns until none may send more.
        if (publishers > 1) break;
      }
    }
    return held;
  };
  std::vector<epoll_event> events(ps.size());
  char buf[65536];
  while (acked < total) {
    // Round-robin over the publishers while their windows allow.
    bool held = false;
    for (long before = -1; before != next && !held;) {
      before = next;
      held = fill();
    }
    for (auto& p : ps)
      if (!p.out.empty()) {
        writeAll(p.fd, p.out);
        p.out.clear();
      }
    int n = epoll_wait(ep, events.data(), (int)events.size(), held ? 1 : 30000);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 && !held) throw std::runtime_error("mosquitto acknowledged nothing for 30 s");
    for (int e = 0; e < n; ++e) {
      P& p = ps[events[e].data.u64];
      ssize_t got = ::read(p.fd, buf, sizeof buf);
      if (got < 0 && errno == EAGAIN) continue;
      if (got <= 0) throw std::runtime_error("mosquitto closed a load client's connection");
      p.in.append(buf, (size_t)got);
      size_t at = 0;
      // CONNACK (0x20) and PUBACK (0x40) are both four bytes: type, length 2, two bytes.
      while (p.in.size() - at >= 4) {
        unsigned char type = (unsigned char)p.in[at];
        if (p.in[at + 1] != 2) throw std::runtime_error("mosquitto sent a packet this client does not expect");
        if (type == 0x20) {
          if (p.in[at + 3] != 0) throw std::runtime_error("mosquitto refused the load client's CONNECT");
          p.connected = true;
          ++connected;
        } else if (type == 0x40) {
          ++p.acked;
          ++acked;
        } else {
          throw std::runtime_error("mosquitto sent a packet of type " + std::to_string(type >> 4) +
                                   ", which this client does not expect");
        }
        at += 4;
      }
      p.in.erase(0, at);
    }
    if (connected == publishers && next == 0) t0 = std::chrono::steady_clock::now();
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (cpu) *cpu = threadCpu() - cpu0;
  for (auto& p : ps) {
    const char disconnect[] = {(char)0xe0, 0};
    (void)!::write(p.fd, disconnect, 2);
    close(p.fd);
  }
  close(ep);
  return secs;
}

}  // namespace pine::bench
