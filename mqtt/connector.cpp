#include "mqtt/connector.h"

#include <capnp/serialize-async.h>
#include <kj/async-io.h>
#include <kj/debug.h>
#include <openssl/crypto.h>

#include <cstdio>
#include <string>

#include "common/rpc_link.h"
#include "mqtt/payload_redaction.h"
#include "mqtt/session.h"
#include "proto/mqtt.capnp.h"
#include "redact/redactor.h"

namespace pine::mqtt {
namespace {

constexpr uint64_t kMaxJobWords = (8u << 20) / sizeof(capnp::word);  // a CA bundle of a few MiB at most

std::string text(capnp::Text::Reader t) { return std::string(t.cStr(), t.size()); }

JobSpec readJob(proto::mqtt::MqttJob::Reader r) {
  JobSpec j;
  j.source = text(r.getSource());
  j.address.host = text(r.getHost());
  j.address.port = r.getPort();
  j.address.tls = r.getTls();
  j.clientId = text(r.getClientId());
  for (auto t : r.getTopics()) j.topics.push_back(text(t));
  for (auto t : r.getPublish()) j.publish.push_back(text(t));
  for (auto t : r.getUnsubscribe()) j.unsubscribe.push_back(text(t));
  j.qos = r.getQos() > 2 ? 1 : r.getQos();
  j.keepaliveSec = r.getKeepaliveSec() < 5 ? 60 : r.getKeepaliveSec();
  j.username = text(r.getUsername());
  j.password = text(r.getPassword());
  auto ca = r.getCaBundle();
  j.caPem.assign(reinterpret_cast<const char*>(ca.begin()), ca.size());
  j.reconnectMinMs = r.getReconnectMinMs() ? r.getReconnectMinMs() : 1000;
  j.reconnectMaxMs = std::max(r.getReconnectMaxMs(), j.reconnectMinMs);
  return j;
}

// What the broker may ask of the session: publish, on the job's list only.
class SessionServer final : public proto::mqtt::MqttSession::Server {
 public:
  explicit SessionServer(Session& s) : session_(s) {}

 protected:
  kj::Promise<void> publish(PublishContext context) override {
    auto p = context.getParams();
    auto payload = p.getPayload();
    auto why = session_.publish(text(p.getTopic()),
                                std::string(reinterpret_cast<const char*>(payload.begin()), payload.size()));
    context.getResults().setError(why.value_or(""));
    return kj::READY_NOW;
  }

 private:
  Session& session_;
};

// Hands what the session heard to the broker: its state changes, and each batch of messages,
// whose answer (committed or not) goes back to the session thread waiting to acknowledge them.
// `known`: the login's values, and secret-shaped strings, as pine-egress redacts what comes back.
// A device that echoes them (its configuration, say) must not put them into events: known values
// are redacted from events, and this process is the only one that knows these.
kj::Promise<void> pump(Handoff& handoff, proto::mqtt::MqttEvents::Client& events, const redact::Redactor& known) {
  return handoff.next().then([&handoff, &events, &known](Taken taken) {
    kj::Promise<void> chain = kj::READY_NOW;
    for (auto& note : taken.notes) {
      // A note may repeat what a device chose (a dropped message's topic): redacted like messages.
      if (!known.find(note.text).empty()) note.text = known.redact(note.text);
      chain = chain.then([&events, note = std::move(note)]() {
        auto req = events.statusRequest();
        req.setConnected(note.connected);
        req.setRefused(note.refused);
        req.setText(note.text);
        return req.send().ignoreResult();
      });
    }
    if (taken.batch) {
      chain = chain.then([&handoff, &events, &known, batch = std::move(*taken.batch)]() mutable {
        auto req = events.messagesRequest();
        auto list = req.initMessages(static_cast<unsigned>(batch.size()));
        for (size_t i = 0; i < batch.size(); ++i) {
          if (!known.find(batch[i].topic).empty()) batch[i].topic = known.redact(batch[i].topic);
          batch[i].payload = redactedPayload(std::move(batch[i].payload), known);
          list[i].setTopic(batch[i].topic);
          list[i].setRetained(batch[i].retained);
          list[i].setPayload(kj::arrayPtr(reinterpret_cast<const kj::byte*>(batch[i].payload.data()),
                                          batch[i].payload.size()));
        }
        return req.send().then([&handoff](auto&&) { handoff.done(true); },
                               [&handoff](kj::Exception&& e) {
                                 std::fprintf(stderr, "pine-mqtt: the broker did not commit a batch: %s\n",
                                              e.getDescription().cStr());
                                 handoff.done(false);
                               });
      });
    }
    return chain.then([&handoff, &events, &known]() { return pump(handoff, events, known); });
  });
}

}  // namespace

int runConnector(int fd) {
  auto io = kj::setupAsyncIo();
  // KJ runs ready events without looking at the other descriptors until none is left: a peer that
  // never lets its stream run dry (a flooding command, a fast publisher) would starve the rest.
  io.waitScope.setBusyPollInterval(256);
  auto stream = wrapSocket(*io.lowLevelProvider, fd);
  JobSpec job;
  {
    capnp::ReaderOptions options;
    options.traversalLimitInWords = kMaxJobWords;
    kj::Maybe<kj::Own<capnp::MessageReader>> message;
    try {
      message = capnp::tryReadMessage(*stream, options).wait(io.waitScope);
    } catch (kj::Exception& e) {
      std::fprintf(stderr, "pine-mqtt: cannot read the job: %s\n", e.getDescription().cStr());
      return kConnectorNoJob;
    }
    KJ_IF_MAYBE(m, message) {
      try {
        job = readJob((*m)->getRoot<proto::mqtt::MqttJob>());
      } catch (kj::Exception& e) {
        std::fprintf(stderr, "pine-mqtt: the job is not an MqttJob: %s\n", e.getDescription().cStr());
        return kConnectorNoJob;
      }
    } else {
      std::fprintf(stderr, "pine-mqtt: the socket closed before a job came\n");
      return kConnectorNoJob;
    }
  }
  Handoff handoff;
  Session session(job, handoff);
  const redact::Redactor known({job.username, job.password});  // what heard messages must not carry on
  OPENSSL_cleanse(job.password.data(), job.password.size());
  auto cannot = session.start();
  RpcLink link(kj::mv(stream), capnp::rpc::twoparty::Side::CLIENT, kj::heap<SessionServer>(session),
               LinkLimits{0, proto::mqtt::MAX_LINK_MESSAGE_BYTES / sizeof(capnp::word)});
  auto events = link.peer().castAs<proto::mqtt::MqttEvents>();
  if (cannot) {
    // Said to the broker (it lists the source as not running, with this), then done.
    auto req = events.statusRequest();
    req.setRefused(true);
    req.setText(*cannot);
    req.send().ignoreResult().catch_([](kj::Exception&&) {}).wait(io.waitScope);
    return kConnectorCannotRun;
  }
  auto pumping = pump(handoff, events, known).catch_([](kj::Exception&& e) {
    std::fprintf(stderr, "pine-mqtt: the link to the broker broke: %s\n", e.getDescription().cStr());
  });
  link.onDisconnect().exclusiveJoin(kj::mv(pumping)).wait(io.waitScope);
  return kConnectorDone;
}

}  // namespace pine::mqtt
