// One telegram source: the owner's channel away from the desk. It long-polls Telegram through
// pined (the token stays there and in the egress process), stores each batch of updates with
// the next offset before handling any, and handles them in order: strangers get a pairing code
// or nothing, the paired account's messages become runs of the source's agent in the chat's
// conversation with the answer sent back, its commands act like pinectl's, and its taps on an
// approval's buttons answer it. Approvals, and the notices the source is set to pass on, go to
// the paired chats only: every message leaves through sendTo(), which checks the chat.
#pragma once
#include <kj/async.h>
#include <kj/timer.h>

#include <functional>
#include <map>
#include <set>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "broker/api_backend.h"
#include "broker/feed.h"
#include "broker/run_services.h"
#include "broker/telegram/bot_api.h"
#include "broker/telegram/pairing.h"
#include "broker/telegram/update.h"
#include "config/model.h"

namespace pine::telegram {

struct Timing {
  int pollTimeoutSec = 25;                 // getUpdates' long poll
  kj::Duration firstBackoff = 1 * kj::SECONDS;
  kj::Duration maxBackoff = 60 * kj::SECONDS;
  kj::Duration tokenRefusedWait = 5 * kj::MINUTES;  // a revoked token is retried this seldom
  kj::Duration typingEvery = 4 * kj::SECONDS;       // Telegram shows "typing" for 5 seconds
  kj::Duration sweepEvery = 60 * kj::SECONDS;       // what failed to go out is tried again this often
};

class Channel final : private kj::TaskSet::ErrorHandler {
 public:
  struct Parts {
    RunServices& services;
    ApiBackend& owner;  // /mode, /reset, /stop, /status, /approvals act as pinectl's do
    Feed& feed;
    kj::Timer& timer;
    const std::shared_ptr<const config::Home>& config;
  };
  Channel(Parts parts, config::Source source, Timing timing = {});
  ~Channel() noexcept(false);
  KJ_DISALLOW_COPY(Channel);

  // Polls, follows the feed, and sends what is owed from before a restart.
  void start();
  // The configuration changed (allow, groups, agent, notify); the token's name is pined's.
  void reconfigure(const config::Source& source);
  const std::string& name() const { return source_.name; }
  // For `pinectl status`: {"source", "state", "detail", "lastPollAt"}.
  nlohmann::json status() const;
  // The owner paired or denied an account (pinectl pair): tell a paired one it is heard.
  void accountDecided(const store::PairingRow& row);
  // A notice for the paired chats, when the source passes this kind on.
  void notice(const std::string& kind, const std::string& text);

 private:
  void taskFailed(kj::Exception&& e) override;
  struct NextPoll {
    kj::Duration wait, backoff;
  };
  kj::Promise<void> pollLoop(kj::Duration backoff);
  kj::Promise<NextPoll> pollOnce(kj::Duration backoff);
  kj::Promise<void> sweepLoop();
  void sweep();
  kj::Promise<void> handleInbox();
  kj::Promise<void> handle(const Incoming& in);
  kj::Promise<void> handleMessage(const Incoming& in);
  kj::Promise<void> handleCommand(const Incoming& in, const std::string& agent);
  kj::Promise<void> startRun(const Incoming& in, const std::string& agent);
  struct Received {
    std::string path, kind, data;
  };
  // The files of a message, fetched through pined within the source's maxFileMb; what could not
  // be fetched is said in `notes`.
  kj::Promise<std::vector<Received>> fetchFiles(const Incoming& in, std::shared_ptr<std::string> notes);
  kj::Promise<void> handleCallback(const Incoming& in);
  void awaitAnswer(const std::string& taskId, long long chatId);
  kj::Promise<void> typing(long long chatId, std::shared_ptr<bool> done);
  kj::Promise<void> followFeed(kj::Own<Feed::Subscription> sub);
  void onFeed(const nlohmann::json& item);
  void showApproval(const store::ApprovalRow& row, bool again = false);
  void closeCards(const store::ApprovalRow& row);

  // Every message to a chat goes through here: only a paired or allowed account's chat, or a
  // configured group, whatever asked for it.
  bool mayReceive(long long chatId) const;
  void sendTo(long long chatId, const std::string& markdown, nlohmann::json extra = {},
              std::function<void(long long messageId)> sent = {});
  void sendHtml(long long chatId, const std::string& html, nlohmann::json extra,
                std::function<void(long long messageId)> sent);
  void editCard(long long chatId, long long messageId, const std::string& html, std::function<void(bool edited)> done);
  void enqueue(std::function<kj::Promise<void>()> step);
  kj::Promise<BotReply> callPatiently(const std::string& method, nlohmann::json params, int attempts = 6,
                                      kj::Duration backoff = 0 * kj::SECONDS);
  std::string agentId() const;
  std::string conversation(long long chatId);
  bool heard(const Sender& from, long long chatId, const std::string& chatType);

  Parts p_;
  config::Source source_;
  Timing timing_;
  BotApi api_;
  Pairings pairings_;
  std::string state_ = "starting", detail_;
  long long lastPollMs_ = 0;
  std::map<std::string, long long> running_;  // task -> chat, for /stop
  std::set<std::string> answering_;           // ended tasks whose answer is on its way out
  std::set<std::string> cardsInFlight_;       // refs of cards being sent or edited
  std::set<std::string> showAgain_;           // cards asked for again (/approvals) while in flight
  kj::Own<kj::PromiseFulfiller<void>> wake_;  // cuts the wait after a refused token short
  kj::Promise<void> outbox_ = kj::READY_NOW;
  kj::TaskSet tasks_;
};

}  // namespace pine::telegram
