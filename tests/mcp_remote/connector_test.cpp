// pine-mcp-remote, the program, against tests/fixtures/mcp_http_server over loopback: each
// transport (streamable HTTP with JSON and event-stream answers, the older HTTP+SSE), the
// session (its id, MCP-Protocol-Version, DELETE at the end, expiry), the headers of the job, and
// what it refuses (another origin, redirects, answers over the cap, broken answers, addresses
// the rules do not allow), each next to the use that works.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "mcp_remote/http.h"
#include "mcp_remote/job/remote_job.h"
#include "tests/fixtures/mcp_http_server.h"

using nlohmann::json;
using pine::test::McpHttpServer;

namespace {

const std::string kToken = "remote-token-7f3a9c21e5b84d06";

std::string program() {
  const char* dir = std::getenv("PINE_BIN_DIR");
  return std::string(dir ? dir : "build/bin") + "/pine-mcp-remote";
}

// One pine-mcp-remote with its job written, as pined starts it (without the sandbox).
class Connector {
 public:
  explicit Connector(const std::string& url, std::map<std::string, std::string> headers = {}) {
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    fd_ = sv[0];
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
    if (sv[0] != 3) posix_spawn_file_actions_addclose(&fa, sv[0]);  // else the dup2 replaced it
    std::string p = program();
    char* argv[] = {p.data(), nullptr};
    char lang[] = "LANG=C.UTF-8";
    char* envp[] = {lang, nullptr};
    REQUIRE(posix_spawn(&pid_, p.c_str(), &fa, nullptr, argv, envp) == 0);
    posix_spawn_file_actions_destroy(&fa);
    close(sv[1]);
    pine::mcp_remote::RemoteJob job{"agent/server", url, std::move(headers), {}};
    write(pine::mcp_remote::encodeJob(job));
  }
  ~Connector() {
    if (fd_ >= 0) close(fd_);
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  void write(const std::string& s) { REQUIRE(::write(fd_, s.data(), s.size()) == static_cast<ssize_t>(s.size())); }
  void send(const json& m) { write(m.dump() + "\n"); }
  // The next line it writes, parsed (null after `seconds` without one).
  json next(int seconds = 10) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    for (;;) {
      size_t nl = in_.find('\n');
      if (nl != std::string::npos) {
        std::string line = in_.substr(0, nl);
        in_.erase(0, nl + 1);
        lines_.push_back(line);
        return json::parse(line, nullptr, false);
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
      if (left <= 0) return nullptr;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left)) <= 0) return nullptr;
      char buf[65536];
      ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n <= 0) return nullptr;
      in_.append(buf, static_cast<size_t>(n));
    }
  }
  json request(int id, const std::string& method, json params = json::object()) {
    send({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
    return next();
  }
  json initialize() {
    auto r = request(1, "initialize", {{"protocolVersion", "2025-06-18"}, {"capabilities", json::object()},
                                       {"clientInfo", {{"name", "test"}, {"version", "1"}}}});
    send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
    return r;
  }
  // Closes its socket and returns its exit status.
  int closeAndWait() {
    close(fd_);
    fd_ = -1;
    return waitExit();
  }
  int waitExit() {
    int status = 0;
    for (int i = 0; i < 100; ++i) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      usleep(100000);
    }
    return -2;
  }
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  int fd_ = -1;
  pid_t pid_ = -1;
  std::string in_;
  std::vector<std::string> lines_;
};

