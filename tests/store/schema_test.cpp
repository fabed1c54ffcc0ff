// Opening pine.db: schema steps, files that are refused, the pragmas and the file mode.
#include <unistd.h>

#include "broker/store/migrations.h"
#include "tests/store/helpers.h"

using namespace pine::store;
using namespace storetest;

namespace {

// Schema version 1 as released: the tables, without the indexes step 2 adds. Frozen here so
// that an edit of a released step (which databases in the field already ran) is noticed.
const char* kV1 = R"sql(
CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, topic TEXT NOT NULL,
  time_ms INTEGER NOT NULL, source TEXT NOT NULL, trust TEXT NOT NULL CHECK (trust IN ('owner', 'untrusted')),
  payload TEXT NOT NULL, hops INTEGER NOT NULL DEFAULT 0, origin TEXT NOT NULL DEFAULT '');
CREATE TABLE tasks (id TEXT PRIMARY KEY NOT NULL, agent TEXT NOT NULL, session TEXT NOT NULL, text TEXT NOT NULL,
  trust TEXT NOT NULL CHECK (trust IN ('owner', 'untrusted')),
  state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed', 'refused')),
  answer TEXT NOT NULL DEFAULT '', error TEXT NOT NULL DEFAULT '', parent TEXT NOT NULL DEFAULT '',
  event_id TEXT NOT NULL DEFAULT '', depth INTEGER NOT NULL DEFAULT 0, created_ms INTEGER NOT NULL,
  started_ms INTEGER NOT NULL DEFAULT 0, ended_ms INTEGER NOT NULL DEFAULT 0, tokens_in INTEGER NOT NULL DEFAULT 0,
  tokens_out INTEGER NOT NULL DEFAULT 0, cost REAL NOT NULL DEFAULT 0);
CREATE TABLE sessions (agent TEXT NOT NULL, session TEXT NOT NULL, tainted INTEGER NOT NULL DEFAULT 0,
  taint_reason TEXT NOT NULL DEFAULT '', mode_override TEXT NOT NULL DEFAULT '',
  bypass_anyway INTEGER NOT NULL DEFAULT 0, created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL,
  PRIMARY KEY (agent, session));
CREATE TABLE messages (seq INTEGER PRIMARY KEY AUTOINCREMENT, agent TEXT NOT NULL, session TEXT NOT NULL,
  task_id TEXT NOT NULL DEFAULT '', role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool', 'event', 'note')),
  content TEXT NOT NULL, time_ms INTEGER NOT NULL,
  FOREIGN KEY (agent, session) REFERENCES sessions (agent, session) ON DELETE CASCADE);
CREATE TABLE approvals (id TEXT PRIMARY KEY NOT NULL, agent TEXT NOT NULL, session TEXT NOT NULL,
  task_id TEXT NOT NULL DEFAULT '', tool TEXT NOT NULL, args TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '',
  always_offered INTEGER NOT NULL DEFAULT 0, always_scope TEXT NOT NULL DEFAULT '',
  state TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'denied', 'timeout', 'cancelled')),
  always INTEGER NOT NULL DEFAULT 0, created_ms INTEGER NOT NULL, expires_ms INTEGER NOT NULL DEFAULT 0,
  decided_ms INTEGER NOT NULL DEFAULT 0, decided_by TEXT NOT NULL DEFAULT '', tainted INTEGER NOT NULL DEFAULT 0);
CREATE TABLE grants (agent TEXT NOT NULL, session TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('always', 'read', 'write', 'network')), value TEXT NOT NULL,
  while_tainted INTEGER NOT NULL DEFAULT 0, created_ms INTEGER NOT NULL, PRIMARY KEY (agent, session, kind, value),
  FOREIGN KEY (agent, session) REFERENCES sessions (agent, session) ON DELETE CASCADE);
CREATE TABLE state (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL, updated_ms INTEGER NOT NULL,
  updated_by TEXT NOT NULL DEFAULT '');
CREATE TABLE subscriptions (id TEXT PRIMARY KEY NOT NULL, agent TEXT NOT NULL, session TEXT NOT NULL,
  source TEXT NOT NULL, topic TEXT NOT NULL DEFAULT '', separate INTEGER NOT NULL DEFAULT 0,
  throttle_sec INTEGER NOT NULL DEFAULT 10, created_ms INTEGER NOT NULL, last_delivered_ms INTEGER NOT NULL DEFAULT 0);
CREATE TABLE schedule_runs (schedule TEXT PRIMARY KEY NOT NULL, last_ms INTEGER NOT NULL,
  task_id TEXT NOT NULL DEFAULT '');
