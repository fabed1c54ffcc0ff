#include "broker/store/migrations.h"

namespace pine::store::detail {

namespace {

// v1: the tables. Text columns are NOT NULL with '' for "none", so rows map 1:1 to the structs.
const char* kV1 = R"sql(
CREATE TABLE events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,  -- AUTOINCREMENT: a seq is never reused, even after retention
  id TEXT NOT NULL UNIQUE,
  topic TEXT NOT NULL,
  time_ms INTEGER NOT NULL,
  source TEXT NOT NULL,
  trust TEXT NOT NULL CHECK (trust IN ('owner', 'untrusted')),
  payload TEXT NOT NULL,
  hops INTEGER NOT NULL DEFAULT 0,
  origin TEXT NOT NULL DEFAULT ''
);
CREATE TABLE tasks (
  id TEXT PRIMARY KEY NOT NULL,
  agent TEXT NOT NULL,
  session TEXT NOT NULL,
  text TEXT NOT NULL,
  trust TEXT NOT NULL CHECK (trust IN ('owner', 'untrusted')),
  state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed', 'refused')),
  answer TEXT NOT NULL DEFAULT '',
  error TEXT NOT NULL DEFAULT '',
  parent TEXT NOT NULL DEFAULT '',
  event_id TEXT NOT NULL DEFAULT '',
  depth INTEGER NOT NULL DEFAULT 0,
  created_ms INTEGER NOT NULL,
  started_ms INTEGER NOT NULL DEFAULT 0,
  ended_ms INTEGER NOT NULL DEFAULT 0,
  tokens_in INTEGER NOT NULL DEFAULT 0,
  tokens_out INTEGER NOT NULL DEFAULT 0,
  cost REAL NOT NULL DEFAULT 0
);
CREATE TABLE sessions (
  agent TEXT NOT NULL,
  session TEXT NOT NULL,
  tainted INTEGER NOT NULL DEFAULT 0,
  taint_reason TEXT NOT NULL DEFAULT '',
  mode_override TEXT NOT NULL DEFAULT '',
  bypass_anyway INTEGER NOT NULL DEFAULT 0,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  PRIMARY KEY (agent, session)
);
CREATE TABLE messages (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  agent TEXT NOT NULL,
  session TEXT NOT NULL,
  task_id TEXT NOT NULL DEFAULT '',
  role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool', 'event', 'note')),
  content TEXT NOT NULL,
  time_ms INTEGER NOT NULL,
  FOREIGN KEY (agent, session) REFERENCES sessions (agent, session) ON DELETE CASCADE
);
CREATE TABLE approvals (
  id TEXT PRIMARY KEY NOT NULL,
  agent TEXT NOT NULL,
  session TEXT NOT NULL,
  task_id TEXT NOT NULL DEFAULT '',
  tool TEXT NOT NULL,
  args TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  always_offered INTEGER NOT NULL DEFAULT 0,
  always_scope TEXT NOT NULL DEFAULT '',
  state TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'denied', 'timeout', 'cancelled')),
  always INTEGER NOT NULL DEFAULT 0,
  created_ms INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL DEFAULT 0,
  decided_ms INTEGER NOT NULL DEFAULT 0,
  decided_by TEXT NOT NULL DEFAULT '',
  tainted INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE grants (
  agent TEXT NOT NULL,
  session TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('always', 'read', 'write', 'network')),
  value TEXT NOT NULL,
  while_tainted INTEGER NOT NULL DEFAULT 0,
  created_ms INTEGER NOT NULL,
  PRIMARY KEY (agent, session, kind, value),
  FOREIGN KEY (agent, session) REFERENCES sessions (agent, session) ON DELETE CASCADE
);
CREATE TABLE state (
  key TEXT PRIMARY KEY NOT NULL,
  value TEXT NOT NULL,
  updated_ms INTEGER NOT NULL,
  updated_by TEXT NOT NULL DEFAULT ''
);
CREATE TABLE subscriptions (
  id TEXT PRIMARY KEY NOT NULL,
  agent TEXT NOT NULL,
  session TEXT NOT NULL,
  source TEXT NOT NULL,
  topic TEXT NOT NULL DEFAULT '',
  separate INTEGER NOT NULL DEFAULT 0,
  throttle_sec INTEGER NOT NULL DEFAULT 10,
  created_ms INTEGER NOT NULL,
  last_delivered_ms INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE schedule_runs (
  schedule TEXT PRIMARY KEY NOT NULL,
  last_ms INTEGER NOT NULL,
  task_id TEXT NOT NULL DEFAULT ''
);
CREATE TABLE pairings (
  channel TEXT NOT NULL,
  account TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'paired', 'denied')),
  code TEXT NOT NULL DEFAULT '',
  created_ms INTEGER NOT NULL,
  decided_ms INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (channel, account)
);
PRAGMA application_id = 1885957733;
)sql";

