// The broker's telegram sources: one Channel each, started with the broker, added, changed
// and stopped as the configuration changes.
#pragma once
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "broker/telegram/channel.h"

namespace pine::telegram {

class Channels {
 public:
  Channels(Channel::Parts parts, Timing timing = {}) : parts_(parts), timing_(timing) {}

  // Starts, changes and stops channels to match the configuration in force.
  void update();
  nlohmann::json status() const;  // a list, one entry per channel
  void accountDecided(const store::PairingRow& row);
  void notice(const std::string& kind, const std::string& text);

 private:
  Channel::Parts parts_;
  Timing timing_;
  std::map<std::string, std::unique_ptr<Channel>> channels_;
  std::map<std::string, std::string> tokenNames_;  // a new token name or address: a fresh channel
};

}  // namespace pine::telegram
