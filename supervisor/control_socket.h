// pine.sock, the owner's control API: pined listens on it, as Postfix's master
// listens for its daemons, because only a process outside every sandbox sees a
// peer's real uid and groups (the broker's user namespace maps none but its own).
// Each connection's peer is checked (common/unix_socket.h: pine's uid or its admin
// group); an admitted one is handed to the broker, which speaks HTTP on it. pined
// reads nothing from the connection: a refusal is one fixed answer, then close.
#pragma once
#include <kj/async-io.h>

#include <functional>
#include <string>

namespace pine {

class ControlSocket final : private kj::TaskSet::ErrorHandler {
 public:
  // handOver(fd) takes an admitted connection; it returns false when no broker can take it now.
  ControlSocket(kj::AsyncIoContext& io, std::function<bool(int fd)> handOver);
  // Binds `path` (mode 600, replacing a stale socket) and starts accepting.
  void listen(const std::string& path);

 private:
  kj::Promise<void> acceptLoop();
  kj::Promise<void> answer(kj::Own<kj::AsyncIoStream> conn, unsigned status, const std::string& error);
  void taskFailed(kj::Exception&& e) override;
  kj::AsyncIoContext& io_;
  std::function<bool(int)> handOver_;
  kj::Own<kj::ConnectionReceiver> receiver_;
  kj::TaskSet tasks_;
};

}  // namespace pine
