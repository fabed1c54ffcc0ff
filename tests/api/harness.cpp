#include "tests/api/harness.h"

#include <arpa/inet.h>
#include <kj/debug.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "pinectl/http_client.h"
#include "common/cloexec.h"
#include "common/send_no_signal.h"

namespace pine::apitest {

// --- FakeBackend -------------------------------------------------------------------------------

static ApiReply err(int status, const std::string& message) { return ApiReply{status, json{{"error", message}}}; }

kj::Promise<ApiReply> FakeBackend::status() {
  calls.push_back("status");
  return ApiReply{200, json{{"home", "/fake"}, {"processes", json::array()}, {"tasks", json::array()}}};
}

kj::Promise<ApiReply> FakeBackend::reload() {
  calls.push_back("reload");
  return ApiReply{200, json{{"ok", true}}};
}

kj::Promise<ApiReply> FakeBackend::hook(const std::string& name, HookDelivery d) {
  calls.push_back("hook " + name);
  if (name != "gh") return apiError(404, "no webhook called '" + name + "'");
  bool flood = d.body == "flood", hold = d.body == "hold";
  hooks.emplace_back(name, std::move(d));
  if (hold) {
    auto paf = kj::newPromiseAndFulfiller<ApiReply>();
    heldHooks.push_back(kj::mv(paf.fulfiller));
    return kj::mv(paf.promise);
  }
  if (flood) {
    ApiReply r = apiError(429, "at most 120 a minute");
    r.retryAfterSec = 17;
    return r;
  }
  return ApiReply{202, {{"event", "ev-1"}}};
}

void FakeBackend::commitHeldHooks() {
  for (auto& f : heldHooks) f->fulfill(ApiReply{202, {{"event", "ev-held"}}});
  heldHooks.clear();
}

ApiReply FakeBackend::tasks(const ApiQuery&) {
  calls.push_back("tasks");
  return ApiReply{200, json{{"tasks", json::array()}}};
}

ApiReply FakeBackend::task(const std::string& id) {
  calls.push_back("task " + id);
  return ApiReply{404, json{{"error", "no task '" + id + "'"}}};
}

ApiReply FakeBackend::listEvents(const ApiQuery& query) {
  std::string line = "listEvents";
  for (auto& [k, v] : query) line += " " + k + "=" + v;
  calls.push_back(line);
  long long after = query.count("after") ? std::stoll(query.at("after")) : 0;
  size_t limit = query.count("limit") ? std::stoul(query.at("limit")) : 100;
  limit = std::min<size_t>(limit, 3);  // small pages, so that replay has to page
  json out = json::array();
  const bool newest = query.count("newest") && query.at("newest") == "1";  // the newest first, as the store
  for (size_t i = 0; i < events.size(); ++i) {
    auto& e = events[newest ? events.size() - 1 - i : i];
    if (e["seq"].get<long long>() <= after) continue;
    if (query.count("topic") && e["topic"] != query.at("topic")) continue;
    out.push_back(e);
    if (out.size() >= limit) break;
  }
  return ApiReply{200, json{{"events", out}}};
}

json FakeBackend::addEvent(const std::string& topic, const json& payload) {
  json e = {{"seq", (long long)events.size() + 1}, {"topic", topic}, {"payload", payload}, {"trust", "owner"}};
  events.push_back(e);
  feedObj.publish(pine::eventFeedItem(topic, e["seq"].get<long long>(), e.dump()));  // as the broker does
  return e;
}

kj::Promise<ApiReply> FakeBackend::publishEvent(const json& body) {
  calls.push_back("publishEvent " + body.dump());
  if (!body.contains("topic") || !body["topic"].is_string()) return err(400, "\"topic\" must be a string");
  if (body["topic"] == "fail/backend") return KJ_EXCEPTION(FAILED, "the store is gone");  // a broken backend
  if (body["topic"] == "hold/backend") {  // a commit that takes as long as the test says (releaseHeld)
    auto paf = kj::newPromiseAndFulfiller<ApiReply>();
    held.push_back(kj::mv(paf.fulfiller));
    return kj::mv(paf.promise);
  }
  return ApiReply{200, json{{"event", addEvent(body["topic"], body.value("payload", json()))}}};
}

ApiReply FakeBackend::agents() {
  calls.push_back("agents");
  return ApiReply{200, json{{"agents", json::array({json{{"id", "main"}, {"mode", "auto"}}})}}};
}

ApiReply FakeBackend::sendMessage(const std::string& agent, const json& body) {
  calls.push_back("sendMessage " + agent + " " + body.value("text", ""));
  if (agent != "main") return err(404, "no agent '" + agent + "'");
  if (!body.contains("text") || !body["text"].is_string()) return err(400, "\"text\" must be a string");
  std::string id = "t" + std::to_string(++tasksStarted);
  feedObj.publish({{"kind", "task"}, {"task", id}, {"state", "queued"}});
  return ApiReply{200, json{{"task", id}, {"session", body.value("session", "main")}}};
}

kj::Promise<ApiReply> FakeBackend::taskResult(const std::string& id) {
  calls.push_back("taskResult " + id);
  if (auto it = finished.find(id); it != finished.end()) return ApiReply{200, it->second};
  auto paf = kj::newPromiseAndFulfiller<ApiReply>();
  waiters[id].push_back(kj::mv(paf.fulfiller));
  return kj::mv(paf.promise);
}

void FakeBackend::finishTask(const std::string& id, const std::string& st, const std::string& text) {
  json record = {{"id", id}, {"agent", "main"}, {"state", st}};
  record[st == "done" ? "answer" : "error"] = text;
  finished[id] = record;
  feedObj.publish({{"kind", "task"}, {"task", id}, {"state", st}});
  for (auto& f : waiters[id]) f->fulfill(ApiReply{200, record});
  waiters.erase(id);
}

ApiReply FakeBackend::resetAgent(const std::string& agent, const json& body) {
  calls.push_back("resetAgent " + agent + " " + body.dump());
  return ApiReply{200, json{{"ok", true}, {"session", body.value("session", "main")}}};
}

ApiReply FakeBackend::setMode(const std::string& agent, const json& body) {
  calls.push_back("setMode " + agent + " " + body.dump());
  std::string mode = body.value("mode", "");
  if (mode != "manual" && mode != "auto" && mode != "bypass") return err(400, "mode must be manual, auto or bypass");
  return ApiReply{200, json{{"agent", agent}, {"mode", mode}}};
}

ApiReply FakeBackend::approvals(const ApiQuery&) {
  calls.push_back("approvals");
  return ApiReply{200, json{{"approvals", json::array({json{{"id", "a1"}, {"agent", "main"}, {"tool", "bash"},
                                                            {"args", {{"command", "git push"}}},
                                                            {"state", "pending"}, {"alwaysOffered", true}}})}}};
}

ApiReply FakeBackend::approve(const std::string& id, bool always) {
  calls.push_back("approve " + id + (always ? " always" : ""));
  if (id != "a1") return err(404, "no pending approval '" + id + "'");
  return ApiReply{200, json{{"ok", true}}};
}

ApiReply FakeBackend::deny(const std::string& id) {
  calls.push_back("deny " + id);
  if (id != "a1") return err(404, "no pending approval '" + id + "'");
  return ApiReply{200, json{{"ok", true}}};
}

ApiReply FakeBackend::cancelTask(const std::string& id) {
  calls.push_back("cancel " + id);
  if (id != "t1") return err(404, "no task '" + id + "'");
  return ApiReply{200, json{{"task", id}, {"cancelled", true}}};
}

ApiReply FakeBackend::schedules() {
  calls.push_back("schedules");
  return ApiReply{200, json{{"schedules", json::array({json{{"id", "s1"}, {"agent", "main"}, {"when", "0 7 * * *"},
                                                            {"next", "2030-01-01T07:00:00Z"}, {"task", "say hi"}}})}}};
}

ApiReply FakeBackend::getState(const std::string& key) {
  calls.push_back("getState " + key);
  auto it = state.find(key);
  if (it == state.end()) return err(404, "no state '" + key + "'");
  return ApiReply{200, json{{"key", key}, {"value", it->second}}};
}

ApiReply FakeBackend::putState(const std::string& key, const json& body) {
  calls.push_back("putState " + key + " " + body.dump());
  if (!body.contains("value")) return err(400, "send {\"value\": ...}");
  state[key] = body["value"];
  return ApiReply{200, json{{"ok", true}}};
}

// --- ApiServer ---------------------------------------------------------------------------------

ControlApiLimits ApiServer::testLimits() {
  ControlApiLimits l;
  l.headerTimeout = 700 * kj::MILLISECONDS;
  l.bodyTimeout = 700 * kj::MILLISECONDS;
  l.keepalive = 300 * kj::MILLISECONDS;
  return l;
}

ApiServer::ApiServer(ControlApiLimits limits) {
  char dir[] = "/tmp/pine-api-XXXXXX";
  if (!mkdtemp(dir)) throw std::runtime_error("mkdtemp failed");
  home_ = dir;
  mkdir((home_ + "/data").c_str(), 0700);
  thread_ = std::thread([this, limits] {
    std::string error;
    try {
      loop(limits);
    } catch (kj::Exception& e) {
      error = e.getDescription().cStr();
    } catch (std::exception& e) {
      error = e.what();
    }
    std::lock_guard<std::mutex> g(mu_);
    startError_ = error.empty() ? "stopped" : error;
    cv_.notify_all();
  });
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::seconds(10), [&] { return executor_ != nullptr || !startError_.empty(); });
  if (!executor_) {
    lock.unlock();
    thread_.join();
    throw std::runtime_error("the test server did not start: " + startError_);
  }
}