// v2: indexes for the queries Store makes (events by seq is the primary key).
const char* kV2 = R"sql(
CREATE INDEX events_by_topic ON events (topic, seq);
CREATE INDEX events_by_time ON events (time_ms);
CREATE INDEX tasks_by_agent ON tasks (agent, created_ms);
CREATE INDEX tasks_by_state ON tasks (state, created_ms);
CREATE INDEX sessions_by_updated ON sessions (updated_ms);
CREATE INDEX messages_by_session ON messages (agent, session, seq);
CREATE INDEX approvals_by_state ON approvals (state, created_ms);
CREATE INDEX subscriptions_by_agent ON subscriptions (agent, created_ms);
)sql";

// v3: what a crash of the broker must not lose (issue 12). A task keeps what started it
// (origin, request) and how often it was resumed (attempt); the journal of its tool calls
// says which were carried out, and which were cut off; pined's boot tells a restart of the
// broker from a fresh start of pined; mode switches last until pined restarts.
const char* kV3 = R"sql(
ALTER TABLE tasks ADD COLUMN origin TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN request TEXT NOT NULL DEFAULT '{}';
ALTER TABLE tasks ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;
CREATE TABLE task_steps (
  task_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  attempt INTEGER NOT NULL DEFAULT 0,
  tool TEXT NOT NULL,
  args TEXT NOT NULL,
  args_hash TEXT NOT NULL,
  side TEXT NOT NULL CHECK (side IN ('worker', 'broker')),
  state TEXT NOT NULL CHECK (state IN ('pending', 'done', 'failed', 'unknown')),
  result TEXT NOT NULL DEFAULT '',
  approval_id TEXT NOT NULL DEFAULT '',
  answered INTEGER NOT NULL DEFAULT 0,
  started_ms INTEGER NOT NULL,
  ended_ms INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (task_id, seq),
  FOREIGN KEY (task_id) REFERENCES tasks (id) ON DELETE CASCADE
);
CREATE INDEX task_steps_by_state ON task_steps (state);
CREATE INDEX approvals_by_task ON approvals (task_id, created_ms);
CREATE TABLE boot (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  boot_id TEXT NOT NULL,
  started_ms INTEGER NOT NULL
);
CREATE TABLE mode_switches (
  agent TEXT PRIMARY KEY NOT NULL,
  mode TEXT NOT NULL CHECK (mode IN ('manual', 'auto', 'bypass')),
  set_ms INTEGER NOT NULL
);
)sql";

