#include <kj/debug.h>

#include "broker/control_api.h"

#include <nlohmann/json.hpp>

#include "broker/api_auth.h"
#include "broker/broker.h"
#include "common/log.h"
#include "common/names.h"
#include "common/unix_socket.h"

namespace pine {
namespace {

constexpr size_t kMaxBody = 1 << 20;

std::string errorBody(const std::string& message) { return nlohmann::json{{"error", message}}.dump(); }

}  // namespace

ControlApi::ControlApi(kj::AsyncIoContext& io, Broker& broker) : io_(io), broker_(broker), tasks_(*this) {
  kj::HttpHeaderTable::Builder builder;
  hAuthorization_ = builder.add("Authorization");
  hOrigin_ = builder.add("Origin");
  hSecFetchSite_ = builder.add("Sec-Fetch-Site");
  hContentType_ = builder.add("Content-Type");
  table_ = builder.build();
  kj::HttpServerSettings settings;
  settings.headerTimeout = 10 * kj::SECONDS;  // a slow client cannot hold a connection open for ever
  server_ = kj::heap<kj::HttpServer>(io.provider->getTimer(), *table_, *this, settings);
}

ControlApi::~ControlApi() noexcept(false) {}

void ControlApi::taskFailed(kj::Exception&& e) { spdlog::warn("control API: {}", e.getDescription().cStr()); }

void ControlApi::listenUnix(const std::string& path) {
  unixReceiver_ = listenUnixSocket(*io_.lowLevelProvider, path);
  tasks_.add(acceptLoop(*unixReceiver_));
}

kj::Promise<void> ControlApi::acceptLoop(kj::ConnectionReceiver& receiver) {
  return receiver.accept().then([this, &receiver](kj::Own<kj::AsyncIoStream>&& conn) {
    bool allowed = false;
    KJ_IF_MAYBE(fd, conn->getFd()) {
      unsigned uid = 0;
      allowed = peerIsOwner(*fd, &uid);
      if (!allowed) spdlog::warn("control API: refused a connection from uid {}", uid);
    }
    if (allowed) tasks_.add(server_->listenHttp(kj::mv(conn)));
    return acceptLoop(receiver);
  });
}

kj::Promise<void> ControlApi::sendJson(Response& response, unsigned status, const std::string& body) {
  kj::HttpHeaders headers(*table_);
  headers.set(hContentType_, "application/json");
  const char* text = status == 200 ? "OK" : status == 202 ? "Accepted" : status == 400 ? "Bad Request"
                   : status == 401 ? "Unauthorized" : status == 403 ? "Forbidden" : status == 404 ? "Not Found"
                   : status == 405 ? "Method Not Allowed" : status == 413 ? "Payload Too Large"
                   : status == 502 ? "Bad Gateway" : "Error";
  auto stream = response.send(status, text, headers, body.size() + 1);
  auto owned = kj::heapString(body + "\n");
  auto promise = stream->write(owned.begin(), owned.size());
  return promise.attach(kj::mv(stream), kj::mv(owned));
}

kj::Promise<void> ControlApi::request(kj::HttpMethod method, kj::StringPtr url, const kj::HttpHeaders& headers,
                                      kj::AsyncInputStream& requestBody, Response& response) {
  std::string target = url.cStr();
  size_t q = target.find('?');
  ApiRequestFacts facts;
  facts.method = kj::str(method).cStr();
  facts.path = target.substr(0, q);
  facts.query = q == std::string::npos ? "" : target.substr(q + 1);
  KJ_IF_MAYBE(a, headers.get(hAuthorization_)) { facts.authorization = a->cStr(); }
  facts.hasOrigin = headers.get(hOrigin_) != nullptr;
  facts.hasSecFetchSite = headers.get(hSecFetchSite_) != nullptr;
  if (auto refusal = checkApiRequest(facts, broker_.token())) {
    spdlog::warn("control API: {} {} refused: {}", facts.method, facts.path, refusal->message);
    return sendJson(response, refusal->status, errorBody(refusal->message));
  }
  return route(method, facts.path, headers, requestBody, response);
}

kj::Promise<void> ControlApi::route(kj::HttpMethod method, std::string path, const kj::HttpHeaders& headers,
                                    kj::AsyncInputStream& body, Response& response) {
  (void)headers;
  using M = kj::HttpMethod;
  if (path == "/health") {
    if (method != M::GET) return sendJson(response, 405, errorBody("use GET"));
    return sendJson(response, 200, nlohmann::json{{"ok", true}}.dump());
  }
  if (path == "/v1/status") {
    if (method != M::GET) return sendJson(response, 405, errorBody("use GET"));
    return broker_.status().then(
        [this, &response](nlohmann::json j) { return sendJson(response, 200, j.dump()); },
        [this, &response](kj::Exception&& e) {
          return sendJson(response, 502, errorBody(std::string("pined did not answer: ") + e.getDescription().cStr()));
        });
  }
  if (path == "/v1/reload") {
    if (method != M::POST) return sendJson(response, 405, errorBody("use POST"));
    return broker_.reloadConfig().then([this, &response](nlohmann::json j) {
      return sendJson(response, 200, j.dump());
    });
  }
  if (path == "/v1/tasks") {
    if (method != M::GET) return sendJson(response, 405, errorBody("use GET"));
    return sendJson(response, 200, nlohmann::json{{"tasks", broker_.tasksJson(100)}}.dump());
  }
  const std::string agentsPrefix = "/v1/agents/";
  const std::string messagesSuffix = "/messages";
  if (path.rfind(agentsPrefix, 0) == 0 && path.size() > agentsPrefix.size() + messagesSuffix.size() &&
      path.compare(path.size() - messagesSuffix.size(), messagesSuffix.size(), messagesSuffix) == 0) {
    std::string agent = path.substr(agentsPrefix.size(), path.size() - agentsPrefix.size() - messagesSuffix.size());
    if (method != M::POST) return sendJson(response, 405, errorBody("use POST"));
    if (!isValidAgentId(agent))
      return sendJson(response, 404, errorBody("no agent '" + agent + "': agent ids are [a-z0-9_-], 1 to 64 bytes"));
    return body.readAllText(kMaxBody + 1).then([this, agent, &response](kj::String text) -> kj::Promise<void> {
      if (text.size() > kMaxBody) return sendJson(response, 413, errorBody("the body is larger than 1 MB"));
      nlohmann::json req = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
      if (req.is_discarded() || !req.is_object())
        return sendJson(response, 400, errorBody("the body must be a JSON object like {\"text\": \"...\"}"));
      if (!req.contains("text") || !req["text"].is_string() || req["text"].get<std::string>().empty())
        return sendJson(response, 400, errorBody("\"text\" must be a non-empty string"));
      bool wait = true;
      if (req.contains("wait")) {
        if (!req["wait"].is_boolean()) return sendJson(response, 400, errorBody("\"wait\" must be true or false"));
        wait = req["wait"].get<bool>();
      }
      std::string id = broker_.startTask(agent, req["text"].get<std::string>());
      if (!wait) return sendJson(response, 202, nlohmann::json{{"task", id}}.dump());
      return broker_.whenEnded(id).then([this, &response](const TaskRecord* t) {
        return sendJson(response, 200, t ? t->toJson().dump() : errorBody("the task was forgotten"));
      });
    });
  }
  return sendJson(response, 404, errorBody("no route " + path + " (see docs/api.md)"));
}

}  // namespace pine
