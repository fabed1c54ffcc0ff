// The rows the broker keeps in pine.db, one struct per table, and the store's one error type.
// JSON-text fields hold JSON as text; the store checks it parses and never interprets it.
#pragma once
#include <stdexcept>
#include <string>

namespace pine::store {

// Every failure of the store: the message says what failed, which file, and how to fix it.
// Messages never carry stored content (payloads, texts), only ids and names.
struct StoreError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Event {
  long long seq = 0;  // assigned by the store on commit, strictly increasing, never reused
  std::string id, topic;
  long long timeMs = 0;
  std::string source;
  std::string trust;    // "owner" | "untrusted"
  std::string payload;  // JSON text
  int hops = 0;
  std::string origin;  // e.g. "agent:main/main" or a source name
};

struct EventQuery {
  long long afterSeq = 0;   // 0: from the start
  long long sinceMs = 0;    // 0: any time
  std::string topicPrefix;  // SQL-side prefix filter, byte-wise ("agent/" does not match "agents/x")
  std::string source, trust;
  int limit = 100;  // clamped to 1..10000
  bool newestFirst = false;
};

// What a task changed in its agent's workspace (broker/task_changes.h).
struct TaskChangesRow {
  std::string taskId, agent;
  bool tainted = false;
  long long files = 0;
  std::string names = "[]";  // JSON array of workspace-relative paths
  long long checkedMs = 0;
};

// Model usage: tokens by kind as the provider reported them (input is the uncached part of the
// prompt; cache reads and writes are counted apart) and the cost estimated from models.yaml
// pricing, cache prices included. unpricedTokens: tokens of model calls whose model had no
// pricing; while there are any the cost is unknown (cost then holds only the priced calls' part).
struct Usage {
  long long tokensIn = 0, tokensOut = 0, cacheRead = 0, cacheWrite = 0;
  double cost = 0;
  long long unpricedTokens = 0;
  long long tokens() const { return tokensIn + tokensOut + cacheRead + cacheWrite; }
  bool costKnown() const { return unpricedTokens == 0; }
  bool any() const { return tokens() > 0 || cost > 0; }
  Usage& operator+=(const Usage& o) {
    tokensIn += o.tokensIn;
    tokensOut += o.tokensOut;
    cacheRead += o.cacheRead;
    cacheWrite += o.cacheWrite;
    cost += o.cost;
    unpricedTokens += o.unpricedTokens;
    return *this;
  }
};

struct TaskRow {
  std::string id, agent, session, text, trust, state;  // state: queued|running|done|failed|refused
  std::string answer, error, parent, eventId;
  std::string origin;          // who started it: owner, route:NAME, schedule:NAME, delegate:TASK, ...
  std::string request = "{}";  // JSON text: the rest of what started it, for resuming after a crash
  int attempt = 0;             // 0: as submitted; n: resumed n times after a crash of the broker
  int depth = 0;
  long long createdMs = 0, startedMs = 0, endedMs = 0;
  Usage usage;
};

struct SessionRow {
  std::string agent, session;
  bool tainted = false;
  std::string taintReason;
  std::string modeOverride;
  bool bypassAnyway = false;
  long long createdMs = 0, updatedMs = 0;
};

struct MessageRow {
  long long seq = 0;  // assigned by the store; ignored by appendMessages
  std::string agent, session, taskId, role;  // role: user|assistant|tool|event|note
  std::string content;                       // JSON text
  long long timeMs = 0;
};

struct ApprovalRow {
  std::string id, agent, session, taskId, tool, args, reason;  // args: JSON text, already redacted
  bool alwaysOffered = false;
  std::string alwaysScope;
  std::string state;  // pending|approved|denied|timeout|cancelled
  bool always = false;
  long long createdMs = 0, expiresMs = 0, decidedMs = 0;
  std::string decidedBy;
  bool tainted = false;
};

struct GrantRow {
  std::string agent, session, kind, value;  // kind: always|read|write|network
  bool whileTainted = false;
  long long createdMs = 0;
};

// One tool call of a task, in the journal a resumed run is told about (recovery after a
// crash of the broker): recorded before the call is carried out, then settled.
struct StepRow {
  std::string taskId;
  long long seq = 0;  // assigned by addStep: 1, 2, ... within the task
  int attempt = 0;    // the task's attempt that made the call
  std::string tool;
  std::string args;      // JSON text (clipped to a JSON string when long)
  std::string argsHash;  // SHA-256 hex of the full arguments' JSON text: what a repeat is matched by
  std::string side;      // worker|broker: who carries it out
  std::string state;     // pending|done|failed|unknown
  std::string result;    // what a broker-side call returned (clipped); "" for the worker's
  std::string approvalId;  // the approval it went ahead on, if any
  bool answered = false;   // a resumed run's exact repeat was answered from here (once)
  long long startedMs = 0, endedMs = 0;
};

struct StateRow {
  std::string key, value;  // value: JSON text
  long long updatedMs = 0;
  std::string updatedBy;
};

struct SubscriptionRow {
  std::string id, agent, session, source, topic;
  bool separate = false;
  int throttleSec = 10;
  long long createdMs = 0, lastDeliveredMs = 0;
};

// An account that wrote to an owner channel: "telegram:SOURCE" and the user id. pending: a
// code was sent to it (code holds the code's SHA-256, hex, until expiresMs); paired or denied
// by the owner.
struct PairingRow {
  std::string channel, account, state, code;  // state: pending|paired|denied
  long long createdMs = 0, decidedMs = 0;
  long long chatId = 0;
  std::string name, username;
  long long expiresMs = 0;
};

// An approval shown in a chat: the message with its buttons, and the reference its buttons
// carry (unguessable, bound to that chat).
// A source's status line (`pinectl sources`): when it last looked and what it found, its events
// and errors. `found` is a number or a single word, or empty (layer 5: agents read it unmarked).
struct SourceStatusRow {
  std::string source;
  long long lookedMs = 0;
  std::string found;
  long long eventMs = 0;
  long long events = 0;
  long long errors = 0;
  long long errorMs = 0;
  std::string error;
};

struct TelegramCardRow {
  std::string approvalId, source;
  long long chatId = 0, messageId = 0;
  std::string ref;
  std::string state;  // open|closed (the message shows the decision)
};

// A fetched update not yet handled.
struct TelegramUpdateRow {
  long long updateId = 0;
  std::string body;  // the update as Telegram sent it (JSON)
};

// One group of GET /v1/usage: an agent, a day of an agent ("YYYY-MM-DD", the machine's local
// day), and how many tasks it holds.
struct UsageGroup {
  std::string agent, day;
  long long tasks = 0;
  Usage usage;
};

// One task's usage, as GET /v1/usage lists it.
struct UsageTask {
  std::string id, agent, session, state;
  long long createdMs = 0;
  Usage usage;
};

struct PurgeCounts {
  long long events = 0, tasks = 0, messages = 0, approvals = 0;
};

}  // namespace pine::store
