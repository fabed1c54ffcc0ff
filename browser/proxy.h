// The proxy Chromium must use (--proxy-server, loopback included): where the web rules are
// enforced, at the connection, not by asking the page. For each CONNECT (https, wss) and each
// plain http request it checks the host against denyHosts/allowHosts (web/host_rules), resolves
// it, checks every address with egress/address_policy (loopback, private and link-local refused
// unless allowPrivate; reserved ranges always), and connects to a checked address (pinned: a
// second lookup by anyone cannot move it). Plain http only with allowPrivate, as pine-web.
// Refusals are answered 403 with the reason and kept, so that a tool can tell the model which
// rule stopped a navigation.
#pragma once
#include <sys/socket.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace pine::browser {

struct WebRules {
  std::vector<std::string> allowHosts;
  std::vector<std::string> denyHosts;
  bool allowPrivate = false;
};

// Why `host` may not be reached, or nullopt with the checked addresses (port set) in `addrs`.
// `plainHttp`: an http:// request (not a tunnel).
std::optional<std::string> checkDestination(const std::string& host, int port, bool plainHttp, const WebRules& rules,
                                            std::vector<sockaddr_storage>& addrs);

// The request head a client sent a proxy: CONNECT host:port, or an absolute http:// URL.
struct ProxyRequest {
  bool connect = false;
  std::string host;    // lower case, no brackets
  int port = 0;
  std::string head;    // for plain http: the head to send the server (origin-form, Connection: close)
};
// nullopt and why for a head that is neither (or malformed).
std::optional<ProxyRequest> parseProxyRequest(const std::string& head, std::string& why);

class Proxy {
 public:
  explicit Proxy(WebRules rules) : state_(std::make_shared<State>()) { state_->rules = std::move(rules); }
  // Stops listening; connections being relayed finish on their own (their threads share the state).
  ~Proxy();
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;
  // Listens on 127.0.0.1 (a port the kernel picks) and serves on threads; returns the port.
  // Throws std::runtime_error when it cannot listen.
  int start();
  // Refusals are numbered: mark() now, refusalsSince(mark) later.
  size_t mark();
  std::vector<std::string> refusalsSince(size_t mark);
  const WebRules& rules() const { return state_->rules; }

 private:
  struct State {
    WebRules rules;
    std::mutex mu;
    std::vector<std::string> refusals;
  };
  static void serve(const std::shared_ptr<State>& state, int client);
  static void refuse(State& state, int client, const std::string& why);

  std::shared_ptr<State> state_;  // shared with the threads, which may outlive the Proxy
  int listener_ = -1;
};

}  // namespace pine::browser
