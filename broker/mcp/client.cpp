#include "broker/mcp/client.h"

#include <kj/debug.h>

#include "common/log.h"

namespace pine::mcp {

namespace {

std::string describe(const kj::Exception& e) { return e.getDescription().cStr(); }

std::string cut(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n) + "..."; }

bool supported(const std::string& v) {
  for (auto* known : kProtocolVersions)
    if (v == known) return true;
  return false;
}

}  // namespace

Client::Client(kj::Own<kj::AsyncIoStream> stream, kj::Timer& timer, ClientOptions options)
    : timer_(timer), options_(std::move(options)), channel_(kj::mv(stream), options_.maxMessage) {
  reading_ = readLoop().eagerlyEvaluate([this](kj::Exception&& e) { fail(describe(e)); });
}

Client::~Client() {
  for (auto& [id, p] : pending_)
    if (p.fulfiller->isWaiting()) p.fulfiller->reject(KJ_EXCEPTION(DISCONNECTED, "the MCP session was closed"));
}

void Client::taskFailed(kj::Exception&& e) { fail("writing to the server failed: " + describe(e)); }

void Client::send(std::string line) { writes_.add(channel_.writeLine(kj::mv(line))); }

void Client::fail(const std::string& why) {
  if (!failure_.empty()) return;
  failure_ = why;
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [id, p] : pending)
    if (p.fulfiller->isWaiting()) p.fulfiller->reject(KJ_EXCEPTION(FAILED, why));
}

kj::Promise<void> Client::readLoop() {
  return channel_.readLine().then([this](kj::Maybe<std::string> line) -> kj::Promise<void> {
    KJ_IF_MAYBE (text, line) {
      handle(parseMessage(*text));
      if (!failure_.empty()) return kj::READY_NOW;
      return readLoop();
    }
    fail("the server closed the connection");
    return kj::READY_NOW;
  });
}

void Client::handle(const Message& m) {
  switch (m.kind) {
    case Message::Kind::Invalid:
      if (++invalid_ == 1) spdlog::warn("mcp: a message from the server is not JSON-RPC ({})", m.problem);
      if (invalid_ > (size_t)options_.maxInvalid)
        fail("the server keeps sending messages that are not JSON-RPC (" + m.problem + ")");
      return;
    case Message::Kind::Request:
      // pine offers the server nothing (no sampling, roots or elicitation): only ping is answered.
      if (m.method == "ping") send(resultText(m.id, nlohmann::json::object()));
      else send(errorText(m.id, kMethodNotFound, "pine's MCP client serves no requests"));
      return;
    case Message::Kind::Notification:
      if (m.method == "notifications/progress" && m.params.is_object()) {
        auto token = m.params.value("progressToken", nlohmann::json());
        auto it = progress_.find(token.is_string() ? token.get<std::string>() : token.dump());
        if (it == progress_.end() || !it->second) return;
        std::string text = m.params.contains("message") && m.params["message"].is_string()
                               ? m.params["message"].get<std::string>()
                               : m.params.value("progress", nlohmann::json()).dump() +
                                     (m.params.contains("total") ? "/" + m.params["total"].dump() : "");
        it->second(cut(text, 512));
      } else if (m.method == "notifications/tools/list_changed") {
        if (toolsChanged_) toolsChanged_();
      }
      return;  // logging, cancellation of our own calls, anything else: nothing to do
    case Message::Kind::Result:
    case Message::Kind::Error: {
      if (!m.id.is_number_integer()) {
        ++stray_;
        return;
      }
      auto it = pending_.find(m.id.get<long long>());
      if (it == pending_.end()) {
        ++stray_;  // an answer to nothing asked, or to a call already given up
        return;
      }
      auto p = std::move(it->second);
      pending_.erase(it);
      if (m.kind == Message::Kind::Result) p.fulfiller->fulfill(nlohmann::json(m.result));
      else
        p.fulfiller->reject(KJ_EXCEPTION(FAILED, "the server answered " + p.method + " with error " +
                                                     std::to_string(m.errorCode) + ": " + cut(m.errorMessage, 500)));
      return;
    }
  }
}

