#include "web/mcp_loop.h"

#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace pine::web {
namespace {

using nlohmann::json;

const char* const kVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

json errorAnswer(const json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

json result(const json& id, json r) { return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(r)}}; }

// Never lets an exception out (a thread's would end the process): a call that threw is an error result.
std::optional<json> safeAnswer(const json& m, const McpServerSpec& spec) {
  try {
    return mcpAnswer(m, spec);
  } catch (const std::exception& e) {
    const json id = m.is_object() && m.contains("id") ? m["id"] : json(nullptr);
    return result(id, textResult(true, spec.name + " failed: " + e.what()));
  }
}

}  // namespace

bool LineReader::next(std::string& line, bool& tooLong) {
  line.clear();
  tooLong = false;
  for (;;) {
    auto nl = buf_.find('\n', scanned_);
    if (nl != std::string::npos) {
      if (!tooLong) line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      scanned_ = 0;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return true;
    }
    if (buf_.size() > max_) {
      tooLong = true;
      buf_.clear();
    }
    scanned_ = buf_.size();
    char chunk[65536];
    ssize_t n = read(fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buf_.append(chunk, static_cast<size_t>(n));
  }
}

bool writeAll(int fd, const std::string& s) {
  size_t at = 0;
  while (at < s.size()) {
    ssize_t n = write(fd, s.data() + at, s.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    at += static_cast<size_t>(n);
  }
  return true;
}

json textResult(bool isError, const std::string& text) {
  return {{"content", json::array({{{"type", "text"}, {"text", text}}})}, {"isError", isError}};
}

std::optional<json> mcpAnswer(const json& m, const McpServerSpec& spec) {
  if (!m.is_object()) return errorAnswer(nullptr, -32600, "a message must be a JSON object");
  if (!m.contains("method")) return std::nullopt;  // a response to nothing we asked: dropped
  const bool request = m.contains("id") && (m["id"].is_number_integer() || m["id"].is_string());
  if (!m["method"].is_string()) return request ? std::optional(errorAnswer(m["id"], -32600, "method must be a string")) : std::nullopt;
  if (!request) return std::nullopt;  // notifications: initialized, cancelled (a call runs to its timeout)
  const json& id = m["id"];
  const std::string method = m["method"];
  const json params = m.contains("params") && m["params"].is_object() ? m["params"] : json::object();
  if (method == "initialize") {
    std::string asked = params.value("protocolVersion", json("")).is_string() ? params.value("protocolVersion", "") : "";
    std::string version = kVersions[0];
    for (auto* v : kVersions)
      if (asked == v) version = v;
    return result(id, {{"protocolVersion", version},
                       {"capabilities", {{"tools", {{"listChanged", false}}}}},
                       {"serverInfo", {{"name", spec.name}, {"version", "1"}}},
                       {"instructions", spec.instructions}});
  }
  if (method == "ping") return result(id, json::object());
  if (method == "tools/list") return result(id, {{"tools", spec.tools}});
  if (method == "tools/call") {
    const std::string name = params.value("name", json("")).is_string() ? params.value("name", "") : "";
    json args = params.contains("arguments") && params["arguments"].is_object() ? params["arguments"] : json::object();
    json meta = params.contains("_meta") && params["_meta"].is_object() ? params["_meta"] : json::object();
    return result(id, spec.call(name, args, meta));
  }
  return errorAnswer(id, -32601, "no method '" + method + "' (" + spec.name + " serves initialize, ping, tools/list, tools/call)");
}

void serveMcp(int fd, LineReader& reader, const McpServerSpec& spec, int maxCalls) {
  std::mutex mu;
  std::condition_variable cv;
  int running = 0;
  auto send = [&](const json& j) {
    std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    std::lock_guard<std::mutex> lock(mu);
    writeAll(fd, text);
  };
  std::string line;
  bool tooLong = false;
  while (reader.next(line, tooLong)) {
    if (tooLong) {
      send(errorAnswer(nullptr, -32600, "a message longer than " + std::to_string(reader.maxLineBytes() >> 20) + " MiB"));
      continue;
    }
    if (line.empty()) continue;
    json m = json::parse(line, nullptr, false);
    if (m.is_discarded()) {
      send(errorAnswer(nullptr, -32700, "not JSON"));
      continue;
    }
    if (m.is_object() && m.value("method", json("")) == "tools/call" && m.contains("id")) {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return running < maxCalls; });
      ++running;
      lock.unlock();
      std::thread([&, m = std::move(m)]() {
        if (auto a = safeAnswer(m, spec)) send(*a);
        std::lock_guard<std::mutex> l(mu);
        --running;
        cv.notify_all();
      }).detach();
      continue;
    }
    if (auto a = safeAnswer(m, spec)) send(*a);
  }
  // The broker closed the socket: calls still running have nobody to answer.
  if (spec.atEnd) spec.atEnd();
  _exit(0);
}

}  // namespace pine::web
