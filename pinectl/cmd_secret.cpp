// `pinectl secret set NAME`: the value goes straight to pined over the owner's
// socket, never through the broker, never on a command line or in the environment.
#include <kj/async-io.h>
#include <openssl/crypto.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include <iostream>

#include "common/home.h"
#include "common/rpc_link.h"
#include "pinectl/access_problem.h"
#include "pinectl/commands.h"
#include "pinectl/owner_socket.h"
#include "proto/owner.capnp.h"
#include "common/cloexec.h"

namespace pine {
namespace {

// From the terminal without echo, else all of stdin (one trailing newline dropped).
std::string readSecretValue(const std::string& name) {
  std::string value;
  if (isatty(0)) {
    struct termios old, quiet;
    tcgetattr(0, &old);
    quiet = old;
    quiet.c_lflag &= ~(tcflag_t)ECHO;
    std::cerr << "value for " << name << " (not shown): " << std::flush;
    tcsetattr(0, TCSAFLUSH, &quiet);
    std::getline(std::cin, value);
    tcsetattr(0, TCSAFLUSH, &old);
    std::cerr << "\n";
  } else {
    value.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    if (!value.empty() && value.back() == '\n') value.pop_back();
    if (!value.empty() && value.back() == '\r') value.pop_back();
  }
  return value;
}


}  // namespace

int cmdSecret(const std::string& home, const std::string& action, const std::string& name, bool force) {
  auto io = kj::setupAsyncIo();
  RpcLink link(wrapSocket(*io.lowLevelProvider, connectOwnerSocket(home)), capnp::rpc::twoparty::Side::CLIENT,
               nullptr, LinkLimits{0, 1 << 20});
  auto owner = link.peer().castAs<proto::Owner>();
  try {
    if (action == "set") {
      std::string value = readSecretValue(name);
      if (value.empty()) {
        std::cerr << "pinectl: an empty value is not stored; nothing changed\n";
        return 1;
      }
      auto req = owner.setSecretRequest();
      req.setName(name);
      req.setValue(kj::arrayPtr(reinterpret_cast<const kj::byte*>(value.data()), value.size()));
      OPENSSL_cleanse(value.data(), value.size());
      req.send().wait(io.waitScope);
      std::cout << "stored " << name << " in " << home << "/.env\n";
    } else if (action == "unset") {
      auto req = owner.unsetSecretRequest();
      req.setName(name);
      req.setForce(force);
      try {
        req.send().wait(io.waitScope);
      } catch (kj::Exception& e) {
        // Used by the configuration: on a terminal, say where and ask; elsewhere the refusal stands.
        std::string why = describeRemote(e);
        if (force || !isatty(0) || why.find("the configuration uses") == std::string::npos) throw;
        std::cerr << "pinectl: " << why << "\nremove " << name << " anyway? [y/N] " << std::flush;
        std::string answer;
        if (!std::getline(std::cin, answer) || (answer != "y" && answer != "yes")) {
          std::cerr << "nothing changed\n";
          return 1;
        }
        auto again = owner.unsetSecretRequest();
        again.setName(name);
        again.setForce(true);
        again.send().wait(io.waitScope);
      }
      std::cout << "removed " << name << "\n";
    } else {
      auto names = owner.secretNamesRequest().send().wait(io.waitScope);
      for (auto n : names.getNames()) std::cout << n.cStr() << "\n";
    }
  } catch (kj::Exception& e) {
    // A refused peer is closed at once: the call sees a disconnect, never an answer.
    std::cerr << "pinectl: "
              << (e.getType() == kj::Exception::Type::DISCONNECTED ? describeOwnerSocketRefusal(home) : describeRemote(e))
              << "\n";
    return 1;
  }
  return 0;
}

}  // namespace pine
