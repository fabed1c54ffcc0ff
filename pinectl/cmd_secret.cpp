// `pinectl secret set NAME`: the value goes straight to pined over the owner's
// socket, never through the broker, never on a command line or in the environment.
#include <kj/async-io.h>
#include <openssl/crypto.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <spawn.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <vector>

#include "common/home.h"
#include "common/unix_socket.h"
#include "common/rpc_link.h"
#include "pinectl/access_problem.h"
#include "pinectl/commands.h"
#include "pinectl/owner_socket.h"
#include "proto/owner.capnp.h"
#include "common/cloexec.h"

extern char** environ;

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

// pined is not running: `pined --set-secret NAME` writes .env with a running pined's rules, the value
// on its stdin (never on a command line or in the environment).
static int setSecretWithoutPined(const std::string& home, const std::string& name) {
  std::string value = readSecretValue(name);
  if (value.empty()) {
    std::cerr << "pinectl: an empty value is not stored; nothing changed\n";
    return 1;
  }
  const std::string pined = programDir() + "/pined";
  int in[2];
  if (pipe(in) != 0) throw std::runtime_error(std::string("pipe: ") + strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_addclose(&fa, in[1]);
  std::vector<std::string> argv = {pined, "--home", home, "--set-secret", name};
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, pined.c_str(), &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  if (rc != 0) {
    close(in[1]);
    OPENSSL_cleanse(value.data(), value.size());
    throw std::runtime_error("pined is not running, and " + pined + " cannot be started to store it: " + strerror(rc));
  }
  value += "\n";
  for (size_t at = 0; at < value.size();) {
    ssize_t n = write(in[1], value.data() + at, value.size() - at);
    if (n <= 0) break;
    at += (size_t)n;
  }
  OPENSSL_cleanse(value.data(), value.size());
  close(in[1]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;  // pined said why on stderr
  std::cout << "stored " << name << " in " << home << "/.env (pined is not running: it reads it when it starts)\n";
  return 0;
}

int cmdSecret(const std::string& home, const std::string& action, const std::string& name, bool force) {
  if (action == "set" && pinedIsDown(home)) return setSecretWithoutPined(home, name);
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
