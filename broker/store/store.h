// pine-broker's durable store: one SQLite database, <home>/data/pine.db.
// Called from one thread (the broker's event loop), synchronous; every call returns after its
// transaction committed, so what it acknowledges survives a crash of the process. Only the WAL's
// checkpoints may run on a thread of the store's own (checkpointInBackground).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "broker/store/rows.h"

namespace pine::store {

namespace detail {
class Db;
class BackgroundCheckpoints;
}

// When the WAL is checkpointed in the background (Store::checkpointInBackground).
struct CheckpointLimits {
  int pages = 1000;         // new frames in the WAL that ask for a checkpoint (SQLite's default)
  int restartPages = 4000;  // frames after which the writer copies the rest itself, so the WAL restarts
};

class Store {
 public:
  // Creates the file (mode 600) if missing, turns on WAL, migrates to the current schema.
  // Refuses a symbolic link, a file that is not SQLite or not pine's, and a newer schema.
  static std::unique_ptr<Store> open(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::string& path() const;
  // From now on the WAL is checkpointed on a thread of the store's own, with its own connection,
  // so that no commit waits for a checkpoint's copying and syncing (background_checkpoints.h).
  // The broker's store does this; by default a commit checkpoints as SQLite does.
  void checkpointInBackground(CheckpointLimits limits = {});
  // Checkpoints run by that thread so far, and by commits to restart the WAL (for the tests).
  unsigned long long backgroundCheckpoints() const;
  unsigned long long restartCheckpoints() const;
  int schemaVersion() const;
  static int latestSchemaVersion();

  // One transaction for the whole batch; assigns seq; returns only after COMMIT. Throws and
  // commits nothing if any insert fails (e.g. a duplicate id); seq stays 0 then.
  void appendEvents(std::vector<Event>& batch);
  std::vector<Event> events(const EventQuery& q) const;
  std::optional<Event> event(const std::string& id) const;

  void putTask(const TaskRow& t);  // insert or replace
  std::optional<TaskRow> task(const std::string& id) const;
  // Newest first; "" matches every agent / state.
  std::vector<TaskRow> tasks(int limit, const std::string& agent = "", const std::string& state = "") const;
  std::vector<TaskRow> unfinishedTasks() const;  // queued or running, oldest first

  // ---- usage and cost (store_usage.cpp, schema v10) ----
  // Adds to a task's stored usage (model calls as they happen, so that a crash loses none).
  void addTaskUsage(const std::string& id, const Usage& usage);
  // Each sums the tasks created at or after sinceMs (a task counts on the day it was created);
  // agent "" is every agent.
  Usage usageSince(const std::string& agent, long long sinceMs) const;
  std::vector<UsageGroup> usageByAgent(const std::string& agent, long long sinceMs) const;  // by agent id
  // By the machine's local day ("YYYY-MM-DD") and agent: newest day first.
  std::vector<UsageGroup> usageByDay(const std::string& agent, long long sinceMs) const;
  // The tasks that used a model, newest first, at most `limit`; and how many there are.
  std::vector<UsageTask> usageByTask(const std::string& agent, long long sinceMs, int limit) const;
  long long tasksWithUsage(const std::string& agent, long long sinceMs) const;
  double costliestTask(const std::string& agent, long long sinceMs) const;  // 0 without tasks

  std::optional<SessionRow> session(const std::string& agent, const std::string& session) const;
  void putSession(const SessionRow& s);  // insert or update in place (never drops its messages)
  std::vector<SessionRow> sessions(const std::string& agent) const;  // most recently updated first
  // Clears the conversation: its messages, taint, grants, mode override, "bypass anyway" and folder;
  // subscriptions stay.
  void resetSession(const std::string& agent, const std::string& session);
  // The folder the owner opened for a conversation ("" for none; a reset clears it). Setting
  // creates the session row when missing; "" closes the folder.
  std::string sessionFolder(const std::string& agent, const std::string& session) const;
  void setSessionFolder(const std::string& agent, const std::string& session, const std::string& folder,
                        long long nowMs);

  // One transaction. Creates the session row if missing and moves its updatedMs forward.
  void appendMessages(const std::vector<MessageRow>& rows);
  // Oldest first, the last `limit`.
  std::vector<MessageRow> messages(const std::string& agent, const std::string& session, int limit = 1000) const;

  void putApproval(const ApprovalRow& a);  // insert or replace
  std::optional<ApprovalRow> approval(const std::string& id) const;
  // pendingOnly: the queue, oldest first; otherwise all, newest first.
  std::vector<ApprovalRow> approvals(bool pendingOnly, int limit = 100) const;
  // Moves a pending approval to `state` (approved|denied|timeout|cancelled); false if it was not
  // pending (or is unknown). Throws if `always` is asked of an approval that did not offer it,
  // or with a state other than approved.
  bool decideApproval(const std::string& id, const std::string& state, bool always, const std::string& by,
                      long long nowMs);

  // The approvals one task asked for, oldest first.
  std::vector<ApprovalRow> approvalsOfTask(const std::string& taskId) const;

  // The journal of a task's tool calls (after a crash of the broker, a resumed run is told what
  // was carried out and what was cut off). The task's row must exist; its steps go with it.
  // Records a call about to be carried out (state pending, or as given); returns its seq.
  long long addStep(StepRow s);
  // Settles one pending step: done, failed or unknown, with what it returned. False if it was
  // not pending.
  bool settleStep(const std::string& taskId, long long seq, const std::string& state, const std::string& result,
                  long long nowMs);
  // Settles every pending step of the task carried out by `side`; returns how many.
  long long settlePendingSteps(const std::string& taskId, const std::string& side, const std::string& state,
                               long long nowMs);
  // Every pending step of every task becomes unknown: the broker starts, whatever ran was cut off.
  long long interruptPendingSteps(long long nowMs);
  void markStepAnswered(const std::string& taskId, long long seq);
  std::vector<StepRow> steps(const std::string& taskId) const;  // by seq

  // What lasts until pined restarts, not only its broker. pined names each of its starts by a
  // boot id; the broker passes it here when it starts. A boot id other than the stored one is a
  // fresh start of pined: every grant and mode switch is removed in the same transaction and
  // true returned. The same one is a restart of the broker alone: nothing is removed.
  bool beginBoot(const std::string& bootId, long long nowMs);
  // pinectl mode: an agent's mode until pined restarts (mode: manual|auto|bypass).
  void setModeSwitch(const std::string& agent, const std::string& mode, long long nowMs);
  std::vector<std::pair<std::string, std::string>> modeSwitches() const;  // (agent, mode), by agent

  // Creates the session row if missing. The same grant again keeps the first and widens
  // whileTainted (a yes given while tainted holds).
  void addGrant(const GrantRow& g);
  std::vector<GrantRow> grants(const std::string& agent, const std::string& session) const;
  // Grants hold until the conversation is reset or the daemon restarts (beginBoot calls this
  // on a fresh start of pined). Returns how many were removed.
  long long removeAllGrants();

  std::optional<StateRow> state(const std::string& key) const;
  void putState(const StateRow& s);
  std::vector<StateRow> states(const std::string& prefix) const;  // byte-wise key prefix, by key

  void putSubscription(const SubscriptionRow& s);  // insert or replace
  bool removeSubscription(const std::string& id);
  std::vector<SubscriptionRow> subscriptions(const std::string& agent = "") const;
  void touchSubscription(const std::string& id, long long deliveredMs);

  std::optional<long long> lastRun(const std::string& schedule) const;
  void setLastRun(const std::string& schedule, long long ms, const std::string& taskId);

  // ---- webhook deliveries (store_hooks.cpp) ----
  // The event a delivery (hook, key) became, while its record has not expired.
  std::optional<std::string> hookDelivery(const std::string& hook, const std::string& key, long long nowMs) const;
  // Remembers it until expiresMs; drops the records that have expired by nowMs.
  void rememberHookDelivery(const std::string& hook, const std::string& key, const std::string& eventId,
                            long long expiresMs, long long nowMs);

  // ---- MCP servers' pinned tool lists (store_mcp.cpp, schema v7) ----
  // The JSON of the pins (broker/mcp/tool_pins.h) of server `server` of `agent`; nullopt when never pinned.
  std::optional<std::string> mcpPins(const std::string& agent, const std::string& server) const;
  // What a task changed in its workspace (v8, store_changes.cpp): names is a JSON array of paths.
  void setTaskChanges(const TaskChangesRow& row);
  std::optional<TaskChangesRow> taskChanges(const std::string& taskId) const;
  void setMcpPins(const std::string& agent, const std::string& server, const std::string& pinsJson, long long nowMs);

  // ---- sources' memory and status lines (store_sources.cpp) ----
  // What a source remembers between looks, by (source, key): kept across restarts.
  std::optional<std::string> sourceState(const std::string& source, const std::string& key) const;
  std::map<std::string, std::string> sourceStates(const std::string& source) const;  // by key
  void putSourceState(const std::string& source, const std::string& key, const std::string& value, long long nowMs);
  void putSourceStates(const std::string& source, const std::map<std::string, std::string>& values, long long nowMs);  // one transaction
  bool removeSourceState(const std::string& source, const std::string& key);
  // The status line. A found value that is not a number or a single word is stored as "".
  void noteSourceLook(const std::string& source, long long nowMs, const std::string& found);
  void noteSourceEvents(const std::string& source, long long nowMs, long long count);
  // Counts of many sources, and the seq of the last event they cover, in one transaction.
  struct SourceCount {
    long long events = 0, lastMs = 0;
  };
  void saveSourceCounts(const std::map<std::string, SourceCount>& counts, long long countedSeq);
  long long sourceCountsSeq() const;  // the last seq saveSourceCounts covered
  // Each source's events after `seq`, with the newest time and the last seq among them.
  struct SourceEventsAfter {
    std::string source;
    long long events = 0, lastMs = 0, lastSeq = 0;
  };
  std::vector<SourceEventsAfter> sourceEventsAfter(long long seq) const;
  void noteSourceError(const std::string& source, long long nowMs, const std::string& error);
  std::optional<SourceStatusRow> sourceStatus(const std::string& source) const;
  std::vector<SourceStatusRow> sourceStatuses() const;  // by source
  // Drops a source's memory and status line (it left the configuration). Returns rows removed.
  long long forgetSource(const std::string& source);
  // Drops a source's memory only (what it watches changed: a folder's path). Returns rows removed.
  long long forgetSourceState(const std::string& source);
  // Every source with memory or a status line, by name.
  std::vector<std::string> rememberedSources() const;

  // ---- owner channels (store_telegram.cpp) ----
  void putPairing(const PairingRow& p);  // insert or replace
  std::optional<PairingRow> pairing(const std::string& channel, const std::string& account) const;
  std::vector<PairingRow> pairings(const std::string& channel) const;
  // The pending pairing whose code has this hash, on any channel.
  std::optional<PairingRow> pairingByCode(const std::string& codeHash) const;
  bool removePairing(const std::string& channel, const std::string& account);

  // Telegram's long poll: the next update id to ask for, and the updates fetched but not yet
  // handled. Updates and the new offset are stored in one transaction, so an update is neither
  // lost (Telegram forgets it once the next poll confirms it) nor fetched twice.
  long long telegramOffset(const std::string& source) const;
  void acceptTelegramUpdates(const std::string& source, const std::vector<TelegramUpdateRow>& updates,
                             long long nextOffset);
  std::vector<TelegramUpdateRow> telegramInbox(const std::string& source) const;  // by update id
  void telegramUpdateHandled(const std::string& source, long long updateId);
  // The conversation a chat talks in ("" when it has none yet).
  std::string telegramChatSession(const std::string& source, long long chatId) const;
  void setTelegramChatSession(const std::string& source, long long chatId, const std::string& session);
  void putTelegramCard(const TelegramCardRow& c);  // insert or replace
  std::optional<TelegramCardRow> telegramCardByRef(const std::string& ref) const;
  std::vector<TelegramCardRow> telegramCards(const std::string& approvalId) const;
  std::vector<TelegramCardRow> telegramOpenCards(const std::string& source) const;
  // Answers owed to chats: the task and where its answer goes, until it is sent.
  void addTelegramReply(const std::string& taskId, const std::string& source, long long chatId);
  std::vector<std::pair<std::string, std::pair<std::string, long long>>> telegramReplies() const;
  void telegramReplySent(const std::string& taskId);
  // Files that came with a task (a photo sent in Telegram), kept until the task ends: the worker
  // saves each at its path in the workspace.
  void putTaskFile(const std::string& taskId, int index, const std::string& path, const std::string& data);
  std::vector<std::string> taskFilePaths(const std::string& taskId) const;  // by index
  std::optional<std::string> taskFileData(const std::string& taskId, int index) const;
  void removeTaskFiles(const std::string& taskId);
  // The newest task with this origin (a repeated update must not start its run twice).
  std::optional<TaskRow> taskWithOrigin(const std::string& origin) const;

  // Retention (limits.eventRetentionDays), one transaction: events, ended tasks, decided
  // approvals older than cutoff; messages of sessions untouched since cutoff.
  PurgeCounts purgeOlderThan(long long cutoffMs);

  // Layer 10: a secret that reached the store is rewritten out of event payloads, task texts,
  // answers and errors, message contents, approval arguments and reasons, state values, and the
  // journal's arguments and results (fn returns the redacted text). JSON stays JSON: fn also
  // sees every decoded string, so an
  // escaped secret is found too. One transaction; the old text is zeroed in the file
  // (secure_delete) and the WAL truncated. Returns how many stored values changed.
  long long rewriteText(const std::function<std::string(const std::string&)>& fn);

 private:
  explicit Store(std::unique_ptr<detail::Db> db);
  std::unique_ptr<detail::Db> db_;
  std::unique_ptr<detail::BackgroundCheckpoints> checkpoints_;  // after db_: stops before it closes
};

}  // namespace pine::store
