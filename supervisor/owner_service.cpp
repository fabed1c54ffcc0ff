#include "supervisor/owner_service.h"

#include <fcntl.h>
#include <kj/debug.h>
#include <kj/io.h>
#include <openssl/crypto.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/log.h"
#include "common/rpc_link.h"
#include "common/unix_socket.h"
#include "config/load.h"
#include "supervisor/supervisor.h"

namespace pine {
namespace {

// Where the configuration on disk names `name` as a secret ("pine.yaml:12:5, ..."), judged by
// loading it as it would be without that .env entry; empty when nothing does.
std::string secretUsedAt(const std::string& homeDir, const std::vector<std::string>& names, const std::string& name) {
  std::string env;  // the names that stay, with placeholders long enough for any check of length
  for (auto& n : names)
    if (n != name) env += n + "=" + std::string(64, 'x') + "\n";
  config::LoadOptions options;
  options.overlay[".env"] = env;
  std::string where;
  for (auto& e : config::loadHome(homeDir, options).errors) {
    if (e.message.find("secret '" + name + "' is not in .env") == std::string::npos) continue;
    std::string file = e.file.substr(e.file.find_last_of('/') + 1);
    where += (where.empty() ? "" : ", ") + file + ":" + std::to_string(e.line) + (e.keyPath.empty() ? "" : " " + e.keyPath);
  }
  return where;
}

kj::Exception failed(const std::string& why) {
  return kj::Exception(kj::Exception::Type::FAILED, __FILE__, __LINE__, kj::str(why.c_str()));
}

class OwnerService final : public proto::Owner::Server {
 public:
  explicit OwnerService(Supervisor& sup) : sup_(sup) {}

 protected:
  kj::Promise<void> setSecret(SetSecretContext context) override {
    auto params = context.getParams();
    std::string name = params.getName();
    auto data = params.getValue();
    std::string value(reinterpret_cast<const char*>(data.begin()), data.size());
    // Refused before .env changes: a running hook would refuse every delivery with it, and
    // pined would not start again.
    if (std::string problem = config::secretValueProblem(sup_.home().root, sup_.secrets().names(), name, value.size());
        !problem.empty()) {
      OPENSSL_cleanse(value.data(), value.size());
      return failed("not stored; .env is unchanged: " + problem);
    }
    try {
      sup_.secrets().set(name, value);
    } catch (std::exception& e) {
      OPENSSL_cleanse(value.data(), value.size());
      return failed(e.what());
    }
    OPENSSL_cleanse(value.data(), value.size());
    audit("secret.set", {{"name", name}, {"by", "pinectl"}});
    sup_.secretsChanged();
    return kj::READY_NOW;
  }
  kj::Promise<void> unsetSecret(UnsetSecretContext context) override {
    std::string name = context.getParams().getName();
    if (!context.getParams().getForce()) {
      if (std::string where = secretUsedAt(sup_.home().root, sup_.secrets().names(), name); !where.empty())
        return failed("the configuration uses " + name + " (" + where +
                      "); pined would not start again with it. Remove it from the configuration first, or "
                      "`pinectl secret unset " + name + " --force`");
    }
    try {
      sup_.secrets().unset(name);
    } catch (std::exception& e) {
      return failed(e.what());
    }
    audit("secret.unset", {{"name", name}, {"by", "pinectl"}});
    sup_.secretsChanged();
    return kj::READY_NOW;
  }
  kj::Promise<void> stop(StopContext) override {
    sup_.requestStop();  // answered first; the shutdown runs on the event loop after
    return kj::READY_NOW;
  }
  kj::Promise<void> secretNames(SecretNamesContext context) override {
    auto names = sup_.secrets().names();
    auto list = context.getResults().initNames(names.size());
    for (size_t i = 0; i < names.size(); ++i) list.set(i, names[i]);
    return kj::READY_NOW;
  }

 private:
  Supervisor& sup_;
};

// One connection: its RpcLink lives until the peer hangs up.
kj::Promise<void> serve(kj::LowLevelAsyncIoProvider& lowLevel, int fd, Supervisor& sup) {
  auto link = kj::heap<RpcLink>(wrapSocket(lowLevel, fd), capnp::rpc::twoparty::Side::SERVER,
                                kj::heap<OwnerService>(sup), LinkLimits{0, 1 << 17});
  auto done = link->onDisconnect();
  return done.attach(kj::mv(link));
}

}  // namespace

OwnerListener::OwnerListener(kj::AsyncIoContext& io, Supervisor& sup) : io_(io), sup_(sup), tasks_(*this) {}

void OwnerListener::taskFailed(kj::Exception&& e) { spdlog::warn("owner socket: {}", e.getDescription().cStr()); }

void OwnerListener::listen(const std::string& path) {
  receiver_ = listenUnixSocket(*io_.lowLevelProvider, path);
  tasks_.add(acceptLoop());
}

kj::Promise<void> OwnerListener::acceptLoop() {
  return receiver_->accept().then([this](kj::Own<kj::AsyncIoStream>&& conn) {
    KJ_IF_MAYBE(fd, conn->getFd()) {
      PeerVerdict verdict = checkPeer(*fd);
      if (verdict.allowed) {
        int mine = fcntl(*fd, F_DUPFD_CLOEXEC, 3);
        if (mine >= 0) tasks_.add(serve(*io_.lowLevelProvider, mine, sup_));
      } else {
        spdlog::warn("owner socket: refused a connection: {}", verdict.reason);
      }
    }
    return acceptLoop();
  });
}

}  // namespace pine
