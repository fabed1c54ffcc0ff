#include "broker/telegram/channels.h"

#include "common/log.h"

namespace pine::telegram {

void Channels::update() {
  std::map<std::string, const config::Source*> wanted;
  if (parts_.config)
    for (const auto& s : parts_.config->pine.sources)
      if (s.type == "telegram") wanted[s.name] = &s;
  for (auto it = channels_.begin(); it != channels_.end();) {
    auto w = wanted.find(it->first);
    if (w == wanted.end() || tokenNames_[it->first] != w->second->tokenSecret + " " + w->second->baseUrl) {
      spdlog::info("telegram {}: stopped", it->first);
      tokenNames_.erase(it->first);
      it = channels_.erase(it);
    } else {
      it->second->reconfigure(*w->second);
      ++it;
    }
  }
  for (auto& [name, s] : wanted) {
    if (channels_.count(name)) continue;
    auto c = std::make_unique<Channel>(parts_, *s, timing_);
    c->start();
    tokenNames_[name] = s->tokenSecret + " " + s->baseUrl;
    channels_[name] = std::move(c);
    spdlog::info("telegram {}: started", name);
  }
}

nlohmann::json Channels::status() const {
  nlohmann::json list = nlohmann::json::array();
  for (auto& [name, c] : channels_) list.push_back(c->status());
  return list;
}

void Channels::accountDecided(const store::PairingRow& row) {
  for (auto& [name, c] : channels_) c->accountDecided(row);
}

void Channels::notice(const std::string& kind, const std::string& text) {
  for (auto& [name, c] : channels_) c->notice(kind, text);
}

}  // namespace pine::telegram