void ApiServer::loop(ControlApiLimits limits) {
  auto io = kj::setupAsyncIo();
  FakeBackend backend;
  token_ = backend.tok;
  {
    std::ofstream(home_ + "/data/http-token") << token_ << "\n";
  }
  ControlApi api(io, backend, limits);
  int port = api.listenTcp("127.0.0.1", 0);
  api.listenUnix(socketPath());
  auto paf = kj::newPromiseAndFulfiller<void>();
  {
    std::lock_guard<std::mutex> g(mu_);
    port_ = port;
    backend_ = &backend;
    api_ = &api;
    stop_ = kj::mv(paf.fulfiller);
    executor_ = &kj::getCurrentThreadExecutor();
    cv_.notify_all();
  }
  paf.promise.wait(io.waitScope);
  std::lock_guard<std::mutex> g(mu_);
  executor_ = nullptr;
  backend_ = nullptr;
  api_ = nullptr;
}

ApiServer::~ApiServer() {
  if (executor_) executor_->executeSync([this] { stop_->fulfill(); });
  thread_.join();
  std::string cmd = "rm -rf '" + home_ + "'";
  if (system(cmd.c_str()) != 0) {
  }
}

void ApiServer::run(const std::function<void(FakeBackend&)>& fn) {
  executor_->executeSync([&] { fn(*backend_); });
}

