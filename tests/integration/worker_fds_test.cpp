// The real pine-worker, started as pined starts it, holding nothing a program it runs could inherit.
#include <doctest/doctest.h>
#include <dirent.h>
#include <kj/async-io.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "common/rpc_link.h"
#include "proto/broker.capnp.h"
#include "supervisor/spawn.h"
#include "tests/integration/harness.h"
#include "common/cloexec.h"

using namespace pine;

namespace {

// A broker that never answers getTask, so the worker waits with its fds open for us to inspect.
class SilentBroker final : public proto::Broker::Server {
 public:
  kj::Own<kj::PromiseFulfiller<void>> asked;
  explicit SilentBroker(kj::Own<kj::PromiseFulfiller<void>> a) : asked(kj::mv(a)) {}

 protected:
  kj::Promise<void> getTask(GetTaskContext) override {
    asked->fulfill();
    return kj::NEVER_DONE;
  }
};

unsigned long fdFlags(pid_t pid, const std::string& fd) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/fdinfo/" + fd);
  std::string key;
  unsigned long value = 0;
  while (in >> key) {
    if (key == "flags:") {
      in >> std::oct >> value;
      return value;
    }
  }
  return 0;
}

}  // namespace

TEST_CASE("every descriptor of a worker above stderr is close-on-exec, its broker link included") {
  auto io = kj::setupAsyncIo();
  int sv[2];
  REQUIRE(pine::socketpairCloexec(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  SpawnSpec spec;
  spec.program = test::binDir() + "/pine-worker";
  spec.args = {spec.program, "--task", "t1", "--agent", "main"};
  spec.env = {"PATH=/usr/bin:/bin"};
  spec.fd3 = sv[1];
  pid_t pid = spawnChild(spec);
  close(sv[1]);
  auto paf = kj::newPromiseAndFulfiller<void>();
  RpcLink link(wrapSocket(*io.lowLevelProvider, sv[0]), capnp::rpc::twoparty::Side::SERVER,
               kj::heap<SilentBroker>(kj::mv(paf.fulfiller)), LinkLimits{0, 1 << 20});
  paf.promise.wait(io.waitScope);  // the worker is up and has asked for its task

  DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  REQUIRE(d);
  int checked = 0;
  while (auto* e = readdir(d)) {
    std::string fd = e->d_name;
    if (fd == "." || fd == ".." || fd == "0" || fd == "1" || fd == "2") continue;
    CAPTURE(fd);
    CHECK((fdFlags(pid, fd) & 02000000) != 0);  // O_CLOEXEC
    ++checked;
  }
  closedir(d);
  CHECK(checked >= 1);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}
