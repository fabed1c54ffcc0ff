// The broker's side of one mqtt source: its pine-mqtt connector (which pined starts with the
// source's login and CA; the broker holds neither) and the Cap'n Proto link to it. Turns what
// the connector heard into Drafts exactly as the broker always has (topic checked, payload as
// JSON, the source's trust and name), keeps the session's state for `pinectl sources`, and
// starts a connector again, with backoff, when one could not start or ended.
#pragma once
#include <kj/async-io.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "broker/sources/draft.h"
#include "broker/sources/source_memory.h"
#include "common/rpc_link.h"
#include "config/model.h"
#include "proto/mqtt.capnp.h"

namespace pine::sources {

// The broker's end of a new connector's socket for source `s` (pined's openMqtt; tests start
// pine-mqtt themselves), or an exception saying why there is none.
using OpenConnector = std::function<kj::Promise<kj::Own<kj::AsyncCapabilityStream>>(const config::Source& s)>;

struct Backoff {
  unsigned minMs = 1000;   // the first wait before starting a connector again
  unsigned maxMs = 60000;  // it doubles up to this; a connector that ran a minute is forgiven
};

class MqttLink {
 public:
  enum class State { Starting, Connected, Away, Refused, Down };

  // `memory` (may be null: every retained message is delivered) keeps, per topic (at most
  // kMaxTopicsFollowed), the digest of the last message committed on it, saved every kSaveEvery
  // and when the link goes.
  MqttLink(kj::AsyncIoContext& io, config::Source source, Sink& sink, OpenConnector& open, Backoff backoff,
           std::shared_ptr<SourceMemory> memory = nullptr);
  ~MqttLink();
  MqttLink(const MqttLink&) = delete;
  MqttLink& operator=(const MqttLink&) = delete;

  const config::Source& source() const { return source_; }
  State state() const { return state_; }
  const std::string& reason() const { return reason_; }  // why it is not running
  // Starting, connected, or away after it had connected (reconnecting with backoff). Not: its
  // connector could not start or ended, the server refused its login, or it never got through
  // (a TLS certificate it does not trust, say).
  bool running() const;
  bool starting() const;  // its connector not yet connected or failed once
  // Through the connector, which checks the publish list again. Error text or nullopt once the
  // connector handed it to the MQTT server.
  kj::Promise<std::optional<std::string>> publish(const std::string& topic, const std::string& payload);

  // From the connector (MqttEvents.messages, one batch at a time). Resolves once the message is
  // committed, or at once when a rule drops it (said in the log) or it is a repeat; rejects when
  // its commit failed. A retained message is the server's stored one, sent again at every
  // subscription (each reconnect, each restart of pined): when it is the last message heard on
  // its topic, it is a repeat, acknowledged and not delivered again.
  kj::Promise<void> heard(std::string topic, std::string payload, bool retained = false);
  uint64_t repeats() const { return repeats_; }

  static constexpr size_t kMaxTopicsFollowed = 10000;  // topics whose last message's digest is kept (64 bytes each)
  static constexpr kj::Duration kSaveEvery = 5 * kj::SECONDS;
  void status(bool connected, bool refused, std::string text);

 private:
  kj::Promise<void> start();
  kj::Promise<void> saveLoop();
  void saveDigests();
  kj::Promise<void> again(std::string why);
  void dropped(const std::string& why);

  kj::AsyncIoContext& io_;
  config::Source source_;
  Sink& sink_;
  OpenConnector& open_;
  Backoff backoff_;
  unsigned failures_ = 0;
  State state_ = State::Starting;
  std::string reason_;
  std::string lastLogged_;
  bool everConnected_ = false;
  uint64_t droppedUnlogged_ = 0;
  int64_t droppedLoggedMs_ = 0;
  // pine-mqtt's notes while connected (a message over the size cap, a subscription refused): the
  // first, then at most one every 10 s with a count, as for drops.
  uint64_t notesUnlogged_ = 0;
  int64_t noteLoggedMs_ = 0;
  kj::Maybe<kj::Own<RpcLink>> link_;
  kj::Maybe<proto::mqtt::MqttSession::Client> session_;
  // Per topic: the SHA-256 of the last message heard on it (taken back if its commit fails), and
  // those committed since the last save. Shared with commit callbacks, which may run after the
  // link is gone.
  struct LastHeard {
    std::shared_ptr<SourceMemory> memory;
    std::map<std::string, std::string> digests;
    std::map<std::string, std::string> unsaved;
  };
  std::shared_ptr<LastHeard> last_;
  uint64_t repeats_ = 0;
  kj::Promise<void> saving_ = nullptr;
  kj::Promise<void> running_ = nullptr;
};

}  // namespace pine::sources
