// The Broker capability a worker gets, driven in-process over a real socketpair.
#include <doctest/doctest.h>
#include <kj/async-io.h>
#include <sys/socket.h>

#include "broker/worker_link.h"
#include "common/link_stream.h"
#include "common/rpc_link.h"
#include "common/cloexec.h"

using namespace pine;

namespace {

struct Fixture {
  kj::AsyncIoContext io = kj::setupAsyncIo();
  kj::Own<RpcLink> brokerSide, workerSide;
  kj::Promise<WorkerOutcome> outcome = nullptr;
  proto::Broker::Client broker = nullptr;

  Fixture() {
    int sv[2];
    REQUIRE(pine::socketpairCloexec(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    auto paf = kj::newPromiseAndFulfiller<WorkerOutcome>();
    outcome = kj::mv(paf.promise);
    // As broker.cpp and worker/main.cpp make them.
    brokerSide = kj::heap<RpcLink>(wrapLinkSocket(io.unixEventPort, sv[0]),
                                   capnp::rpc::twoparty::Side::SERVER,
                                   kj::heap<WorkerBroker>(TaskForWorker{"t1", "main", "do it", "none"},
                                                          kj::mv(paf.fulfiller)),
                                   512 * 1024);
    workerSide = kj::heap<RpcLink>(wrapLinkSocket(io.unixEventPort, sv[1]),
                                   capnp::rpc::twoparty::Side::CLIENT, nullptr,
                                   1 << 24);  // a hostile worker sends what it likes
    broker = workerSide->peer().castAs<proto::Broker>();
  }
};

}  // namespace

TEST_CASE("a worker gets its own task, and its first answer ends it") {
  Fixture f;
  auto task = f.broker.getTaskRequest().send().wait(f.io.waitScope);
  CHECK(std::string(task.getTask().getId().cStr()) == "t1");
  CHECK(std::string(task.getTask().getText().cStr()) == "do it");
  f.broker.pingRequest().send().wait(f.io.waitScope);
  auto req = f.broker.finishRequest();
  req.setAnswer("done: ✓");
  req.send().wait(f.io.waitScope);
  auto out = f.outcome.wait(f.io.waitScope);
  CHECK(out.done);
  CHECK(out.text == "done: ✓");
  // A second answer is refused: the first word stands.
  auto again = f.broker.failRequest();
  again.setReason("changed my mind");
  CHECK_THROWS(again.send().wait(f.io.waitScope));
}

TEST_CASE("an answer over 1 MiB fails the task and is refused") {
  Fixture f;
  auto req = f.broker.finishRequest();
  req.setAnswer(std::string(kMaxAnswerBytes + 1, 'a'));
  CHECK_THROWS(req.send().wait(f.io.waitScope));
  auto out = f.outcome.wait(f.io.waitScope);
  CHECK_FALSE(out.done);
  CHECK(out.text.find("1 MiB") != std::string::npos);
}

TEST_CASE("an answer that is not UTF-8 fails the task") {
  Fixture f;
  auto req = f.broker.finishRequest();
  req.setAnswer(std::string("ok \xc0\xaf overlong slash"));
  CHECK_THROWS(req.send().wait(f.io.waitScope));
  CHECK_FALSE(f.outcome.wait(f.io.waitScope).done);
}

TEST_CASE("a message larger than the link's limit breaks the link instead of being read") {
  Fixture f;
  auto req = f.broker.failRequest();
  req.setReason(std::string(8 << 20, 'x'));  // 8 MiB: over the broker's 4 MiB limit for worker links
  CHECK_THROWS(req.send().wait(f.io.waitScope));
}

TEST_CASE("isValidUtf8 accepts text and refuses malformed sequences") {
  CHECK(isValidUtf8("plain"));
  CHECK(isValidUtf8("grüße 日本 🌲"));
  CHECK_FALSE(isValidUtf8("\xff"));
  CHECK_FALSE(isValidUtf8("\xe2\x82"));          // truncated
  CHECK_FALSE(isValidUtf8("\xed\xa0\x80"));      // surrogate
  CHECK_FALSE(isValidUtf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  CHECK_FALSE(isValidUtf8("\xc1\xbf"));          // overlong
}