// v4: the Telegram channel (issue 14). A pairing knows its account's chat and names and when
// its code expires (the code itself is kept only as a hash); the long poll's offset and the
// updates fetched but not handled; each chat's conversation; approvals shown with buttons;
// answers owed to chats; files sent with a task, until its worker has saved them.
const char* kV4 = R"sql(
ALTER TABLE pairings ADD COLUMN chat_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pairings ADD COLUMN name TEXT NOT NULL DEFAULT '';
ALTER TABLE pairings ADD COLUMN username TEXT NOT NULL DEFAULT '';
ALTER TABLE pairings ADD COLUMN expires_ms INTEGER NOT NULL DEFAULT 0;
CREATE INDEX pairings_by_code ON pairings (code);
CREATE TABLE telegram_polls (
  source TEXT PRIMARY KEY NOT NULL,
  next_update INTEGER NOT NULL
);
CREATE TABLE telegram_inbox (
  source TEXT NOT NULL,
  update_id INTEGER NOT NULL,
  body TEXT NOT NULL,
  PRIMARY KEY (source, update_id)
);
CREATE TABLE telegram_chats (
  source TEXT NOT NULL,
  chat_id INTEGER NOT NULL,
  session TEXT NOT NULL,
  PRIMARY KEY (source, chat_id)
);
CREATE TABLE telegram_cards (
  approval_id TEXT NOT NULL,
  source TEXT NOT NULL,
  chat_id INTEGER NOT NULL,
  message_id INTEGER NOT NULL DEFAULT 0,
  ref TEXT NOT NULL UNIQUE,
  state TEXT NOT NULL CHECK (state IN ('open', 'closed')),
  PRIMARY KEY (approval_id, source, chat_id)
);
CREATE TABLE telegram_replies (
  task_id TEXT PRIMARY KEY NOT NULL,
  source TEXT NOT NULL,
  chat_id INTEGER NOT NULL
);
CREATE INDEX tasks_by_origin ON tasks (origin, created_ms);
CREATE TABLE task_files (
  task_id TEXT NOT NULL,
  idx INTEGER NOT NULL,
  path TEXT NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY (task_id, idx),
  FOREIGN KEY (task_id) REFERENCES tasks (id) ON DELETE CASCADE
);
)sql";

// v5: webhook deliveries already turned into events, so that a sender's retry is acknowledged
// and not delivered twice (issue 15). key: "id:<delivery id>" or "body:<sha-256 of the signed body>".
constexpr const char* kV5 = R"sql(
CREATE TABLE hook_deliveries (
  hook TEXT NOT NULL,
  key TEXT NOT NULL,
  event_id TEXT NOT NULL,
  expires_ms INTEGER NOT NULL,
  PRIMARY KEY (hook, key)
);
CREATE INDEX hook_deliveries_by_expiry ON hook_deliveries (expires_ms);
)sql";

// v6: what sources remember between looks (an ETag, the hash of what was last found, the files
// already seen), and each source's status line (issue 15). Rows of a source that left the
// configuration are dropped by forgetSource.
constexpr const char* kV6 = R"sql(
CREATE TABLE source_state (
  source TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  updated_ms INTEGER NOT NULL,
  PRIMARY KEY (source, key)
);
CREATE TABLE source_status (
  source TEXT PRIMARY KEY NOT NULL,
  looked_ms INTEGER NOT NULL DEFAULT 0,
  found TEXT NOT NULL DEFAULT '',
  event_ms INTEGER NOT NULL DEFAULT 0,
  events INTEGER NOT NULL DEFAULT 0,
  errors INTEGER NOT NULL DEFAULT 0,
  error_ms INTEGER NOT NULL DEFAULT 0,
  error TEXT NOT NULL DEFAULT ''
);
)sql";

// v7: the first tool list of each MCP server as the owner accepted it (issue 16): names,
// descriptions, schemas and their hashes as JSON (broker/mcp/tool_pins.h). A later list that differs
// disables the changed tools until `pinectl mcp review` writes the new list here.
constexpr const char* kV7 = R"sql(
CREATE TABLE mcp_pins (
  agent TEXT NOT NULL,
  server TEXT NOT NULL,
  pins TEXT NOT NULL,
  pinned_ms INTEGER NOT NULL,
  PRIMARY KEY (agent, server)
);
)sql";

// v8: what each task changed in its agent's workspace (issue 17 point 7), as pine-checkpoint
// counted it when the task's worker ended: how many files, their names (JSON), and whether the
// run was tainted. The files themselves stay in pined's checkpoint folder, never here.
constexpr const char* kV8 = R"sql(
CREATE TABLE task_changes (
  task_id TEXT PRIMARY KEY NOT NULL,
  agent TEXT NOT NULL,
  tainted INTEGER NOT NULL,
  files INTEGER NOT NULL,
  names TEXT NOT NULL,
  checked_ms INTEGER NOT NULL
);
)sql";

