#include "browser/proxy.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "common/cloexec.h"
#include "egress/address_policy.h"
#include "web/host_rules.h"
#include "web/mcp_loop.h"
#include "web/url.h"

namespace pine::browser {
namespace {

constexpr size_t kMaxHeadBytes = 64u << 10;
constexpr int kConnectTimeoutMs = 10000;
constexpr int kIdleTimeoutMs = 120000;
constexpr size_t kMaxRefusals = 1000;

void setPort(sockaddr_storage& ss, int port) {
  if (ss.ss_family == AF_INET) reinterpret_cast<sockaddr_in&>(ss).sin_port = htons(static_cast<uint16_t>(port));
  if (ss.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6&>(ss).sin6_port = htons(static_cast<uint16_t>(port));
}

// A connection to the checked address, with a timeout; -1 when none could be made.
int connectTo(const sockaddr_storage& ss) {
  int fd = socketCloexec(ss.ss_family, SOCK_STREAM, 0, true);
  if (fd < 0) return -1;
  socklen_t len = ss.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&ss), len) != 0 && errno != EINPROGRESS) {
    close(fd);
    return -1;
  }
  pollfd p = {fd, POLLOUT, 0};
  int err = 0;
  socklen_t elen = sizeof err;
  if (poll(&p, 1, kConnectTimeoutMs) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0 || err != 0) {
    close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

// Bytes both ways until one side closes or both are idle too long.
void relay(int a, int b) {
  char buf[65536];
  for (;;) {
    pollfd p[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
    int n = poll(p, 2, kIdleTimeoutMs);
    if (n <= 0) return;
    for (int i = 0; i < 2; ++i) {
      if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = read(p[i].fd, buf, sizeof buf);
      if (got <= 0) return;
      if (!web::writeAll(i == 0 ? b : a, std::string(buf, static_cast<size_t>(got)))) return;
    }
  }
}

// "host:port" of a CONNECT or an authority; brackets around an IPv6 address.
bool splitHostPort(const std::string& hp, int defaultPort, std::string& host, int& port) {
  std::string h = hp, p;
  if (!h.empty() && h[0] == '[') {
    auto close = h.find(']');
    if (close == std::string::npos) return false;
    host = h.substr(1, close - 1);
    if (close + 1 < h.size()) {
      if (h[close + 1] != ':') return false;
      p = h.substr(close + 2);
    }
  } else {
    auto colon = h.rfind(':');
    if (colon != std::string::npos && h.find(':') == colon) {
      host = h.substr(0, colon);
      p = h.substr(colon + 1);
    } else if (colon == std::string::npos) {
      host = h;
    } else {
      return false;
    }
  }
  port = defaultPort;
  if (!p.empty()) {
    if (p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos) return false;
    port = std::stoi(p);
  }
  host = web::lowerAscii(host);
  while (!host.empty() && host.back() == '.') host.pop_back();
  return !host.empty() && port > 0 && port < 65536;
}

}  // namespace

std::optional<std::string> checkDestination(const std::string& host, int port, bool plainHttp, const WebRules& rules,
                                            std::vector<sockaddr_storage>& addrs) {
  addrs.clear();
  if (auto why = web::hostRefusal(host, rules.allowHosts, rules.denyHosts)) return why;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_family = AF_UNSPEC;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res); rc != 0 || !res)
    return "cannot resolve '" + host + "': " + gai_strerror(rc);
  egress::AddressRules ar;
  ar.allowPrivate = rules.allowPrivate;
  ar.allowLoopback = rules.allowPrivate;
  std::optional<std::string> refused;
  for (addrinfo* a = res; a; a = a->ai_next) {
    if (auto why = egress::refusal(a->ai_addr, ar)) {
      refused = "'" + host + "': " + *why + (rules.allowPrivate ? "" : " (allowPrivate is not set)");
      break;
    }
    sockaddr_storage ss{};
    memcpy(&ss, a->ai_addr, a->ai_addrlen);
    setPort(ss, port);
    addrs.push_back(ss);
  }
  freeaddrinfo(res);
  if (refused) {
    addrs.clear();
    return refused;
  }
  if (plainHttp && !rules.allowPrivate)
    return "http://" + host + ": plain http is refused (https only, unless the server's allowPrivate is set)";
  return std::nullopt;
}