std::string errorOf(const json& m) {
  return m.is_object() && m.contains("error") ? m["error"].value("message", "") : "(no error: " + m.dump() + ")";
}
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("mcp-remote: streamable HTTP with JSON answers; session id, protocol version and headers; DELETE at the end") {
  McpHttpServer server;
  Connector c(server.url("json"), {{"Authorization", "Bearer " + kToken}, {"X-Empty", ""}});
  auto init = c.initialize();
  CAPTURE(init.dump());
  CHECK(init["id"] == 1);
  CHECK(init["result"]["protocolVersion"] == "2025-06-18");
  auto list = c.request(2, "tools/list");
  REQUIRE(list["result"]["tools"].size() == 4);
  auto call = c.request(3, "tools/call", {{"name", "echo"}, {"arguments", {{"text", "over http"}}}});
  CAPTURE(call.dump());
  CHECK(call["result"]["content"][0]["text"] == "over http");
  // A server that echoes the secret back: what reaches the broker is redacted.
  auto echoed = c.request(4, "tools/call", {{"name", "whoami"}, {"arguments", json::object()}});
  CAPTURE(echoed.dump());
  CHECK(has(echoed.dump(), "you sent Authorization: [redacted]"));
  CHECK_FALSE(has(echoed.dump(), kToken));
  CHECK(c.closeAndWait() == 0);

  auto seen = server.requests();
  REQUIRE(seen.size() >= 5);
  CHECK(seen[0].headers["accept"] == "application/json, text/event-stream");
  CHECK(seen[0].headers["content-type"] == "application/json");
  CHECK(seen[0].headers["authorization"] == "Bearer " + kToken);
  CHECK(seen[0].headers.count("mcp-session-id") == 0);
  CHECK(seen[0].headers.count("mcp-protocol-version") == 0);
  for (size_t i = 1; i < seen.size(); ++i) {
    CAPTURE(i);
    CHECK(seen[i].headers["mcp-session-id"] == "sess-json-1");
    CHECK(seen[i].headers["mcp-protocol-version"] == "2025-06-18");
    CHECK(seen[i].headers["authorization"] == "Bearer " + kToken);
  }
  CHECK(seen.back().method == "DELETE");
  // Notifications are 202 without a line back: every line it wrote answered a request.
  CHECK(c.lines().size() == 4);
}

TEST_CASE("mcp-remote: event-stream answers: progress first, data lines joined, one line each") {
  McpHttpServer server;
  Connector c(server.url("sse"));
  CHECK(c.initialize()["result"]["protocolVersion"] == "2025-06-18");
  c.send({{"jsonrpc", "2.0"}, {"id", 5}, {"method", "tools/call"},
          {"params", {{"name", "slow"}, {"arguments", {{"ms", 10}}}, {"_meta", {{"progressToken", "p1"}}}}}});
  auto progress = c.next();
  CAPTURE(progress.dump());
  CHECK(progress["method"] == "notifications/progress");
  CHECK(progress["params"]["progressToken"] == "p1");
  auto done = c.next();
  CAPTURE(done.dump());
  CHECK(done["id"] == 5);
  CHECK(done["result"]["content"][0]["text"] == "done");
  for (auto& l : c.lines()) CHECK(l.find('\n') == std::string::npos);
}

TEST_CASE("mcp-remote: the older HTTP+SSE transport when the first POST gets 405; another origin is refused") {
  McpHttpServer server;
  {
    Connector c(server.url("legacy"));
    auto init = c.initialize();
    CAPTURE(init.dump());
    CHECK(init["result"]["serverInfo"]["name"] == "mcp-http-fixture");
    CHECK(c.request(3, "tools/list")["result"]["tools"].size() == 4);
    auto call = c.request(2, "tools/call", {{"name", "echo"}, {"arguments", {{"text", "the old way"}}}});
    CHECK(call["result"]["content"][0]["text"] == "the old way");
    bool posted = false;
    for (auto& r : server.requests()) posted = posted || (r.method == "POST" && r.path == "/mcp/legacy/messages?session=1");
    CHECK(posted);
  }
  Connector c(server.url("foreign"));
  auto init = c.initialize();
  CAPTURE(init.dump());
  CHECK(has(errorOf(init), "another origin"));
  CHECK(has(errorOf(init), "127.0.0.2"));
  for (auto& r : server.requests()) CHECK_FALSE(has(r.path, "/mcp/foreign/messages"));
}

TEST_CASE("mcp-remote: a session the server ended (404) is said and ends the connector with status 3") {
  McpHttpServer server;
  Connector c(server.url("expire"));
  c.initialize();
  auto once = c.request(2, "tools/call", {{"name", "echo"}, {"arguments", {{"text", "once"}}}});
  CAPTURE(once.dump());
  CHECK(once["result"].is_object());
  auto gone = c.request(3, "tools/call", {{"name", "echo"}, {"arguments", {{"text", "twice"}}}});
  CAPTURE(gone.dump());
  CHECK(has(errorOf(gone), "ended the session (HTTP 404)"));
  CHECK(c.waitExit() == 3);
}