// v9: the folder the owner opened for a conversation (pinectl chat /folder, PUT
// /v1/agents/{id}/folder), '' for none; a reset clears it.
constexpr const char* kV9 = R"sql(
ALTER TABLE sessions ADD COLUMN folder TEXT NOT NULL DEFAULT '';
)sql";

// v10: usage and cost (issue 17 point 6). Cache reads and writes are counted apart from the
// uncached input, and a task whose model had no pricing says so (unpriced_tokens) instead of a
// cost of 0 that looks known. Before v10 an unpriced model's calls were stored with cost 0:
// a row with tokens and no cost is taken to be one of those (a priced model charges something
// for any token unless its prices are 0, which then shows as unknown, never as a wrong sum).
constexpr const char* kV10 = R"sql(
ALTER TABLE tasks ADD COLUMN cache_read INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN cache_write INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN unpriced_tokens INTEGER NOT NULL DEFAULT 0;
UPDATE tasks SET unpriced_tokens = tokens_in + tokens_out WHERE cost = 0 AND tokens_in + tokens_out > 0;
)sql";

// v11: how far the sources' event counts reach (the seq of the last event counted), written in one
// transaction with the counts. The broker saves counts every few seconds: one that was killed
// counts at its next start what was committed after that seq, instead of leaving the status
// lines short for good. Events stored before v11 were counted by then.
constexpr const char* kV11 = R"sql(
CREATE TABLE source_counts (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  counted_seq INTEGER NOT NULL
);
INSERT INTO source_counts (id, counted_seq) SELECT 1, coalesce(max(seq), 0) FROM events;
)sql";

}  // namespace

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> list = {
      {1, "creating the tables", kV1},
      {2, "creating the indexes", kV2},
      {3, "adding the task journal, pined's boot and mode switches", kV3},
      {4, "adding the Telegram channel's tables", kV4},
      {5, "adding webhook deliveries", kV5},
      {6, "adding the sources' memory and status", kV6},
      {7, "adding MCP servers' pinned tool lists", kV7},
      {8, "adding what each task changed in its workspace", kV8},
      {9, "adding conversations' opened folders", kV9},
      {10, "adding cache tokens and unpriced usage to tasks", kV10},
      {11, "adding how far the sources' event counts reach", kV11},
  };
  return list;
}

int latestVersion() { return migrations().back().version; }

void checkOpenable(Db& db) {
  // The first read of the file: a file that is not SQLite fails here, before any write.
  long long version = db.pragmaInt("user_version");
  long long app = db.pragmaInt("application_id");
  long long tables = 0;
  {
    auto st = db.prepare("SELECT count(*) FROM sqlite_schema", "reading the schema");
    if (st.step()) tables = st.i64(0);
  }
  bool empty = version == 0 && app == 0 && tables == 0;
  if (!empty && app != kApplicationId)
    throw StoreError(db.path() + " is a SQLite database but not pine's (application_id " + std::to_string(app) +
                     ", schema version " + std::to_string(version) +
                     "): point pine at its own data/pine.db, or move this file aside");
  if (version > latestVersion())
    throw StoreError(db.path() + " has schema version " + std::to_string(version) + " but this pine knows up to " +
                     std::to_string(latestVersion()) +
                     ": it was written by a newer pine; upgrade pine or restore a backup");
}

void migrate(Db& db) {
  long long version = db.pragmaInt("user_version");
  for (const auto& m : migrations()) {
    if (m.version <= version) continue;
    std::string what = "schema step " + std::to_string(m.version) + " (" + m.what + ")";
    try {
      Tx tx(db, "starting a schema step");
      db.exec(m.sql, m.what);
      db.exec("PRAGMA user_version = " + std::to_string(m.version), m.what);
      tx.commit();
    } catch (const StoreError& e) {
      throw StoreError("migrating " + db.path() + " to " + what + " failed, the database stays at version " +
                       std::to_string(version) + ": " + e.what());
    }
    version = m.version;
  }
}

}  // namespace pine::store::detail
