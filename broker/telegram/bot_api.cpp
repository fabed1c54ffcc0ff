#include "broker/telegram/bot_api.h"

#include <kj/debug.h>

#include <algorithm>

#include "broker/collect_sink.h"
#include "common/json_depth.h"

namespace pine::telegram {
namespace {

constexpr size_t kMaxAnswer = 64 << 20;  // pined caps files at maxFileMb (50 MiB at most)
constexpr int kMaxDepth = 64;            // Telegram's objects nest a few levels

}  // namespace

BotReply readReply(int status, const std::string& body, const std::string& transportError) {
  BotReply r;
  // No answer first: whatever bytes a failed transfer left are not Telegram's, so callers
  // see error code 0 (retry later) rather than a status that came with them.
  if (!transportError.empty() || status == 0) {
    r.description = transportError.empty() ? "no answer" : transportError;
    return r;
  }
  // Then depth: a result nested deeper than any Bot API answer is refused before it is walked.
  if (jsonNestingDepth(body) > kMaxDepth) {
    r.errorCode = status;
    r.description = "an answer nested deeper than " + std::to_string(kMaxDepth) + " levels";
    return r;
  }
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("ok") || !j["ok"].is_boolean()) {
    r.errorCode = status;
    r.description = "HTTP " + std::to_string(status) + " without a Bot API answer";
    return r;
  }
  r.ok = j["ok"].get<bool>() && status == 200;
  if (r.ok) {
    if (j.contains("result")) r.result = std::move(j["result"]);
    return r;
  }
  r.errorCode = j.contains("error_code") && j["error_code"].is_number_integer() ? j["error_code"].get<int>() : status;
  r.description = j.contains("description") && j["description"].is_string() ? j["description"].get<std::string>()
                                                                              : "HTTP " + std::to_string(status);
  if (j.contains("parameters") && j["parameters"].is_object() && j["parameters"].contains("retry_after") &&
      j["parameters"]["retry_after"].is_number_integer())
    r.retryAfter = std::clamp(j["parameters"]["retry_after"].get<int>(), 1, 3600);
  return r;
}

kj::Promise<BotReply> BotApi::call(const std::string& method, const nlohmann::json& params) {
  auto body = std::make_shared<std::string>();
  auto req = supervisor_.telegramRequest();
  req.setSource(source_);
  req.setMethod(method);
  std::string p = params.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // A text may quote "${secret:NAME}" (a configuration, say): egress refuses placeholders in a
  // body, so every '$' goes as its JSON escape, which Telegram reads back as '$'.
  for (size_t at; (at = p.find('$')) != std::string::npos;) p.replace(at, 1, "\\u0024");
  req.setParams(kj::arrayPtr(reinterpret_cast<const kj::byte*>(p.data()), p.size()));
  req.setSink(kj::heap<CollectSink>(body, kMaxAnswer, "a Telegram answer over 64 MiB"));
  return req.send().then(
      [body](auto&& resp) { return readReply(resp.getStatus(), *body, resp.getError().cStr()); },
      [](kj::Exception&& e) { return readReply(0, "", std::string("pined refused the call: ") + e.getDescription().cStr()); });
}

kj::Promise<std::pair<BotReply, std::string>> BotApi::file(const std::string& filePath) {
  auto body = std::make_shared<std::string>();
  auto req = supervisor_.telegramFileRequest();
  req.setSource(source_);
  req.setFilePath(filePath);
  req.setSink(kj::heap<CollectSink>(body, kMaxAnswer, "a Telegram answer over 64 MiB"));
  return req.send().then(
      [body](auto&& resp) {
        BotReply r;
        r.errorCode = resp.getStatus();
        r.ok = resp.getStatus() == 200 && std::string(resp.getError().cStr()).empty();
        r.description = resp.getError().cStr();
        return std::make_pair(r, r.ok ? std::move(*body) : std::string());
      },
      [](kj::Exception&& e) {
        BotReply r;
        r.description = std::string("pined refused the download: ") + e.getDescription().cStr();
        return std::make_pair(r, std::string());
      });
}

}  // namespace pine::telegram
