// The real pine-broker against a stand-in for pined that answers the telegram methods itself:
// when pined says the sandbox is degraded (--sandbox-note), the paired chats hear it once per
// start of pined, not again when only the broker restarts, and not when notify turns it off.
// (pined's side, passing the note when its host's facts say degraded or refused, is three lines
// in supervisor.cpp; this machine's sandbox is never degraded.)
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kj/async-io.h>

#include "common/cloexec.h"
#include "common/home.h"
#include "common/rpc_link.h"
#include "proto/supervisor.capnp.h"
#include "supervisor/home_layout.h"
#include "tests/integration/harness.h"

using namespace pine::test;
using nlohmann::json;

namespace {

// What the broker sends to Telegram, answered as Telegram would; getUpdates holds a moment
// and finds nothing.
class PinedStandIn final : public pine::proto::Supervisor::Server {
 public:
  explicit PinedStandIn(kj::Timer& timer) : timer_(timer) {}
  std::vector<json> sent;

 protected:
  kj::Promise<void> ready(ReadyContext) override { return kj::READY_NOW; }
  kj::Promise<void> telegram(TelegramContext context) override {
    auto p = context.getParams();
    std::string method = p.getMethod();
    auto bytes = p.getParams();
    json params = json::parse(std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size()), nullptr, false);
    json answer = {{"ok", true}, {"result", true}};
    kj::Promise<void> wait = kj::READY_NOW;
    if (method == "getUpdates") {
      answer["result"] = json::array();
      wait = timer_.afterDelay(200 * kj::MILLISECONDS);
    } else if (method == "sendMessage") {
      sent.push_back(params);
      answer["result"] = {{"message_id", (int64_t)sent.size()}, {"chat", {{"id", params.value("chat_id", 0LL)}}}};
    }
    auto sink = p.getSink();
    return wait.then([context, sink, answer]() mutable {
      std::string body = answer.dump();
      auto req = sink.writeRequest();
      req.setChunk(kj::arrayPtr(reinterpret_cast<const kj::byte*>(body.data()), body.size()));
      return req.send().then([context]() mutable { context.getResults().setStatus(200); });
    });
  }

 private:
  kj::Timer& timer_;
};

struct BrokerRun {
  pid_t pid = -1;
  kj::Own<pine::RpcLink> link;
  PinedStandIn* pined = nullptr;
};

BrokerRun startBroker(kj::AsyncIoContext& io, const std::string& home, const std::string& bootId) {
  int sv[2];
  REQUIRE(pine::socketpairCloexec(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  BrokerRun run;
  run.pid = fork();
  if (run.pid == 0) {
    dup2(sv[1], 3);
    std::string program = binDir() + "/pine-broker";
    execl(program.c_str(), program.c_str(), "--home", home.c_str(), "--boot-id", bootId.c_str(), "--sandbox-note",
          "the sandbox is degraded: no mount namespace (test)", (char*)nullptr);
    _exit(127);
  }
  close(sv[1]);
  auto standIn = kj::heap<PinedStandIn>(io.provider->getTimer());
  run.pined = standIn.get();
  run.link = kj::heap<pine::RpcLink>(pine::wrapSocket(*io.lowLevelProvider, sv[0]), capnp::rpc::twoparty::Side::SERVER,
                                     kj::mv(standIn), pine::LinkLimits{4, 1 << 20});
  return run;
}

void stopBroker(BrokerRun& run) {
  kill(run.pid, SIGKILL);
  waitpid(run.pid, nullptr, 0);
}

// Turns the event loop until `cond` holds or `ms` pass.
bool turnUntil(kj::AsyncIoContext& io, const std::function<bool()>& cond, int ms) {
  for (int waited = 0; waited < ms; waited += 50) {
    if (cond()) return true;
    io.provider->getTimer().afterDelay(50 * kj::MILLISECONDS).wait(io.waitScope);
  }
  return cond();
}

size_t sandboxNotices(const BrokerRun& run) {
  size_t n = 0;
  for (auto& m : run.pined->sent)
    if (m.value("chat_id", 0LL) == 9001 && m.value("text", "").find("the sandbox is degraded") != std::string::npos) n++;
  return n;
}

void writeTelegramHome(const std::string& home, const std::string& extra) {
  writeMinimalConfig(home, {"main"});
  writeText(home + "/pine.yaml", readText(home + "/pine.yaml") +
                                     "sources:\n  - {name: tg, type: telegram, tokenSecret: TG_TOKEN, allow: [9001]" +
                                     extra + "}\n");
  pine::Home h{home};
  pine::prepareHome(h);
  pine::ensureControlToken(h);
}

}  // namespace

TEST_CASE("telegram: a degraded sandbox is told to the paired chats once per start of pined") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeTelegramHome(home, "");
  auto io = kj::setupAsyncIo();

  auto first = startBroker(io, home, "boot-1");
  CHECK(turnUntil(io, [&] { return sandboxNotices(first) == 1; }, 20000));
  stopBroker(first);
  // The broker alone restarted (same boot): nothing new to tell.
  auto again = startBroker(io, home, "boot-1");
  CHECK_FALSE(turnUntil(io, [&] { return sandboxNotices(again) > 0; }, 1500));
  stopBroker(again);
  // pined started afresh: told again.
  auto fresh = startBroker(io, home, "boot-2");
  CHECK(turnUntil(io, [&] { return sandboxNotices(fresh) == 1; }, 20000));
  stopBroker(fresh);
}

TEST_CASE("telegram: notify.sandboxDegraded: false keeps the sandbox notice out") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeTelegramHome(home, ", notify: {sandboxDegraded: false}");
  auto io = kj::setupAsyncIo();
  auto run = startBroker(io, home, "boot-1");
  // The broker is up and polling (getUpdates answered several times), and has said nothing.
  turnUntil(io, [] { return false; }, 1500);
  CHECK(sandboxNotices(run) == 0);
  CHECK(run.pined->sent.empty());
  stopBroker(run);
}