unsigned long long ApiServer::plainEventsServed() {
  unsigned long long n = 0;
  executor_->executeSync([&] { n = api_->plainEventsServed(); });
  return n;
}

unsigned long long ApiServer::heldReads() {
  unsigned long long n = 0;
  executor_->executeSync([&] { n = api_->heldReads(); });
  return n;
}

unsigned long long ApiServer::idleWatchWakes() {
  unsigned long long n = 0;
  executor_->executeSync([&] { n = api_->idleWatchWakes(); });
  return n;
}

size_t ApiServer::returningSenders() {
  size_t n = 0;
  executor_->executeSync([&] { n = api_->returningSenders(); });
  return n;
}

std::vector<std::string> ApiServer::calls() {
  std::vector<std::string> out;
  run([&](FakeBackend& b) { out = b.calls; });
  return out;
}

// --- RawConn -----------------------------------------------------------------------------------

RawConn RawConn::tcp(int port) {
  int fd = pine::socketCloexec(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr*)&a, sizeof a) != 0) throw std::runtime_error("connect to the test server failed");
  return RawConn(fd);
}

RawConn RawConn::unixSocket(const std::string& path) {
  int fd = pine::socketCloexec(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un a = {};
  a.sun_family = AF_UNIX;
  strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  if (connect(fd, (struct sockaddr*)&a, sizeof a) != 0) throw std::runtime_error("connect to " + path + " failed");
  return RawConn(fd);
}

RawConn::~RawConn() {
  if (fd_ >= 0) close(fd_);
}

RawConn& RawConn::operator=(RawConn&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) close(fd_);
    fd_ = o.fd_;
    buf_ = std::move(o.buf_);
    eof_ = o.eof_;
    o.fd_ = -1;
  }
  return *this;
}

