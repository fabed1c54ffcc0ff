#include "broker/sources/mqtt_link.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "broker/policy/topics.h"
#include "broker/sources/payload.h"
#include "common/log.h"
#include "common/sha256_hex.h"

namespace pine::sources {
namespace {

constexpr int64_t kStableMs = 60 * 1000;
// The memory's key for the server the digests were heard from: no topic a message can carry
// ('#' is a wildcard, never part of a published topic).
constexpr const char* kServerKey = "#server";

// A topic from outside, printable in a log line whatever bytes it holds.
std::string printable(std::string_view s) {
  return nlohmann::json(std::string(s.substr(0, 300))).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string text(capnp::Text::Reader t) { return std::string(t.cStr(), t.size()); }

class Events final : public proto::mqtt::MqttEvents::Server {
 public:
  explicit Events(MqttLink& link) : link_(link) {}

 protected:
  kj::Promise<void> messages(MessagesContext context) override {
    // Ends once every message of the batch is committed (or dropped by rule): the connector
    // acknowledges them to the MQTT server only then, and sends no next batch before.
    auto list = context.getParams().getMessages();
    auto committed = kj::heapArrayBuilder<kj::Promise<void>>(list.size());
    for (auto m : list) {
      auto payload = m.getPayload();
      committed.add(link_.heard(text(m.getTopic()),
                                std::string(reinterpret_cast<const char*>(payload.begin()), payload.size()),
                                m.getRetained()));
    }
    return kj::joinPromises(committed.finish());
  }
  kj::Promise<void> status(StatusContext context) override {
    auto p = context.getParams();
    link_.status(p.getConnected(), p.getRefused(), text(p.getText()).substr(0, 2000));
    return kj::READY_NOW;
  }

 private:
  MqttLink& link_;
};

}  // namespace

MqttLink::MqttLink(kj::AsyncIoContext& io, config::Source source, Sink& sink, OpenConnector& open, Backoff backoff,
                   std::shared_ptr<SourceMemory> memory)
    : io_(io), source_(std::move(source)), sink_(sink), open_(open), backoff_(backoff) {
  if (memory) {
    last_ = std::make_shared<LastHeard>();
    last_->memory = std::move(memory);
    auto kept = last_->memory->recall(source_.name);
    auto server = kept.find(kServerKey);
    if (server == kept.end() || server->second != source_.url) {
      // Another server's topics are other topics.
      kept.clear();
      try {
        last_->memory->forgetAll(source_.name);
        last_->memory->remember(source_.name, kServerKey, source_.url);
      } catch (const std::exception& e) {
        spdlog::warn("source '{}': could not note its server in its memory: {}", source_.name, e.what());
      }
    }
    for (auto& [topic, digest] : kept)
      if (topic != kServerKey && last_->digests.size() < kMaxTopicsFollowed) last_->digests[topic] = digest;
    saving_ = saveLoop().eagerlyEvaluate(nullptr);
  }
  running_ = start().eagerlyEvaluate([this](kj::Exception&& e) {
    spdlog::error("source '{}': stopped: {}", source_.name, describeRemote(e));
  });
}

MqttLink::~MqttLink() {
  saving_ = nullptr;
  saveDigests();  // what was committed since the last save
  // The connector ends when its socket closes: cancel first, then drop the link.
  running_ = nullptr;
  session_ = nullptr;
  link_ = nullptr;
}

kj::Promise<void> MqttLink::start() {
  state_ = State::Starting;
  auto began = io_.provider->getTimer().now();
  return kj::evalNow([this]() { return open_(source_); })
      .then(
          [this, began](kj::Own<kj::AsyncCapabilityStream> stream) -> kj::Promise<void> {
            // The broker is the more privileged end; a batch of messages is at most 2 MiB.
            auto link = kj::heap<RpcLink>(kj::mv(stream), capnp::rpc::twoparty::Side::SERVER, kj::heap<Events>(*this),
                                          LinkLimits{0, proto::mqtt::MAX_LINK_MESSAGE_BYTES / sizeof(capnp::word)});
            session_ = link->peer().castAs<proto::mqtt::MqttSession>();
            auto ended = link->onDisconnect();
            link_ = kj::mv(link);
            return ended.then([this, began]() {
              if ((io_.provider->getTimer().now() - began) / kj::MILLISECONDS >= kStableMs) failures_ = 0;
              return again(state_ == State::Refused ? reason_ : "its MQTT connector (pine-mqtt) ended");
            });
          },
          [this](kj::Exception&& e) { return again(describeRemote(e)); });
}

kj::Promise<void> MqttLink::again(std::string why) {
  session_ = nullptr;
  link_ = nullptr;
  unsigned long long wait = backoff_.minMs;
  for (unsigned i = 0; i < failures_ && wait < backoff_.maxMs; ++i) wait *= 2;
  wait = std::min<unsigned long long>(wait, backoff_.maxMs);
  ++failures_;
  if (state_ != State::Refused) state_ = State::Down;
  reason_ = why;
  std::string line = fmt::format("source '{}': {}; starting it again in {:.1f} s", source_.name, why, wait / 1000.0);
  // The same reason again and again (a secret not set, say) is said once, not on every try.
  if (why != lastLogged_) spdlog::warn("{}", line);
  lastLogged_ = why;
  return io_.provider->getTimer().afterDelay(wait * kj::MILLISECONDS).then([this]() { return start(); });
}

bool MqttLink::running() const {
  return state_ == State::Starting || state_ == State::Connected || (state_ == State::Away && everConnected_);
}

bool MqttLink::starting() const { return state_ == State::Starting; }

void MqttLink::status(bool connected, bool refused, std::string text) {
  if (refused) {
    state_ = State::Refused;
    reason_ = text;
    spdlog::warn("{}", text);
    return;
  }
  if (connected) {
    if (state_ != State::Connected) {
      spdlog::info("{}", text);
    } else if (int64_t now = nowMs(); now - noteLoggedMs_ < 10000) {
      ++notesUnlogged_;  // a sender that keeps sending oversized messages must not flood the log
    } else {
      // A note while connected: a subscription refused, messages dropped.
      if (notesUnlogged_ == 0) spdlog::warn("{}", text);
      else spdlog::warn("{} ({} more such note(s) in the last seconds)", text, notesUnlogged_);
      notesUnlogged_ = 0;
      noteLoggedMs_ = now;
    }
    state_ = State::Connected;
    everConnected_ = true;
    reason_.clear();
    lastLogged_.clear();
    return;
  }
  state_ = State::Away;
  reason_ = text;
  spdlog::warn("{}", text);
}

void MqttLink::dropped(const std::string& why) {
  // A sender that keeps sending what is dropped must not flood the log: the first drop, then a
  // count at most every 10 s.
  int64_t now = nowMs();
  if (now - droppedLoggedMs_ < 10000) {
    ++droppedUnlogged_;
    return;
  }
  if (droppedUnlogged_ == 0) spdlog::warn("source '{}': dropped a message {}", source_.name, why);
  else
    spdlog::warn("source '{}': dropped {} more message(s) in the last seconds; the last: {}", source_.name,
                 droppedUnlogged_ + 1, why);
  droppedUnlogged_ = 0;
  droppedLoggedMs_ = now;
}

kj::Promise<void> MqttLink::saveLoop() {
  return io_.provider->getTimer().afterDelay(kSaveEvery).then([this]() {
    saveDigests();
    return saveLoop();
  });
}

void MqttLink::saveDigests() {
  if (!last_ || last_->unsaved.empty()) return;
  try {
    last_->memory->rememberAll(source_.name, last_->unsaved);
  } catch (const std::exception& e) {  // a crash now may repeat a retained message once after it
    spdlog::warn("source '{}': could not save the last messages' digests: {}", source_.name, e.what());
  }
  last_->unsaved.clear();
}

kj::Promise<void> MqttLink::heard(std::string topic, std::string payload, bool retained) {
  // A stranger's topic must not land in pine's own topic space (approval/, agent/, ...).
  if (auto why = policy::validateTopic(topic)) {
    dropped("on " + printable(topic) + ": " + *why);
    return kj::READY_NOW;
  }
  // Only what the source subscribes to: a server may still hold another subscription of this
  // client id (an older pine's, say).
  if (std::none_of(source_.topics.begin(), source_.topics.end(),
                   [&](const std::string& p) { return policy::topicMatches(p, topic); })) {
    dropped("on " + printable(topic) + ": not one of the source's topics");
    return kj::READY_NOW;
  }
  if (policy::isReservedTopic(topic)) {
    dropped("on " + printable(topic) + ": that is pine's own topic space (agent/, approval/, pine/, state/, timer/)");
    return kj::READY_NOW;
  }
  // Every message's digest is noted (a retained value also arrives with its flag off: published
  // while subscribed, or queued while pine was away), and a retained one equal to the last
  // message on its topic is a repeat. Noted when heard, so that a repeat in the same batch is
  // caught too; taken back if the commit fails (the server sends both again).
  std::string digest;
  if (last_) {
    digest = sha256Hex(payload);
    auto at = last_->digests.find(topic);
    if (retained && at != last_->digests.end() && at->second == digest) {
      if (repeats_++ == 0)
        spdlog::info("source '{}': a retained message the same as the last one on its topic is not delivered again "
                     "(the server sends it at every subscription); such repeats are not logged",
                     source_.name);
      return kj::READY_NOW;
    }
  }
  auto json = payloadToJson(payload);
  if (!json) {
    dropped(fmt::format("of {} bytes on {}: more than the {} bytes an event may carry", payload.size(), printable(topic),
                        kMaxPayloadBytes));
    return kj::READY_NOW;
  }
  if (!digest.empty()) {
    auto at = last_->digests.find(topic);
    if (at != last_->digests.end()) at->second = digest;
    else if (last_->digests.size() < kMaxTopicsFollowed) last_->digests.emplace(topic, digest);
    else digest.clear();  // past the cap: not followed
  }
  // Kept by the Draft's callback: fulfilled once committed; a callback dropped uncalled (the
  // commit failed) rejects, so the connector does not acknowledge the batch.
  struct Commit {
    explicit Commit(kj::Own<kj::PromiseFulfiller<void>> f) : fulfiller(kj::mv(f)) {}
    kj::Own<kj::PromiseFulfiller<void>> fulfiller;
    std::function<void()> failed;
    ~Commit() {
      if (!fulfiller->isWaiting()) return;
      fulfiller->reject(KJ_EXCEPTION(FAILED, "the event was not committed"));
      if (failed) failed();
    }
  };
  auto paf = kj::newPromiseAndFulfiller<void>();
  auto commit = std::make_shared<Commit>(kj::mv(paf.fulfiller));
  // Committed: saved with the next save (saveDigests). Not committed: not heard after all.
  std::function<void()> committed;
  if (!digest.empty()) {
    committed = [last = last_, topic, digest]() { last->unsaved[topic] = digest; };
    commit->failed = [last = last_, topic, digest]() {
      auto at = last->digests.find(topic);
      if (at != last->digests.end() && at->second == digest) last->digests.erase(at);
    };
  }
  Draft d{source_.name, std::move(topic), config::enumName(source_.trust), std::move(*json),
          [commit, committed = std::move(committed)]() {
            if (committed) committed();
            commit->fulfiller->fulfill();
          }};
  commit = nullptr;  // the Draft's callback holds it now
  try {
    sink_(std::move(d));
  } catch (const std::exception& e) {
    spdlog::error("source '{}': the broker did not take a message: {}", source_.name, e.what());
  } catch (const kj::Exception& e) {
    spdlog::error("source '{}': the broker did not take a message: {}", source_.name, e.getDescription().cStr());
  }
  return kj::mv(paf.promise);
}

kj::Promise<std::optional<std::string>> MqttLink::publish(const std::string& topic, const std::string& payload) {
  KJ_IF_MAYBE(session, session_) {
    auto req = session->publishRequest();
    req.setTopic(topic);
    req.setPayload(kj::arrayPtr(reinterpret_cast<const kj::byte*>(payload.data()), payload.size()));
    return req.send().then(
        [](auto r) -> std::optional<std::string> {
          if (r.getError().size() == 0) return std::nullopt;
          return text(r.getError());
        },
        [this](kj::Exception&& e) -> std::optional<std::string> {
          return "source '" + source_.name + "': its MQTT connector did not answer: " + describeRemote(e);
        });
  }
  return std::optional<std::string>("source '" + source_.name + "': its MQTT connector is not running right now (" +
                                    (reason_.empty() ? "starting" : reason_) + "); nothing was sent, try again later");
}

}  // namespace pine::sources