std::optional<ProxyRequest> parseProxyRequest(const std::string& head, std::string& why) {
  auto eol = head.find("\r\n");
  const std::string first = head.substr(0, eol);
  if (first.find_first_of("\r\n") != std::string::npos) {
    why = "a bare CR or LF in the request line";
    return std::nullopt;
  }
  auto sp1 = first.find(' ');
  auto sp2 = first.rfind(' ');
  if (sp1 == std::string::npos || sp2 == sp1) {
    why = "not an HTTP request line";
    return std::nullopt;
  }
  const std::string method = first.substr(0, sp1), target = first.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string version = first.substr(sp2 + 1);
  if (version.rfind("HTTP/1.", 0) != 0 || method.empty() || method.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ") != std::string::npos) {
    why = "not an HTTP/1.x request line";
    return std::nullopt;
  }
  ProxyRequest r;
  if (method == "CONNECT") {
    r.connect = true;
    if (!splitHostPort(target, 443, r.host, r.port)) {
      why = "CONNECT to a malformed authority";
      return std::nullopt;
    }
    return r;
  }
  if (target.rfind("http://", 0) != 0) {
    why = "only http:// URLs and CONNECT go through this proxy";
    return std::nullopt;
  }
  auto pathAt = target.find_first_of("/?#", 7);
  std::string authority = target.substr(7, pathAt == std::string::npos ? std::string::npos : pathAt - 7);
  if (authority.find('@') != std::string::npos) {
    why = "a login in the URL";
    return std::nullopt;
  }
  if (!splitHostPort(authority, 80, r.host, r.port)) {
    why = "a malformed host";
    return std::nullopt;
  }
  std::string path = pathAt == std::string::npos ? "/" : target.substr(pathAt);
  if (path[0] != '/') path = "/" + path;
  auto hash = path.find('#');
  if (hash != std::string::npos) path.erase(hash);
  // The server gets origin-form, no proxy headers, and closes after one answer: the next
  // request Chromium sends (maybe to another host) comes on a new, newly checked connection.
  r.head = method + " " + path + " " + version + "\r\n";
  size_t at = eol == std::string::npos ? head.size() : eol + 2;
  while (at < head.size()) {
    auto end = head.find("\r\n", at);
    if (end == std::string::npos) end = head.size();
    std::string line = head.substr(at, end - at);
    at = end + 2;
    if (line.empty()) break;
    if (line.find_first_of("\r\n") != std::string::npos) {  // a server could read it as two lines
      why = "a bare CR or LF in a header";
      return std::nullopt;
    }
    std::string name = web::lowerAscii(line.substr(0, line.find(':')));
    if (name == "connection" || name == "proxy-connection" || name == "keep-alive" || name.rfind("proxy-", 0) == 0) continue;
    r.head += line + "\r\n";
  }
  r.head += "Connection: close\r\n\r\n";
  return r;
}

int Proxy::start() {
  listener_ = socketCloexec(AF_INET, SOCK_STREAM, 0);
  if (listener_ < 0) throw std::runtime_error(std::string("proxy: socket: ") + strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(listener_, 64) != 0 ||
      getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error(std::string("proxy: cannot listen on 127.0.0.1: ") + strerror(errno));
  std::thread([state = state_, fd = listener_] {
    for (;;) {
      int c = acceptCloexec(fd);
      if (c < 0) {
        if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE) continue;
        close(fd);  // shut down by ~Proxy
        return;
      }
      std::thread([state, c] { serve(state, c); }).detach();
    }
  }).detach();
  return ntohs(a.sin_port);
}

Proxy::~Proxy() {
  if (listener_ >= 0) shutdown(listener_, SHUT_RDWR);  // the accepting thread sees it and closes it
}

size_t Proxy::mark() {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->refusals.size();
}

std::vector<std::string> Proxy::refusalsSince(size_t mark) {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (mark >= state_->refusals.size()) return {};
  return std::vector<std::string>(state_->refusals.begin() + static_cast<long>(mark), state_->refusals.end());
}

void Proxy::refuse(State& state, int client, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(state.mu);
    if (state.refusals.size() < kMaxRefusals) state.refusals.push_back(why);
  }
  const std::string body = "pine-browser refused this address: " + why + "\n";
  web::writeAll(client, "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
                            std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
}

void Proxy::serve(const std::shared_ptr<State>& state, int client) {
  std::string head;
  char buf[4096];
  while (head.find("\r\n\r\n") == std::string::npos) {
    pollfd p = {client, POLLIN, 0};
    if (head.size() > kMaxHeadBytes || poll(&p, 1, kConnectTimeoutMs) != 1) {
      close(client);
      return;
    }
    ssize_t n = recv(client, buf, sizeof buf, 0);
    if (n <= 0) {
      close(client);
      return;
    }
    head.append(buf, static_cast<size_t>(n));
  }
  const size_t headEnd = head.find("\r\n\r\n") + 4;
  std::string rest = head.substr(headEnd);
  head.resize(headEnd);
  std::string why;
  auto req = parseProxyRequest(head, why);
  if (!req) {
    refuse(*state, client, why);
    close(client);
    return;
  }
  std::vector<sockaddr_storage> addrs;
  if (auto refused = checkDestination(req->host, req->port, !req->connect, state->rules, addrs)) {
    refuse(*state, client, *refused);
    close(client);
    return;
  }
  int server = -1;
  for (auto& a : addrs)
    if ((server = connectTo(a)) >= 0) break;
  if (server < 0) {
    web::writeAll(client, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    close(client);
    return;
  }
  bool ok = req->connect ? web::writeAll(client, "HTTP/1.1 200 Connection established\r\n\r\n")
                         : web::writeAll(server, req->head);
  if (ok && !rest.empty()) ok = web::writeAll(server, rest);
  if (ok) relay(client, server);
  close(server);
  close(client);
}

}  // namespace pine::browser