TEST_CASE("mcp-remote: broken, huge and redirected answers are errors of that request; the session goes on") {
  McpHttpServer server;
  {
    Connector c(server.url("garbage"));
    c.initialize();
    auto bad = c.request(2, "tools/call", {{"name", "echo"}, {"arguments", {{"text", "x"}}}});
    CHECK(has(errorOf(bad), "not JSON"));
    CHECK(c.request(3, "ping")["result"].is_object());
  }
  {
    Connector c(server.url("huge"));
    c.initialize();
    auto big = c.request(2, "tools/call", {{"name", "echo"}, {"arguments", {{"text", "x"}}}});
    CHECK(has(errorOf(big), "over 4 MiB"));
    CHECK(c.request(3, "ping")["result"].is_object());
  }
  {
    Connector c(server.url("redirect"));
    auto init = c.initialize();
    CHECK(has(errorOf(init), "HTTP 307 (a redirect, not followed)"));
    for (auto& r : server.requests()) CHECK(r.path != "/mcp/json");
  }
}

TEST_CASE("mcp-remote: a request the server holds does not stop the others") {
  McpHttpServer server;
  Connector c(server.url("silent"));
  c.initialize();
  c.send({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/call"}, {"params", {{"name", "echo"}, {"arguments", json::object()}}}});
  auto pong = c.request(3, "ping");
  CAPTURE(pong.dump());
  CHECK(pong["id"] == 3);
  c.send({{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 2}}}});
  bool cancelled = false;
  for (int i = 0; i < 50 && !cancelled; ++i) {
    for (auto& r : server.requests()) cancelled = cancelled || has(r.body, "notifications/cancelled");
    usleep(100000);
  }
  CHECK(cancelled);
}

TEST_CASE("mcp-remote: where it may connect: local addresses as written, public names, https beyond the LAN") {
  using pine::mcp_remote::resolveTarget;
  using pine::mcp_remote::Target;
  Target t;
  CHECK_FALSE(resolveTarget("http://127.0.0.1:8080/mcp", 1000, t));
  CHECK_FALSE(resolveTarget("http://localhost:8080/mcp", 1000, t));
  CHECK_FALSE(resolveTarget("http://192.168.1.20/mcp", 1000, t));
  CHECK_FALSE(resolveTarget("https://8.8.8.8/mcp", 1000, t));
  CHECK(t.rules.allowLoopback);  // an address written as such is the owner's choice
  auto plain = resolveTarget("http://8.8.8.8/mcp", 1000, t);
  REQUIRE(plain);
  CHECK(has(*plain, "plain http only to this machine or the local network"));
  auto reserved = resolveTarget("http://0.0.0.0:8080/mcp", 1000, t);
  REQUIRE(reserved);
  auto login = resolveTarget("https://user:pw@example.com/mcp", 1000, t);
  REQUIRE(login);
  CHECK(has(*login, "login in the URL"));
  auto scheme = resolveTarget("ftp://127.0.0.1/mcp", 1000, t);
  REQUIRE(scheme);
  // A name is judged by what it resolves to: this machine's own name resolves to a local
  // address (what DNS rebinding looks like), while "localhost" as written is the owner's choice.
  char self[256] = {};
  gethostname(self, sizeof self - 1);
  addrinfo* res = nullptr;
  bool local = getaddrinfo(self, nullptr, nullptr, &res) == 0 && res != nullptr;
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next)
    local = local && pine::egress::classify(ai->ai_addr) != pine::egress::AddressKind::Public;
  if (res) freeaddrinfo(res);
  if (local && std::string(self) != "localhost") {
    auto name = resolveTarget(std::string("https://") + self + ":8080/mcp", 1000, t);
    REQUIRE(name);
    CHECK(has(*name, "resolves to"));
    CHECK(has(*name, "a name must resolve to public addresses"));
  } else {
    MESSAGE("this machine's name (" << self << ") does not resolve to a local address: not tried");
  }
}

TEST_CASE("mcp-remote: through the program, a refused address answers every request with why") {
  Connector c("http://8.8.8.8/mcp");
  auto init = c.initialize();
  CHECK(has(errorOf(init), "plain http only to this machine"));
  CHECK(has(errorOf(c.request(2, "ping")), "plain http only"));
  CHECK(c.closeAndWait() == 0);
}

TEST_CASE("mcp-remote: a job with no URL is refused per request, saying so") {
  Connector c("");
  CHECK(has(errorOf(c.initialize()), "not a valid URL"));
}
