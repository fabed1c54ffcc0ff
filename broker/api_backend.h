// What the control API asks of the broker. ControlApi (HTTP mechanics, the
// owner checks, SSE) calls only this; Broker implements it. Keeping the two
// apart lets the API's attack tests run against a fake backend over real HTTP.
#pragma once
#include <kj/async.h>

#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <string>

namespace pine {

class Feed;

// status >= 400: body is {"error": "what, and how to fix it"}.
struct ApiReply {
  int status = 200;
  nlohmann::json body;
  int retryAfterSec = 0;  // > 0: sent as Retry-After (429)
  std::string text = {};  // when not empty: the body, already JSON text, sent instead of `body`
};

// A POST to /hooks/<name> as it arrived: every header (names lowercased) and the raw body.
struct HookDelivery {
  std::map<std::string, std::string> headers;  // a header that came twice: its last value
  std::set<std::string> repeated;              // the names that came more than once
  std::string body;
};

// A refusal the API answers: {"error": message} with that status.
inline ApiReply apiError(int status, std::string message) { return {status, {{"error", std::move(message)}}}; }

using ApiQuery = std::map<std::string, std::string>;  // the URL's query, decoded

class ApiBackend {
 public:
  virtual ~ApiBackend() noexcept(false) = default;

  // The bearer token in force (data/http-token); read for every request, so not copied.
  virtual const std::string& token() const = 0;

  virtual kj::Promise<ApiReply> status() = 0;                  // GET  /v1/status
  virtual kj::Promise<ApiReply> reload() = 0;                  // POST /v1/reload
  virtual ApiReply tasks(const ApiQuery& query) = 0;           // GET  /v1/tasks
  virtual ApiReply task(const std::string& id) = 0;            // GET  /v1/tasks/{id}
  virtual ApiReply listEvents(const ApiQuery& query) = 0;      // GET  /v1/events?topic=&after=&since=&source=&trust=&limit=
  // POST /v1/events {"topic", "payload"}: resolves once the event is committed to the store.
  virtual kj::Promise<ApiReply> publishEvent(const nlohmann::json& body) = 0;
  virtual ApiReply agents() = 0;                                // GET  /v1/agents
  // POST /v1/agents/{id}/messages {"text", "session"?}: {"task", "session"} or an error; the task runs on.
  virtual ApiReply sendMessage(const std::string& agent, const nlohmann::json& body) = 0;
  // The task's record once it has ended (done, failed or refused).
  virtual kj::Promise<ApiReply> taskResult(const std::string& taskId) = 0;
  virtual ApiReply resetAgent(const std::string& agent, const nlohmann::json& body) = 0;  // POST /v1/agents/{id}/reset
  virtual ApiReply setMode(const std::string& agent, const nlohmann::json& body) = 0;     // PUT  /v1/agents/{id}/mode
  // GET|PUT|DELETE /v1/agents/{id}/folder: the conversation's opened folder (owner_folder.cpp).
  virtual ApiReply folder(const std::string& method, const std::string& agent, const ApiQuery& query,
                          const nlohmann::json& body) {
    (void)method, (void)agent, (void)query, (void)body;
    return apiError(404, "this broker opens no folders");
  }
  virtual ApiReply approvals(const ApiQuery& query) = 0;                                   // GET  /v1/approvals
  virtual ApiReply approve(const std::string& id, bool always) = 0;                        // POST /v1/approvals/{id}/approve
  virtual ApiReply deny(const std::string& id) = 0;
  virtual ApiReply cancelTask(const std::string& id) = 0;  // POST /v1/tasks/{id}/cancel                                        // POST /v1/approvals/{id}/deny
  // GET /v1/tasks/{id}/changes?diff=0|1, POST /v1/tasks/{id}/undo {"force"?}: what an ended task changed in
  // its workspace, and putting it back (pined's checkpoints).
  virtual kj::Promise<ApiReply> taskChanges(const std::string&, bool) { return apiError(404, "this backend has no checkpoints"); }
  virtual kj::Promise<ApiReply> undoTask(const std::string&, bool) { return apiError(404, "this backend has no checkpoints"); }
  // GET /v1/usage?agent=&since=&by=&limit=: tokens and cost per agent, day and task, and budgets (owner_usage.cpp).
  virtual ApiReply usage(const ApiQuery&) { return apiError(404, "this backend keeps no usage"); }
  virtual ApiReply schedules() = 0;                                                        // GET  /v1/schedules
  virtual ApiReply getState(const std::string& key) = 0;                                   // GET  /v1/state/{key}
  virtual ApiReply putState(const std::string& key, const nlohmann::json& body) = 0;      // PUT  /v1/state/{key}