void Client::cancel(long long id, const std::string& reason) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  pending_.erase(it);
  if (failure_.empty()) send(notificationText("notifications/cancelled", {{"requestId", id}, {"reason", reason}}));
}

kj::Promise<nlohmann::json> Client::request(const std::string& method, nlohmann::json params, kj::Duration timeout,
                                            long long id) {
  if (!failure_.empty()) return KJ_EXCEPTION(FAILED, failure_);
  if (id == 0) id = nextId_++;
  auto paf = kj::newPromiseAndFulfiller<nlohmann::json>();
  pending_[id] = Pending{method, kj::mv(paf.fulfiller)};
  send(requestText(id, method, params));
  long long seconds = timeout / kj::SECONDS;
  auto answered = timer_.timeoutAfter(timeout, kj::mv(paf.promise))
                      .catch_([this, id, method, seconds](kj::Exception&& e) -> kj::Promise<nlohmann::json> {
                        if (pending_.count(id) && e.getType() == kj::Exception::Type::OVERLOADED) {
                          cancel(id, "no answer within the time limit");
                          return KJ_EXCEPTION(FAILED, "the server did not answer " + method + " within " +
                                                          std::to_string(seconds) + " s");
                        }
                        return kj::mv(e);
                      });
  // Dropped before the answer (the task was cancelled): tell the server to stop.
  return answered.attach(kj::defer([this, id]() { cancel(id, "cancelled by pine"); }));
}

kj::Promise<void> Client::initialize() {
  nlohmann::json params = {{"protocolVersion", kProtocolVersions[0]},
                           {"capabilities", nlohmann::json::object()},
                           {"clientInfo", {{"name", "pine"}, {"version", options_.clientVersion}}}};
  return request("initialize", params, options_.requestTimeout).then([this](nlohmann::json r) -> kj::Promise<void> {
    if (!r.is_object() || !r.contains("protocolVersion") || !r["protocolVersion"].is_string())
      return KJ_EXCEPTION(FAILED, "the server's answer to initialize names no protocolVersion");
    std::string v = r["protocolVersion"];
    if (!supported(v)) {
      std::string known;
      for (auto* k : kProtocolVersions) known += (known.empty() ? "" : ", ") + std::string(k);
      fail("the server speaks MCP " + cut(v, 40) + "; pine speaks " + known);
      return KJ_EXCEPTION(FAILED, failure_);
    }
    version_ = v;
    const auto& info = r.contains("serverInfo") ? r["serverInfo"] : nlohmann::json();
    if (info.is_object() && info.contains("name") && info["name"].is_string()) serverName_ = cut(info["name"], 80);
    return channel_.writeLine(notificationText("notifications/initialized", nullptr));
  });
}

kj::Promise<std::vector<ToolInfo>> Client::listTools() { return listPage("", 0, {}); }

kj::Promise<std::vector<ToolInfo>> Client::listPage(std::string cursor, int page, std::vector<ToolInfo> soFar) {
  nlohmann::json params = nlohmann::json::object();
  if (!cursor.empty()) params["cursor"] = cursor;
  return request("tools/list", params, options_.requestTimeout)
      .then([this, page, soFar = std::move(soFar)](nlohmann::json r) mutable -> kj::Promise<std::vector<ToolInfo>> {
        if (!r.is_object() || !r.contains("tools") || !r["tools"].is_array())
          return KJ_EXCEPTION(FAILED, "the server's tools/list answer has no \"tools\" list");
        for (auto& t : r["tools"]) {
          if (!t.is_object() || !t.contains("name") || !t["name"].is_string() || t["name"].get<std::string>().empty())
            return KJ_EXCEPTION(FAILED, "the server listed a tool without a name");
          ToolInfo info;
          info.name = t["name"];
          if (t.contains("title") && t["title"].is_string()) info.title = t["title"];
          if (t.contains("description") && t["description"].is_string()) info.description = t["description"];
          if (t.contains("inputSchema")) {
            if (!t["inputSchema"].is_object())
              return KJ_EXCEPTION(FAILED, "the server's tool " + cut(info.name, 80) + " has an inputSchema that is not an object");
            info.inputSchema = t["inputSchema"];
          }
          if (t.contains("annotations") && t["annotations"].is_object()) {
            info.annotations = t["annotations"];
            info.readOnlyHint = info.annotations.value("readOnlyHint", nlohmann::json(false)) == true;
          }
          soFar.push_back(std::move(info));
          if (soFar.size() > options_.maxTools)
            return KJ_EXCEPTION(FAILED, "the server lists more than " + std::to_string(options_.maxTools) + " tools");
        }
        if (r.contains("nextCursor") && r["nextCursor"].is_string() && !r["nextCursor"].get<std::string>().empty()) {
          if (page + 1 >= options_.maxPages)
            return KJ_EXCEPTION(FAILED, "the server's tool list goes on for more than " +
                                            std::to_string(options_.maxPages) + " pages");
          return listPage(r["nextCursor"].get<std::string>(), page + 1, std::move(soFar));
        }
        return kj::mv(soFar);
      });
}

