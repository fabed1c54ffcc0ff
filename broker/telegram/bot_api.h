// Calls of Telegram's Bot API for one telegram source, made by pined (proto/supervisor.capnp
// `telegram`, `telegramFile`): the broker names the source and the method, pined adds the
// address and the token. What comes back is Telegram's envelope ({"ok", "result"} or
// {"ok": false, "error_code", "description", "parameters": {"retry_after"}}) read here.
#pragma once
#include <kj/async.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "proto/supervisor.capnp.h"

namespace pine::telegram {

struct BotReply {
  bool ok = false;
  nlohmann::json result;
  int errorCode = 0;            // Telegram's error_code, else the HTTP status; 0: no answer at all
  std::string description;      // Telegram's words, or why there was no answer
  std::optional<int> retryAfter;  // 429: seconds to wait

  bool tokenRefused() const { return errorCode == 401 || errorCode == 404; }
};

class BotApi {
 public:
  BotApi(proto::Supervisor::Client supervisor, std::string source)
      : supervisor_(kj::mv(supervisor)), source_(std::move(source)) {}

  kj::Promise<BotReply> call(const std::string& method, const nlohmann::json& params);
  // The bytes of a file getFile named, at most the source's maxFileMb (pined enforces it).
  kj::Promise<std::pair<BotReply, std::string>> file(const std::string& filePath);

 private:
  proto::Supervisor::Client supervisor_;
  std::string source_;
};

// Reads the envelope of an answer (status and body as pined relayed them).
BotReply readReply(int status, const std::string& body, const std::string& transportError);

}  // namespace pine::telegram