  // Sources and subscriptions (pinectl sources, subscriptions, subscribe, unsubscribe).
  virtual ApiReply sources() { return apiError(404, "this backend has no sources"); }  // GET /v1/sources
  // MCP servers (pinectl mcp): GET /v1/mcp; GET /v1/mcp/{server}/review shows what changed,
  // POST accepts it (the tools as they are now become the pinned ones).
  virtual kj::Promise<ApiReply> mcpServers() { return apiError(404, "this backend has no MCP servers"); }
  virtual kj::Promise<ApiReply> mcpReview(const std::string&, bool) {
    return apiError(404, "this backend has no MCP servers");
  }
  // GET /v1/subscriptions?agent=
  virtual ApiReply subscriptions(const ApiQuery&) { return apiError(404, "this backend has no subscriptions"); }
  // POST /v1/subscriptions {"agent", "session"?, "source", "topic"?, "separate"?}
  virtual ApiReply subscribe(const nlohmann::json&) { return apiError(404, "this backend has no subscriptions"); }
  // DELETE /v1/subscriptions/{id}
  virtual ApiReply unsubscribe(const std::string&) { return apiError(404, "this backend has no subscriptions"); }

  // Telegram pairings (pinectl pair, pinectl pairings). A backend without telegram sources
  // answers 404.
  virtual ApiReply telegramPairings() { return apiError(404, "no telegram source is configured"); }  // GET /v1/telegram/pairings
  // GET /v1/telegram/codes/{code}: the account a pairing code names, to be shown before it is paired.
  virtual ApiReply telegramCode(const std::string&) { return apiError(404, "no telegram source is configured"); }
  // POST /v1/telegram/codes/{code}/pair|deny: the code is spent either way.
  virtual ApiReply decideTelegramCode(const std::string&, bool) {
    return apiError(404, "no telegram source is configured");
  }
  // DELETE /v1/telegram/pairings/{source}/{userId}
  virtual ApiReply removeTelegramPairing(const std::string&, const std::string&) {
    return apiError(404, "no telegram source is configured");
  }

  // Webhooks (hook_intake.h): no control token; each hook carries its own secret.
  // The body cap of hook `name`, or 0 when there is none (404 before the body is read).
  virtual uint64_t hookBodyLimit(const std::string&) { return 0; }
  // POST /hooks/{name}: 202 {"event"} once committed, 200 {"event", "repeat": true} for a delivery
  // already taken, 401, 413, 415, 429 (Retry-After) or 404.
  virtual kj::Promise<ApiReply> hook(const std::string&, HookDelivery) {
    return apiError(404, "no webhook of that name");
  }

  // Live notifications, each a JSON object with a "kind":
  //   {"kind":"event", "event":{...the event as GET /v1/events lists it, with "seq"}}
  //   {"kind":"task", "task":"ID", "state":"queued|running|done|failed", ...}
  //   {"kind":"approval", "approval":{...as GET /v1/approvals lists it}, "task":"ID"}
  //   {"kind":"progress", "task":"ID", "text":"..."}   (tool calls and answer text as they happen)
  virtual Feed& feed() = 0;
};

}  // namespace pine