kj::Promise<ToolResult> Client::callTool(const std::string& name, const nlohmann::json& arguments,
                                         kj::Duration timeout, std::function<void(const std::string&)> progress,
                                         const nlohmann::json& meta) {
  long long id = nextId_++;
  std::string token = "pine-" + std::to_string(id);
  nlohmann::json params = {{"name", name},
                           {"arguments", arguments.is_object() ? arguments : nlohmann::json::object()},
                           {"_meta", {{"progressToken", token}}}};
  if (meta.is_object())
    for (auto& [k, v] : meta.items())
      if (k != "progressToken") params["_meta"][k] = v;
  progress_[token] = std::move(progress);
  size_t cap = options_.maxResultText;
  return request("tools/call", params, timeout, id)
      .then([cap](nlohmann::json r) { return resultToText(r, cap); })
      .attach(kj::defer([this, token]() { progress_.erase(token); }));
}

ToolResult resultToText(const nlohmann::json& result, size_t cap) {
  ToolResult out;
  std::string text;
  if (!result.is_object()) {
    // Capped like any other answer: the cap is the caller's promise, whatever the server sent.
    text = "(the server's answer is not an object)";
    out.isError = true;
  } else {
    out.isError = result.value("isError", nlohmann::json(false)) == true;
  }
  auto add = [&](const std::string& part) { text += (text.empty() ? "" : "\n") + part; };
  if (result.is_object() && result.contains("content") && result["content"].is_array()) {
    for (auto& c : result["content"]) {
      if (!c.is_object()) continue;
      std::string type = c.value("type", nlohmann::json("")).is_string() ? c.value("type", std::string()) : "";
      auto str = [&](const char* k) {
        return c.contains(k) && c[k].is_string() ? c[k].get<std::string>() : std::string();
      };
      if (type == "text") add(str("text"));
      else if (type == "image" || type == "audio")
        add("[" + type + ": " + cut(str("mimeType"), 60) + ", " + std::to_string(str("data").size() * 3 / 4) +
            " bytes, not shown]");
      else if (type == "resource_link") add("[link: " + cut(str("uri"), 500) + (str("name").empty() ? "" : " " + cut(str("name"), 200)) + "]");
      else if (type == "resource" && c.contains("resource") && c["resource"].is_object()) {
        const auto& r = c["resource"];
        if (r.contains("text") && r["text"].is_string()) add(r["text"].get<std::string>());
        else add("[resource: " + cut(r.value("uri", nlohmann::json("")).dump(), 500) + ", not shown]");
      }
    }
  }
  if (text.empty() && result.is_object() && result.contains("structuredContent"))
    text = result["structuredContent"].dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > cap) {
    size_t more = text.size() - cap;
    text.resize(cap);
    text += "\n... (cut: " + std::to_string(more) + " more bytes)";
    out.truncated = true;
  }
  out.text = std::move(text);
  return out;
}

}  // namespace pine::mcp
