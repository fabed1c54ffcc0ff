// pine.sock as pined serves it: a peer the rule admits is handed over (the fd
// arrives at the broker's side), a refused one gets one 403 with the reason and is
// never handed over, and with no broker to take it an admitted one gets a 503.
#include <doctest/doctest.h>
#include <kj/async-io.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "common/unix_socket.h"
#include "supervisor/control_socket.h"

using namespace pine;

namespace {

struct Place {
  std::string dir, sock;
  Place() {
    char tmpl[] = "/tmp/pine-ctlsock-XXXXXX";
    REQUIRE(mkdtemp(tmpl));
    dir = tmpl;
    sock = dir + "/pine.sock";
  }
  ~Place() {
    unlink(sock.c_str());
    rmdir(dir.c_str());
  }
};

// Connects, writes a request, and reads what comes back until the server closes (or 2 s pass).
kj::Promise<std::string> ask(kj::AsyncIoContext& io, const std::string& path) {
  return io.provider->getNetwork().parseAddress("unix:" + path).then([](kj::Own<kj::NetworkAddress> addr) {
    return addr->connect().attach(kj::mv(addr));
  }).then([](kj::Own<kj::AsyncIoStream> conn) {
    auto req = kj::heap<std::string>("GET /v1/status HTTP/1.1\r\nHost: localhost\r\n\r\n");
    auto& c = *conn;
    return c.write(req->data(), req->size()).attach(kj::mv(req)).then([&c]() {
      return c.readAllText();
    }).then([](kj::String s) { return std::string(s.cStr()); }).attach(kj::mv(conn));
  });
}

}  // namespace

TEST_CASE("pine.sock: admitted peers are handed over, refused ones get 403, none while the broker is away gets 503") {
  auto io = kj::setupAsyncIo();
  Place place;
  int handed = -1;
  bool brokerThere = true;
  ControlSocket control(io, [&](int fd) {
    if (!brokerThere) {
      close(fd);
      return false;
    }
    handed = fd;
    return true;
  });
  setSocketAccess(SocketAccess{getuid(), std::nullopt, ""});
  control.listen(place.sock);

  // Admitted: the connection reaches the handover; pined wrote nothing on it.
  auto conn = io.provider->getNetwork().parseAddress("unix:" + place.sock).wait(io.waitScope)->connect().wait(io.waitScope);
  REQUIRE(kj::evalLater([]() {}).then([&]() { return io.provider->getTimer().afterDelay(50 * kj::MILLISECONDS); })
              .then([&]() { return handed >= 0; }).wait(io.waitScope));
  const char hello[] = "x";
  conn->write(hello, 1).wait(io.waitScope);
  char got = 0;
  CHECK(read(handed, &got, 1) == 1);  // what the client sends arrives on the handed-over descriptor
  CHECK(got == 'x');
  close(handed);
  handed = -1;

  // The broker away: 503, and nothing handed over.
  brokerThere = false;
  auto away = ask(io, place.sock).wait(io.waitScope);
  CHECK(away.rfind("HTTP/1.1 503", 0) == 0);
  CHECK(away.find("restarting") != std::string::npos);

  // Refused (pine's uid is someone else's, no admin group): 403 with the reason; never handed over.
  brokerThere = true;
  setSocketAccess(SocketAccess{getuid() + 1, std::nullopt, ""});
  auto refused = ask(io, place.sock).wait(io.waitScope);
  CHECK(refused.rfind("HTTP/1.1 403", 0) == 0);
  CHECK(refused.find("pine refused this connection: uid " + std::to_string(getuid())) != std::string::npos);
  CHECK(handed == -1);
  // The admin group opens it again, for a peer that has the group.
  setSocketAccess(SocketAccess{getuid() + 1, getgid(), "ours"});
  auto conn2 = io.provider->getNetwork().parseAddress("unix:" + place.sock).wait(io.waitScope)->connect().wait(io.waitScope);
  io.provider->getTimer().afterDelay(50 * kj::MILLISECONDS).wait(io.waitScope);
  CHECK(handed >= 0);
  if (handed >= 0) close(handed);
  setSocketAccess(SocketAccess{getuid(), std::nullopt, ""});
}