CREATE TABLE pairings (channel TEXT NOT NULL, account TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'paired', 'denied')), code TEXT NOT NULL DEFAULT '',
  created_ms INTEGER NOT NULL, decided_ms INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (channel, account));
PRAGMA application_id = 1885957733;
PRAGMA user_version = 1;
)sql";

std::string indexes(const std::string& path) {
  Raw raw(path);
  return raw.text("SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_schema WHERE type = 'index' "
                  "AND name NOT LIKE 'sqlite_%' ORDER BY name)");
}

}  // namespace

TEST_CASE("open: a missing file is created, migrated to the latest version, WAL, mode 600") {
  TempDir dir;
  mode_t old = umask(022);
  auto s = Store::open(dir.db());
  umask(old);
  CHECK(Store::latestSchemaVersion() == 11);
  CHECK(s->schemaVersion() == Store::latestSchemaVersion());
  CHECK(s->path() == dir.db());
  std::vector<Event> b = {ev("e")};
  s->appendEvents(b);  // the WAL file now exists
  for (const char* suffix : {"", "-wal"}) {
    struct stat st {};
    REQUIRE(::stat((dir.db() + suffix).c_str(), &st) == 0);
    INFO(suffix);
    CHECK((st.st_mode & 0777) == 0600);
  }
  Raw raw(dir.db());
  CHECK(raw.text("PRAGMA journal_mode") == "wal");
  CHECK(raw.text("PRAGMA application_id") == "1885957733");
  CHECK(indexes(dir.db()).find("events_by_topic") != std::string::npos);
  CHECK(indexes(dir.db()).find("messages_by_session") != std::string::npos);
}

