// What a source hands to the broker for each message it received.
#pragma once
#include <functional>
#include <string>

namespace pine::sources {

struct Draft {
  std::string source;   // the source's name
  std::string topic;    // the MQTT topic, as received
  std::string trust;    // "owner" only for a source marked trust: owner, else "untrusted"
  std::string payload;  // JSON text
  // Called once the event is committed (a folder source remembers a file only then); may be empty.
  std::function<void()> committed;
};

// Called on the broker's event-loop thread, never on a client's own thread.
using Sink = std::function<void(Draft)>;

}  // namespace pine::sources
