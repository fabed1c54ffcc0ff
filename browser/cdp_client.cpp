#include "browser/cdp_client.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <vector>

#include "browser/cdp_framing.h"
#include "web/mcp_loop.h"

namespace pine::browser {

namespace {
constexpr size_t kMaxMessageBytes = 64u << 20;  // a full-page screenshot in base64 stays below this
}

CdpClient::CdpClient(int commands, int events) : commands_(commands), events_(events) {
  reader_ = std::thread([this] { readLoop(); });
}

CdpClient::~CdpClient() {
  if (reader_.joinable()) reader_.detach();  // ends when Chromium's end closes
}

void CdpClient::readLoop() {
  NulFramer framer(kMaxMessageBytes);
  std::vector<std::string> messages;
  std::vector<char> chunk(1 << 16);
  for (;;) {
    ssize_t n = read(events_, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    messages.clear();
    framer.feed(std::string_view(chunk.data(), static_cast<size_t>(n)), messages);
    for (auto& m : messages) {
      auto j = nlohmann::json::parse(m, nullptr, false);
      if (!j.is_object() || !j.contains("id") || !j["id"].is_number_integer()) continue;  // events, junk
      const long long id = j["id"].get<long long>();  // before j is moved (json's operator= takes a copy)
      std::lock_guard<std::mutex> lock(mu_);
      answers_[id] = std::move(j);
      cv_.notify_all();
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  gone_ = true;
  cv_.notify_all();
}

nlohmann::json CdpClient::call(const std::string& method, nlohmann::json params, const std::string& session,
                               int timeoutMs) {
  long long id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (gone_) throw CdpError("Chromium has exited");
    id = nextId_++;
  }
  nlohmann::json msg = {{"id", id}, {"method", method}, {"params", std::move(params)}};
  if (!session.empty()) msg["sessionId"] = session;
  std::string text = msg.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  text.push_back('\0');
  {
    std::lock_guard<std::mutex> lock(writing_);  // one message at a time on the pipe
    if (!web::writeAll(commands_, text)) throw CdpError("Chromium's pipe is closed");
  }
  std::unique_lock<std::mutex> lock(mu_);
  const bool answered = cv_.wait_for(lock, std::chrono::milliseconds(timeoutMs),
                                     [&] { return gone_ || answers_.count(id) > 0; });
  auto it = answers_.find(id);
  if (it == answers_.end())
    throw CdpError(answered ? "Chromium has exited" : method + " took longer than " + std::to_string(timeoutMs / 1000) + " s");
  nlohmann::json a = std::move(it->second);
  answers_.erase(it);
  if (a.contains("error")) {
    std::string why = a["error"].is_object() && a["error"].contains("message") && a["error"]["message"].is_string()
                          ? a["error"]["message"].get<std::string>()
                          : std::string("an error");
    throw CdpError(method + ": " + why);
  }
  return a.contains("result") && a["result"].is_object() ? a["result"] : nlohmann::json::object();
}

}  // namespace pine::browser