TEST_CASE("open: an existing empty file is fine; a readable-by-others file is narrowed to 600") {
  TempDir dir;
  { std::ofstream(dir.db()).flush(); }
  REQUIRE(::chmod(dir.db().c_str(), 0644) == 0);
  auto s = Store::open(dir.db());
  CHECK(s->schemaVersion() == 11);
  struct stat st {};
  REQUIRE(::stat(dir.db().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
}

TEST_CASE("open: reopening keeps the data and runs no step again") {
  TempDir dir;
  {
    auto s = Store::open(dir.db());
    s->putState({"k", "1", 1, "x"});
  }
  auto s = Store::open(dir.db());
  CHECK(s->state("k")->value == "1");
  CHECK(s->schemaVersion() == 11);
}

TEST_CASE("open: a hand-made version 1 database is migrated and keeps its rows") {
  TempDir dir;
  {
    Raw raw(dir.db());
    raw.exec(kV1);
    raw.exec("INSERT INTO events (id, topic, time_ms, source, trust, payload) VALUES ('old', 'mqtt/x', 5, 'mqtt', "
             "'untrusted', '{}')");
    raw.exec("INSERT INTO sessions (agent, session, created_ms, updated_ms) VALUES ('main', 'main', 1, 2)");
    raw.exec("INSERT INTO messages (agent, session, role, content, time_ms) VALUES ('main', 'main', 'user', '{}', 3)");
  }
  CHECK(indexes(dir.db()).empty());
  auto s = Store::open(dir.db());
  CHECK(s->schemaVersion() == 11);
  CHECK(indexes(dir.db()).find("events_by_time") != std::string::npos);
  CHECK(indexes(dir.db()).find("tasks_by_origin") != std::string::npos);  // v4: the Telegram channel
  CHECK(indexes(dir.db()).find("hook_deliveries_by_expiry") != std::string::npos);  // v5: webhook deliveries
  CHECK(Raw(dir.db()).text("SELECT count(*) FROM sqlite_master WHERE name IN ('source_state', 'source_status')") == "2");  // v6
  // v11: the event stored before it counts as counted (the broker of then counted it), so a
  // broker's catch-up at start does not count it again.
  CHECK(s->sourceCountsSeq() == 1);
  auto e = s->event("old");
  REQUIRE(e);
  CHECK(e->seq == 1);
  std::vector<Event> b = {ev("new")};
  s->appendEvents(b);
  CHECK(b[0].seq == 2);
  CHECK(s->messages("main", "main").size() == 1);
}

TEST_CASE("open: a version 1 task is migrated with no request, attempt 0, and an empty journal") {
  TempDir dir;
  {
    Raw raw(dir.db());
    raw.exec(kV1);
    raw.exec("INSERT INTO tasks (id, agent, session, text, trust, state, created_ms) VALUES ('t-old', 'main', "
             "'main', 'hello', 'owner', 'running', 5)");
  }
  auto s = Store::open(dir.db());
  auto t = s->task("t-old");
  REQUIRE(t);
  CHECK(t->request == "{}");
  CHECK(t->origin == "");
  CHECK(t->attempt == 0);
  CHECK(s->steps("t-old").empty());
  CHECK(s->unfinishedTasks().size() == 1);
}

TEST_CASE("open: a step that fails leaves the database at the version before it") {
  TempDir dir;
  {
    Raw raw(dir.db());
    // Version 1 in name only: no events table, so step 2's first index cannot be made.
    raw.exec("CREATE TABLE tasks (id TEXT); PRAGMA application_id = 1885957733; PRAGMA user_version = 1;");
  }
  std::string err = errorOf([&] { Store::open(dir.db()); });
  CHECK(err.find("schema step 2") != std::string::npos);
  CHECK(err.find("stays at version 1") != std::string::npos);
  CHECK(err.find(dir.db()) != std::string::npos);
  Raw raw(dir.db());
  CHECK(raw.text("PRAGMA user_version") == "1");
  CHECK(indexes(dir.db()).empty());
}

TEST_CASE("open: a newer schema is refused, naming version, file and the fix") {
  TempDir dir;
  {
    Raw raw(dir.db());
    raw.exec("CREATE TABLE future (x); PRAGMA application_id = 1885957733; PRAGMA user_version = 99;");
  }
  std::string err = errorOf([&] { Store::open(dir.db()); });
  CHECK(err.find("schema version 99") != std::string::npos);
  CHECK(err.find("knows up to " + std::to_string(pine::store::detail::latestVersion())) != std::string::npos);
  CHECK(err.find(dir.db()) != std::string::npos);
  CHECK(err.find("upgrade pine or restore a backup") != std::string::npos);
  Raw raw(dir.db());
  CHECK(raw.text("PRAGMA user_version") == "99");  // untouched
  CHECK(raw.text("PRAGMA journal_mode") == "delete");
}

TEST_CASE("open: a file that is not SQLite is refused, naming the file") {
  TempDir dir;
  const std::string text = "this is not a database, it is a shopping list: eggs, milk, and more text to fill a header";
  { std::ofstream(dir.db()) << text; }
  std::string err = errorOf([&] { Store::open(dir.db()); });
  CHECK(err.find(dir.db()) != std::string::npos);
  CHECK(err.find("not a database") != std::string::npos);
  CHECK(err.find("restore a backup") != std::string::npos);
  CHECK(fileBytes(dir.db()) == text);  // nothing was written into it
}

TEST_CASE("open: another program's SQLite database is refused; pine's own opens") {
  TempDir dir;
  {
    Raw raw(dir.db());
    raw.exec("CREATE TABLE photos (id INTEGER PRIMARY KEY, path TEXT)");
  }
  std::string err = errorOf([&] { Store::open(dir.db()); });
  CHECK(err.find("not pine's") != std::string::npos);
  CHECK(err.find(dir.db()) != std::string::npos);
  Raw raw(dir.db());
  CHECK(raw.text("SELECT count(*) FROM sqlite_schema WHERE name = 'events'") == "0");
}

TEST_CASE("open: a symbolic link is refused; the file it points to opens") {
  TempDir dir;
  std::string real = dir.path + "/real.db";
  { Store::open(real); }
  REQUIRE(::symlink(real.c_str(), dir.db().c_str()) == 0);
  std::string err = errorOf([&] { Store::open(dir.db()); });
  CHECK(err.find("symbolic link") != std::string::npos);
  CHECK(Store::open(real)->schemaVersion() == Store::latestSchemaVersion());
}

TEST_CASE("open: a missing folder says to create it") {
  TempDir dir;
  std::string err = errorOf([&] { Store::open(dir.path + "/data/pine.db"); });
  CHECK(err.find("create the folder " + dir.path + "/data") != std::string::npos);
  std::filesystem::create_directory(dir.path + "/data");
  CHECK(Store::open(dir.path + "/data/pine.db")->schemaVersion() == Store::latestSchemaVersion());
}

TEST_CASE("webhook deliveries: remembered until they expire, then dropped") {
  TempDir dir;
  auto s = Store::open(dir.db());
  CHECK_FALSE(s->hookDelivery("gh", "id:1", 100).has_value());
  s->rememberHookDelivery("gh", "id:1", "ev-1", 1000, 100);
  CHECK(s->hookDelivery("gh", "id:1", 999) == std::optional<std::string>("ev-1"));
  CHECK_FALSE(s->hookDelivery("other", "id:1", 999).has_value());  // per hook
  CHECK_FALSE(s->hookDelivery("gh", "id:1", 1000).has_value());    // expired
  s->rememberHookDelivery("gh", "id:2", "ev-2", 5000, 2000);        // drops id:1's row
  Raw raw(dir.db());
  CHECK(raw.text("SELECT count(*) FROM hook_deliveries") == "1");
}
