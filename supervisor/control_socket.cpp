#include "supervisor/control_socket.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/unix_socket.h"

namespace pine {

ControlSocket::ControlSocket(kj::AsyncIoContext& io, std::function<bool(int)> handOver)
    : io_(io), handOver_(std::move(handOver)), tasks_(*this) {}

void ControlSocket::taskFailed(kj::Exception&& e) { spdlog::warn("pine.sock: {}", e.getDescription().cStr()); }

void ControlSocket::listen(const std::string& path) {
  receiver_ = listenUnixSocket(*io_.lowLevelProvider, path);
  tasks_.add(acceptLoop());
}

kj::Promise<void> ControlSocket::acceptLoop() {
  return receiver_->accept().then([this](kj::Own<kj::AsyncIoStream>&& conn) {
    PeerVerdict verdict;
    KJ_IF_MAYBE(fd, conn->getFd()) { verdict = checkPeer(*fd); }
    if (!verdict.allowed) {
      spdlog::warn("control API: refused a connection: {}", verdict.reason);
      tasks_.add(answer(kj::mv(conn), 403, "pine refused this connection: " + verdict.reason));
    } else {
      int copy = -1;
      KJ_IF_MAYBE(fd, conn->getFd()) { copy = fcntl(*fd, F_DUPFD_CLOEXEC, 3); }
      if (copy < 0 || !handOver_(copy))
        tasks_.add(answer(kj::mv(conn), 503, "the broker is starting or restarting; try again in a moment"));
    }
    return acceptLoop();
  }, [this](kj::Exception&& e) {
    // Out of descriptors, say: keep listening and try again shortly instead of going deaf.
    spdlog::warn("pine.sock: accept failed: {}", e.getDescription().cStr());
    return io_.provider->getTimer().afterDelay(100 * kj::MILLISECONDS).then([this]() { return acceptLoop(); });
  });
}

kj::Promise<void> ControlSocket::answer(kj::Own<kj::AsyncIoStream> conn, unsigned status, const std::string& error) {
  auto text = kj::heap<std::string>();
  std::string body = nlohmann::json{{"error", error}}.dump();
  *text = "HTTP/1.1 " + std::to_string(status) + (status == 403 ? " Forbidden" : " Service Unavailable") +
          "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
          "\r\nConnection: close\r\n\r\n" + body;
  // Then wait for the client to close, discarding (never parsing) what it sent: closing on its
  // unread request would make its read fail with ECONNRESET before it sees the answer.
  auto& c = *conn;
  auto done = c.write(text->data(), text->size()).then([&c]() {
    c.shutdownWrite();
    return c.readAllBytes(64 << 10).ignoreResult();  // more than that: an exception, and the close
  });
  return done.attach(kj::mv(text), kj::mv(conn))
      .then([]() {}, [](kj::Exception&&) {})
      .exclusiveJoin(io_.provider->getTimer().afterDelay(2 * kj::SECONDS));
}

}  // namespace pine
