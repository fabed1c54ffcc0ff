// A fake Telegram Bot API server on loopback for the telegram client tests. It speaks
// plain HTTP/1.1 on 127.0.0.1 (an ephemeral port), one thread per connection, and keeps
// the state a real bot sees: a queue of updates handed out by long-polled getUpdates, the
// messages the bot sent (edits applied), pending callback queries, downloadable files.
// Answers have the real wire shapes ({"ok":true,"result":...} or {"ok":false,
// "error_code":N,"description":"...","parameters":{...}}), including the real
// error descriptions for the cases it checks. Tests inject updates and scripted failures,
// and observe every call.
//
// Predicates given to the wait helpers run under the fake's lock: they must not call
// back into the fake.
#pragma once
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace pine::telegram::test {

struct User {
  int64_t id = 0;
  std::string firstName, lastName, username;
};

// By convention a private chat's id is the user's id; groups have negative ids and type
// "group" or "supergroup" (with a title).
struct Chat {
  int64_t id = 0;
  std::string type = "private";
  std::string title;
};

// One request that reached a Bot API method (the token was right; scripted failures and
// dropped connections are recorded too). A call is recorded once the fake has acted on it
// (a sent message is stored by then), except getUpdates, recorded when it starts so a
// held poll is visible; its status is filled in when it answers.
struct Call {
  std::string method;      // canonical spelling, e.g. "sendMessage"
  nlohmann::json params;   // an object; normalized to JSON types whatever the encoding
  std::chrono::steady_clock::time_point time;
  std::string encoding;    // "json", "form" or "query" (where the parameters came from)
  int status = 0;          // the HTTP status answered; 0 when the connection was dropped
};

struct InjectedCallback {
  int64_t updateId = 0;
  std::string queryId;
};

class FakeBotApi {
 public:
  // The bot's id is the token's numeric prefix ("123:abc" → 123) when it has one.
  explicit FakeBotApi(std::string token);
  ~FakeBotApi();
  FakeBotApi(const FakeBotApi&) = delete;
  FakeBotApi& operator=(const FakeBotApi&) = delete;

  std::string baseUrl() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::string& token() const { return token_; }
  User bot() const { return bot_; }

  // Every call answers 401 Unauthorized while revoked.
  void setTokenRevoked(bool revoked);

  // The next call of `method` fails with this status. An empty description picks the real
  // one for the status ("Too Many Requests: retry after N" with retryAfter, "Bad Gateway"
  // for 502, ...). retryAfter adds "parameters":{"retry_after":N} and a Retry-After header.
  // Several may be queued per method; they are used in order.
  void failNext(std::string method, int status, std::string description,
                std::optional<int> retryAfter = std::nullopt);
  // The next call of `method` is read, recorded, and its connection closed unanswered.
  void dropNextConnection(std::string method);

  // Updates the bot will receive; each returns the update_id.
  int64_t addTextMessage(const User& from, const Chat& chat, std::string text);
  int64_t addForwardedMessage(const User& from, const Chat& chat, std::string text,
                              const User& originalSender);
  // A press of an inline button on message `messageId` of `chat` (one the bot sent, or a
  // bare stand-in when unknown). The query id is valid for one answerCallbackQuery.
  InjectedCallback addCallbackQuery(const User& from, const Chat& chat, int64_t messageId,
                                    std::string data);
  // Two PhotoSizes, largest last: a thumbnail at most 90 px a side (served as the first
  // 4 KiB of the bytes) and width x height (all of them). Both are registered files.
  int64_t addPhoto(const User& from, const Chat& chat, std::string caption, std::string bytes,
                   int width = 1280, int height = 960);
  int64_t addDocument(const User& from, const Chat& chat, std::string caption,
                      std::string fileName, std::string mimeType, std::string bytes);
  int64_t addVoice(const User& from, const Chat& chat, std::string bytes, int duration);
  // Anything else, as the raw Update object; an update_id is assigned when missing.
  int64_t addUpdate(nlohmann::json rawUpdate);

  // A file getFile knows and /file/bot<TOKEN>/<file_path> serves; returns its file_id.
  // An empty path gets "documents/file_N".
  std::string addFile(std::string bytes, std::string filePath = {});
  // Makes a chat known without an update (sendMessage works to unknown chats too; a known
  // chat's Message carries its full Chat object).
  void addChat(const Chat& chat, const User& privatePeer = {});

  // Observation (thread-safe).
  std::vector<Call> calls() const;
  std::vector<Call> callsOf(const std::string& method) const;
  // What the bot sent to the chat and still stands: Message objects, edits applied.
  std::vector<nlohmann::json> sent(int64_t chatId) const;
  // True once any call of `method` so far (earlier ones included) satisfies pred (an empty
  // pred accepts any); false after the timeout.
  bool waitForCall(const std::string& method, std::function<bool(const nlohmann::json& params)> pred,
                   std::chrono::milliseconds timeout) const;
  // The first message in sent(chatId) satisfying pred (empty: any), waiting for sends and
  // edits until the timeout.
  std::optional<nlohmann::json> waitForMessage(int64_t chatId,
                                               std::function<bool(const nlohmann::json& msg)> pred,
                                               std::chrono::milliseconds timeout) const;
  int64_t pendingUpdates() const;  // queued and not yet confirmed by an offset
  int64_t confirmedUpTo() const;   // the highest offset a getUpdates confirmed (0: none)
  int activePolls() const;         // getUpdates requests being answered or held right now
  // The allowed_updates list the last getUpdates carrying one gave (it persists, as on the
  // real server); nullopt before any did.
  std::optional<nlohmann::json> allowedUpdates() const;

 private:
  struct Request;
  struct Response;
  struct StoredMessage {
    nlohmann::json message;
    bool fromBot = false;
  };
  struct Failure {
    int status;
    std::string description;
    std::optional<int> retryAfter;
  };
  struct File {
    std::string fileId, fileUniqueId, filePath, bytes;
  };
  struct Connection {
    std::thread thread;
    std::atomic<bool> done{false};
  };
  struct ChatInfo {
    Chat chat;
    User peer;
  };

  void acceptLoop();
  void serveConnection(int fd);
  std::optional<Response> handle(const Request& req, int fd);
  Response dispatch(Call& call, int fd);
  Response serveFile(const std::string& filePath);

  Response getUpdates(Call& call, int fd);
  Response sendMessage(const nlohmann::json& params);
  Response editMessageText(const nlohmann::json& params);
  Response editMessageReplyMarkup(const nlohmann::json& params);
  Response deleteMessage(const nlohmann::json& params);
  Response answerCallbackQuery(const nlohmann::json& params);
  Response sendChatAction(const nlohmann::json& params);
  Response getFile(const nlohmann::json& params);
  Response deleteWebhook(const nlohmann::json& params);

  // Under mu_.
  int64_t queueUpdateLocked(nlohmann::json update);
  nlohmann::json incomingMessageLocked(const User& from, const Chat& chat);
  nlohmann::json chatJsonLocked(int64_t chatId) const;
  int64_t nextMessageIdLocked(int64_t chatId);
  File& registerFileLocked(std::string bytes, std::string filePath);
  int64_t queueMessageLocked(nlohmann::json message);
  void rememberChatLocked(const Chat& chat, const User& peer);
  void pruneDisallowedLocked();
  std::size_t recordLocked(const Call& call);
  bool updateReadyLocked(int64_t offset) const;
  void confirmLocked(int64_t offset);
  StoredMessage* findMessageLocked(int64_t chatId, int64_t messageId);

  const std::string token_;
  User bot_;
  int listenFd_ = -1;
  int wakePipe_[2] = {-1, -1};  // written once at shutdown; every poll() also watches [0]
  int port_ = 0;
  std::atomic<bool> stop_{false};

  mutable std::mutex mu_;
  mutable std::condition_variable changed_;  // any state change: updates, calls, messages
  bool revoked_ = false;
  std::map<std::string, std::deque<Failure>> failures_;
  std::map<std::string, int> drops_;
  std::map<int64_t, nlohmann::json> updates_;  // pending, by update_id
  int64_t nextUpdateId_ = 1000;
  int64_t confirmedUpTo_ = 0;
  int activePolls_ = 0;
  int pollFd_ = -1;          // the connection of the poll being held
  bool pollKicked_ = false;  // its client was found gone: end it now
  std::optional<nlohmann::json> allowedUpdates_;
  std::map<int64_t, ChatInfo> chats_;
  std::map<int64_t, int64_t> nextMessageId_;
  std::map<int64_t, std::map<int64_t, StoredMessage>> messages_;  // chat → id → message
  std::set<std::string> openQueries_;
  int64_t nextQueryId_ = 1;
  std::map<std::string, File> filesById_;
  std::map<std::string, std::string> fileIdByPath_;
  int64_t nextFileNo_ = 1;
  std::vector<Call> calls_;

  std::mutex connMu_;
  std::list<Connection> connections_;
  std::thread acceptThread_;
};

}  // namespace pine::telegram::test
