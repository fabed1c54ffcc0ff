#include "mcp_remote/connector.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>
#include <thread>

#include "mcp_remote/http.h"
#include "mcp_remote/job/remote_job.h"
#include "mcp_remote/sse.h"
#include "common/json_depth.h"
#include "redact/redactor.h"

namespace pine::mcp_remote {
namespace {

using nlohmann::json;

constexpr size_t kMaxMessage = (4u << 20) - 1;  // the broker's client takes lines of 4 MiB
constexpr size_t kMaxStreamBytes = 64u << 20;   // one POST's event stream in all
constexpr long kConnectMs = 10000;
constexpr long kPostMs = 330000;      // past the client's own 300 s for a tool call
constexpr long kNotifyMs = 30000;
constexpr long kEndpointWaitMs = 15000;
constexpr int kMaxInFlight = 32;
constexpr int kMaxDepth = 64;  // as the broker's client (broker/mcp/json_rpc.h)

class Session {
 public:
  Session(int fd, RemoteJob job) : fd_(fd), job_(std::move(job)), known_(knownValues(job_)) {}

  int run() {
    if (auto why = resolveTarget(job_.url, kConnectMs, target_)) fatal_ = *why;
    if (!fatal_.empty()) say("cannot use this server: " + fatal_);
    std::string line;
    while (readLine(line)) {
      if (line.empty()) continue;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return inFlight_ < kMaxInFlight; });
        ++inFlight_;
      }
      // The first message decides the transport: nothing runs alongside it. Notifications and
      // answers to the server are quick (202) and go in order, so `initialized` is at the server
      // before any later request; requests run side by side.
      auto m = json::parse(line, nullptr, false);
      const bool request = m.is_object() && m.contains("method") && m.contains("id");
      if (!initialized_ || !request) {
        handle(std::move(line));
        initialized_ = true;
      } else {
        try {
          std::thread([this, l = line]() mutable { handle(std::move(l)); }).detach();
        } catch (const std::system_error&) {
          handle(std::move(line));  // no thread to be had: this one waits for it
        }
      }
    }
    finish();
    // Requests still in flight (a server that never answers) run on detached threads that use
    // this session: end here, without destructors, rather than free what they hold.
    std::fflush(stderr);
    _exit(exitCode_);
  }

 private:
  // The header values and the secrets in them (8 bytes or more, as redact/ takes them): a server
  // that echoes one back must not hand it to the broker (or the model).
  static std::vector<std::string> knownValues(const RemoteJob& job) {
    std::vector<std::string> v;
    for (const auto& s : job.secrets)
      if (s.size() >= redact::kMinKnownLength) v.push_back(s);
    for (const auto& [name, value] : job.headers)
      if (value.size() >= redact::kMinKnownLength) v.push_back(value);
    std::sort(v.begin(), v.end(), [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
    return v;
  }

  std::string scrubbed(std::string s) const {
    for (const auto& k : known_)
      for (size_t at = s.find(k); at != std::string::npos; at = s.find(k, at + redact::kMarker.size()))
        s.replace(at, k.size(), redact::kMarker);
    return s;
  }

  // Every string (and key) of a message, with the known values replaced by the marker. Only
  // these values: redact/'s patterns would also blank fields such as `progressToken` that MCP
  // needs. Bounded: messages nest at most kMaxDepth deep.
  void scrub(json& j) const {
    if (j.is_string()) {
      j = scrubbed(j.get<std::string>());
    } else if (j.is_array()) {
      for (auto& e : j) scrub(e);
    } else if (j.is_object()) {
      json out = json::object();
      for (auto& [k, v] : j.items()) {
        json value = v;
        scrub(value);
        out[scrubbed(k)] = std::move(value);
      }
      j = std::move(out);
    }
  }

  void say(const std::string& what) {
    std::fprintf(stderr, "pine-mcp-remote %s: %s\n", job_.name.c_str(), scrubbed(what).c_str());
  }

  bool readLine(std::string& line) {
    line.clear();
    for (;;) {
      size_t nl = pending_.find('\n');
      if (nl != std::string::npos) {
        line = pending_.substr(0, nl);
        pending_.erase(0, nl + 1);
        return true;
      }
      if (pending_.size() > kMaxMessage + 1) return false;  // the broker never sends that
      char buf[65536];
      ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      pending_.append(buf, static_cast<size_t>(n));
    }
  }

  void send(json message) {
    if (!known_.empty()) scrub(message);
    std::string line = message.dump(-1, ' ', false, json::error_handler_t::replace);
    if (line.size() > kMaxMessage) return;  // cannot happen: the input was capped
    line += '\n';
    std::lock_guard lock(outMu_);
    size_t at = 0;
    while (at < line.size()) {
      ssize_t n = ::write(fd_, line.data() + at, line.size() - at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      at += static_cast<size_t>(n);
    }
  }

  void sendError(const json& id, const std::string& why) {
    if (id.is_null()) {
      say(why);
      return;
    }
    send({{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", -32000}, {"message", "remote MCP server: " + why}}}});
  }

  // One event's or body's bytes as messages: parsed, so that what reaches the broker is JSON on one line.
  bool relay(std::string_view bytes, const json& id, bool& answered) {
    if (jsonNestingDepth(bytes) > kMaxDepth) return false;  // no honest message nests so deep
    auto j = json::parse(bytes, nullptr, false);
    if (j.is_discarded()) return false;
    auto one = [&](const json& m) {
      if (m.is_object() && m.contains("id") && m["id"] == id && !m.contains("method")) answered = true;
      noteVersion(m);
      send(m);
    };
    if (j.is_array()) {
      for (const auto& m : j) one(m);
    } else {
      one(j);
    }
    return true;
  }

  std::vector<std::string> headers(bool isInitialize) {
    std::vector<std::string> h;
    for (const auto& [name, value] : job_.headers) h.push_back(value.empty() ? name + ";" : name + ": " + value);
    h.push_back("Accept: application/json, text/event-stream");
    h.push_back("Content-Type: application/json");
    h.push_back("Expect:");
    std::lock_guard lock(mu_);
    if (!sessionId_.empty()) h.push_back("Mcp-Session-Id: " + sessionId_);
    if (!isInitialize && !protocolVersion_.empty()) h.push_back("MCP-Protocol-Version: " + protocolVersion_);
    return h;
  }

  void handle(std::string line) {
    handleOne(line);
    std::lock_guard lock(mu_);
    --inFlight_;
    cv_.notify_all();
  }

  void handleOne(const std::string& line) {
    auto m = json::parse(line, nullptr, false);
    json id = m.is_object() && m.contains("id") && m.contains("method") ? m["id"] : json();
    const bool isInitialize = m.is_object() && m.contains("method") && m["method"] == "initialize";
    const bool withSession = hasSession();
    if (!fatal_.empty()) return sendError(id, fatal_);
    if (legacy_) return postLegacy(line, id);

    Exchange x;
    x.url = target_.url;
    x.headers = headers(isInitialize);
    x.body = line;
    x.connectTimeoutMs = kConnectMs;
    x.totalTimeoutMs = id.is_null() ? kNotifyMs : kPostMs;
    long status = 0;
    std::string type, session, body, problem;
    bool answered = false;
    size_t total = 0;
    SseParser sse(kMaxMessage + 16, kMaxMessage);
    x.onHead = [&](long s, const std::string& t, const std::string& sid) {
      status = s;
      type = t;
      session = sid;
    };
    x.onBody = [&](std::string_view bytes) {
      total += bytes.size();
      if (status < 200 || status >= 300) return body.size() < 4096 ? (body.append(bytes), true) : false;
      if (type == "text/event-stream") {
        if (total > kMaxStreamBytes) return problem = "its event stream went past 64 MiB", false;
        std::vector<SseEvent> events;
        bool ok = sse.feed(bytes, events);
        for (const auto& e : events) {
          if (e.type != "message") continue;
          if (!relay(e.data, id, answered)) say("an event that is not JSON was dropped");
        }
        if (!ok) return problem = "its event stream broke the rules: " + sse.error(), false;
        return !answered;  // the answer is in: the stream has nothing more for this request
      }
      if (body.size() + bytes.size() > kMaxMessage)
        return problem = "its answer is over 4 MiB", false;
      body.append(bytes);
      return true;
    };
    Outcome out = perform(target_, x);
    if (status == 0) status = out.status;
    if (!problem.empty()) return sendError(id, problem);
    if (!out.error.empty()) return sendError(id, "cannot reach " + target_.url + ": " + out.error);

    if (isInitialize && (status == 400 || status == 404 || status == 405)) return startLegacy(line, id, status);
    if (status == 404 && withSession) {
      say("the server ended the session (HTTP 404); pine starts a new one");
      sendError(id, "the server ended the session (HTTP 404); it is started again");
      exitCode_ = 3;
      std::fflush(stderr);
      _exit(3);  // the broker sees the exit and restarts the server with its backoff
    }
    if (status < 200 || status >= 300)
      return sendError(id, "the server answered HTTP " + std::to_string(status) +
                               (status >= 300 && status < 400 ? " (a redirect, not followed)" : ""));
    if (isInitialize && !session.empty()) {
      if (session.size() > 256 || session.find_first_not_of("!\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~") != std::string::npos)
        return sendError(id, "the server's Mcp-Session-Id is not visible ASCII of at most 256 bytes");
      std::lock_guard lock(mu_);
      sessionId_ = session;
    }
    if (type == "application/json" && !body.empty()) {
      if (!relay(body, id, answered)) return sendError(id, "its answer is not JSON (or nests over 64 deep)");
    } else if (type != "text/event-stream" && !body.empty() && !id.is_null()) {
      return sendError(id, "its answer is " + (type.empty() ? std::string("of no content type") : type) +
                               ", not JSON or an event stream");
    }
    if (!id.is_null() && !answered) return sendError(id, "the server's answer held no response to this request");
  }

  bool hasSession() {
    std::lock_guard lock(mu_);
    return !sessionId_.empty();
  }

  // The version the server chose in its initialize result: the broker's client checks it; here it
  // only goes into the MCP-Protocol-Version header of the later requests.
  void noteVersion(const json& m) {
    if (!m.is_object() || !m.contains("result") || !m["result"].is_object()) return;
    const json& r = m["result"];
    if (!r.contains("protocolVersion") || !r["protocolVersion"].is_string() || !r.contains("capabilities")) return;
    std::string v = r["protocolVersion"].get<std::string>();
    if (v.size() > 32 || v.find_first_not_of("0123456789-") != std::string::npos) return;
    std::lock_guard lock(mu_);
    if (protocolVersion_.empty()) protocolVersion_ = v;
  }

  // --- the 2024-11-05 transport: GET an event stream; its `endpoint` event names where to POST
  void startLegacy(const std::string& line, const json& id, long status) {
    say("the first POST got HTTP " + std::to_string(status) + "; trying the older HTTP+SSE transport");
    legacy_ = true;
    std::thread([this] { legacyStream(); }).detach();
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::milliseconds(kEndpointWaitMs), [&] { return !postUrl_.empty() || !legacyError_.empty(); })) {
      fatal_ = "the server refused the first POST (HTTP " + std::to_string(status) +
               ") and sent no endpoint event on a GET either";
    } else if (!legacyError_.empty()) {
      fatal_ = legacyError_;
    }
    lock.unlock();
    if (!fatal_.empty()) return sendError(id, fatal_);
    postLegacy(line, id);
  }

  void legacyStream() {
    Exchange x;
    x.method = "GET";
    x.url = target_.url;
    for (const auto& [name, value] : job_.headers) x.headers.push_back(value.empty() ? name + ";" : name + ": " + value);
    x.headers.push_back("Accept: text/event-stream");
    x.connectTimeoutMs = kConnectMs;
    long status = 0;
    std::string type;
    SseParser sse(kMaxMessage + 16, kMaxMessage);
    x.onHead = [&](long s, const std::string& t, const std::string&) {
      status = s;
      type = t;
    };
    std::string problem;
    x.onBody = [&](std::string_view bytes) {
      if (status != 200 || type != "text/event-stream")
        return problem = "a GET of the URL got HTTP " + std::to_string(status) + " " + type + ", not an event stream", false;
      std::vector<SseEvent> events;
      bool ok = sse.feed(bytes, events);
      for (const auto& e : events) {
        if (e.type == "endpoint") {
          std::string absolute;
          std::lock_guard lock(mu_);
          if (!postUrl_.empty()) continue;
          if (auto why = sameOrigin(target_, e.data, absolute)) legacyError_ = *why;
          else postUrl_ = absolute;
          cv_.notify_all();
        } else if (e.type == "message") {
          bool answered = false;
          if (!relay(e.data, json(), answered)) say("an event that is not JSON was dropped");
        }
      }
      if (!ok) return problem = "the event stream broke the rules: " + sse.error(), false;
      std::lock_guard lock(mu_);
      return legacyError_.empty();
    };
    Outcome out = perform(target_, x);
    if (problem.empty()) problem = out.error.empty() ? "the server closed its event stream" : out.error;
    {
      std::lock_guard lock(mu_);
      if (legacyError_.empty()) legacyError_ = problem;
      cv_.notify_all();
      if (postUrl_.empty()) return;  // startLegacy reports it
    }
    say(problem + "; pine starts the server again");
    std::fflush(stderr);
    _exit(4);
  }

  void postLegacy(const std::string& line, const json& id) {
    Exchange x;
    {
      std::lock_guard lock(mu_);
      x.url = postUrl_;
    }
    for (const auto& [name, value] : job_.headers) x.headers.push_back(value.empty() ? name + ";" : name + ": " + value);
    x.headers.push_back("Content-Type: application/json");
    x.headers.push_back("Expect:");
    x.body = line;
    x.connectTimeoutMs = kConnectMs;
    x.totalTimeoutMs = kNotifyMs;
    long status = 0;
    x.onHead = [&](long s, const std::string&, const std::string&) { status = s; };
    x.onBody = [](std::string_view) { return true; };  // answers come on the stream
    Outcome out = perform(target_, x);
    if (status == 0) status = out.status;
    if (!out.error.empty()) return sendError(id, "cannot reach " + x.url + ": " + out.error);
    if (status < 200 || status >= 300) return sendError(id, "the server answered HTTP " + std::to_string(status));
  }

  // stdin's end: the broker let go. The server may forget the session now.
  void finish() {
    std::string session;
    {
      std::lock_guard lock(mu_);
      session = sessionId_;
    }
    if (session.empty() || legacy_ || !fatal_.empty()) return;
    Exchange x;
    x.method = "DELETE";
    x.url = target_.url;
    x.headers = headers(false);
    x.connectTimeoutMs = 3000;
    x.totalTimeoutMs = 5000;
    x.onBody = [](std::string_view) { return true; };
    perform(target_, x);
  }

  int fd_;
  RemoteJob job_;
  const std::vector<std::string> known_;
  Target target_;
  std::string pending_;
  std::string fatal_;  // set once: every request is answered with it
  std::atomic<bool> legacy_{false};
  bool initialized_ = false;
  int exitCode_ = 0;
  std::mutex outMu_;
  std::mutex mu_;
  std::condition_variable cv_;
  int inFlight_ = 0;
  std::string sessionId_, protocolVersion_, postUrl_, legacyError_;
};

}  // namespace

int runConnector(int fd) {
  // The job: one line, before anything else.
  std::string line;
  char c;
  while (line.size() <= kMaxJobBytes) {
    ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (c == '\n') {
      std::string why;
      auto job = parseJob(line, why);
      if (!job) break;
      Session s(fd, std::move(*job));
      return s.run();
    }
    line += c;
  }
  std::fputs("pine-mcp-remote: no valid job on fd 3\n", stderr);
  return 2;
}

}  // namespace pine::mcp_remote