void RawConn::shutdownWrite() { ::shutdown(fd_, SHUT_WR); }

bool RawConn::send(const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = pine::sendNoSignal(fd_, bytes.data() + off, bytes.size() - off, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += (size_t)n;
  }
  return true;
}

bool RawConn::readSome(std::chrono::steady_clock::time_point deadline) {
  if (eof_) return false;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return false;
  struct pollfd p = {fd_, POLLIN, 0};
  if (poll(&p, 1, (int)left.count()) <= 0) return false;
  char b[65536];
  ssize_t n = recv(fd_, b, sizeof b, 0);
  if (n <= 0) {
    eof_ = true;
    return false;
  }
  buf_.append(b, (size_t)n);
  return true;
}

std::string RawConn::readUntil(const std::string& until, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (buf_.find(until) == std::string::npos && readSome(deadline)) {
  }
  return buf_;
}

std::string RawConn::readResponse(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!responseComplete(buf_) && readSome(deadline)) {
  }
  return buf_;
}

bool RawConn::closedWithin(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!eof_ && std::chrono::steady_clock::now() < deadline) {
    readSome(deadline);
  }
  return eof_;
}

// --- requests ----------------------------------------------------------------------------------

Resp parse(const std::string& raw) {
  Resp r;
  size_t headEnd = raw.find("\r\n\r\n");
  r.head = raw.substr(0, headEnd);
  for (auto& c : r.head) c = (char)tolower((unsigned char)c);
  try {
    auto h = parseHttpResponse(raw);
    r.status = h.status;
    r.body = h.body;
  } catch (std::exception&) {
    r.status = 0;  // no (whole) response: the server dropped us
  }
  r.j = json::parse(r.body, nullptr, false);
  return r;
}

std::string request(const ApiServer& s, const std::string& method, const std::string& target,
                    const std::string& body, const std::vector<std::string>& headers, bool withHost, bool withToken) {
  std::string req = method + " " + target + " HTTP/1.1\r\n";
  if (withHost) req += "Host: 127.0.0.1:" + std::to_string(s.port()) + "\r\n";
  if (withToken) req += "Authorization: Bearer " + s.token() + "\r\n";
  bool framed = false;
  for (auto& h : headers) {
    req += h + "\r\n";
    std::string l = h;
    for (auto& c : l) c = (char)tolower((unsigned char)c);
    if (l.rfind("content-length:", 0) == 0 || l.rfind("transfer-encoding:", 0) == 0) framed = true;
  }
  if (!framed && (!body.empty() || method == "POST" || method == "PUT"))
    req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  return req + "\r\n" + body;
}

Resp roundTrip(const ApiServer& s, const std::string& raw, std::chrono::milliseconds timeout) {
  auto c = RawConn::tcp(s.port());
  c.send(raw);
  return parse(c.readResponse(timeout));
}

Resp call(const ApiServer& s, const std::string& method, const std::string& target, const std::string& body,
          const std::vector<std::string>& headers) {
  return roundTrip(s, request(s, method, target, body, headers));
}

}  // namespace pine::apitest
