// The owner's side of Telegram pairing (pinectl pair telegram CODE, pinectl pairings): a code
// names the account that asked, the owner pairs or denies it, and a pairing can be removed.
#include "broker/owner_api.h"
#include "broker/telegram/pairing.h"
#include "common/log.h"

namespace pine {
namespace {

nlohmann::json pairingJson(const store::PairingRow& p) {
  nlohmann::json j = {{"source", p.channel.substr(p.channel.find(':') + 1)},
                      {"userId", p.account},
                      {"name", p.name},
                      {"username", p.username},
                      {"chatId", p.chatId},
                      {"state", p.state}};
  if (p.decidedMs) j["decidedAt"] = isoTime(p.decidedMs);
  if (p.state == "pending") j["expiresAt"] = isoTime(p.expiresMs);
  return j;
}

const char* kNoSuchCode =
    "no pairing code like that is waiting: it may be mistyped, used, or more than 10 minutes old. Write to the bot "
    "again for a new one";

}  // namespace

ApiReply OwnerApi::telegramPairings() {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& s : p_.config->pine.sources) {
    if (s.type != "telegram") continue;
    for (auto& p : p_.store.pairings(telegram::channelOf(s.name)))
      if (p.state != "pending" || p.expiresMs > nowMs()) list.push_back(pairingJson(p));
    for (auto id : s.allow)
      list.push_back({{"source", s.name}, {"userId", std::to_string(id)}, {"state", "allowed"},
                      {"note", "in the source's allow list (pine.yaml)"}});
  }
  return {200, {{"pairings", list}}};
}

ApiReply OwnerApi::telegramCode(const std::string& code) {
  auto row = telegram::findCode(p_.store, code, nowMs());
  if (!row) return apiError(404, kNoSuchCode);
  return {200, pairingJson(*row)};
}

ApiReply OwnerApi::decideTelegramCode(const std::string& code, bool pair) {
  auto row = telegram::decideCode(p_.store, code, pair, nowMs());
  if (!row) return apiError(404, kNoSuchCode);
  audit(pair ? "telegram.paired" : "telegram.denied",
        {{"channel", row->channel}, {"account", row->account}, {"name", row->name}, {"username", row->username}});
  if (p_.accountDecided) p_.accountDecided(*row);
  return {200, pairingJson(*row)};
}

ApiReply OwnerApi::removeTelegramPairing(const std::string& source, const std::string& account) {
  if (!p_.store.removePairing(telegram::channelOf(source), account))
    return apiError(404, "no pairing of account " + account.substr(0, 32) + " on source '" + source.substr(0, 64) +
                             "' (see pinectl pairings)");
  audit("telegram.unpaired", {{"source", source}, {"account", account}});
  return {200, {{"removed", {{"source", source}, {"userId", account}}}}};
}

}  // namespace pine
