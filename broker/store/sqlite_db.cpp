#include "broker/store/sqlite_db.h"

#include "broker/store/wal_writes.h"

namespace pine::store::detail {

std::string hintFor(int rc) {
  switch (rc & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return "the file is damaged or not a SQLite database: stop pine, move it aside and restore a "
             "backup (or remove it to start with an empty store)";
    case SQLITE_FULL:
      return "the disk is full: free some space and try again";
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
      return "pine-broker must be able to read and write this file and its folder (data/, owned by "
             "pine's user)";
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return "another process holds the database: only pine-broker should open it, stop the other one";
    case SQLITE_IOERR:
      return "the disk reported an error: check it and its free space";
    case SQLITE_CONSTRAINT:
      return "a stored row breaks a rule of the schema: this is a bug in pine, please report it";
    default:
      return "if it persists, restore a backup of the file";
  }
}

void Db::fail(int rc, const std::string& what) const {
  std::string msg = what + " in " + path_ + " failed: ";
  msg += db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  msg += " (" + std::string(sqlite3_errstr(rc)) + "); " + hintFor(rc);
  throw StoreError(msg);
}

namespace {

// Before SQLite's first use in the process: no memory statistics, which pine never reads and
// which cost a global mutex around every allocation SQLite makes (about 2 % of the broker's CPU
// under single events). Where SQLite was already in use (a test's own connection) this changes
// nothing, and nothing depends on it.
const bool kConfigured = [] {
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  return true;
}();

}  // namespace

Db::Db(std::string path) : path_(std::move(path)) {
  (void)kConfigured;
  // NOFOLLOW: a link put where pine.db belongs would send our writes elsewhere.
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX;
  // Through wal_writes.h: a commit's WAL frames are one write, not two for each page.
  int rc = sqlite3_open_v2(path_.c_str(), &db_, flags, walWritesVfs());
  if (rc != SQLITE_OK) {
    std::string msg = "opening " + path_ + " failed: " + (db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc)) + "; " +
                      hintFor(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError(msg);
  }
  sqlite3_extended_result_codes(db_, 1);
}

Db::~Db() {
  for (auto& [sql, s] : cache_) sqlite3_finalize(s);
  sqlite3_close(db_);
}

Stmt Db::prepare(const char* sql, const char* what) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* s = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr);
    if (rc != SQLITE_OK) fail(rc, what);
    it = cache_.emplace(sql, s).first;
  }
  return Stmt(*this, it->second, what);
}

void Db::exec(const std::string& sql, const char* what) {
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) fail(rc, what);
}

void Db::rollbackQuietly() noexcept {
  // Called while an exception is on its way out: a failed ROLLBACK must not hide it, and
  // SQLite has then rolled back itself (or the connection is unusable anyway).
  if (!sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

long long Db::pragmaInt(const char* name) {
  std::string sql = std::string("PRAGMA ") + name;
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr);
  if (rc != SQLITE_OK) fail(rc, "reading " + std::string(name));
  rc = sqlite3_step(s);
  long long v = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
  sqlite3_finalize(s);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) fail(rc, "reading " + std::string(name));
  return v;
}

Stmt::~Stmt() { reset(); }

void Stmt::reset() {
  sqlite3_reset(s_);
  sqlite3_clear_bindings(s_);
}

Stmt& Stmt::bindKept(int i, const std::string& v) {
  int rc = sqlite3_bind_text(s_, i, v.data(), int(v.size()), SQLITE_STATIC);
  if (rc != SQLITE_OK) db_.fail(rc, what_);
  return *this;
}

Stmt& Stmt::bind(int i, const std::string& v) {
  int rc = sqlite3_bind_text(s_, i, v.data(), int(v.size()), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) db_.fail(rc, what_);
  return *this;
}
Stmt& Stmt::bind(int i, const char* v) { return bind(i, std::string(v)); }
Stmt& Stmt::bindBlob(int i, const std::string& bytes) {
  int rc = sqlite3_bind_blob64(s_, i, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) db_.fail(rc, what_);
  return *this;
}
Stmt& Stmt::bind(int i, long long v) {
  int rc = sqlite3_bind_int64(s_, i, v);
  if (rc != SQLITE_OK) db_.fail(rc, what_);
  return *this;
}
Stmt& Stmt::bind(int i, int v) { return bind(i, (long long)v); }
Stmt& Stmt::bind(int i, bool v) { return bind(i, v ? 1LL : 0LL); }
Stmt& Stmt::bind(int i, double v) {
  int rc = sqlite3_bind_double(s_, i, v);
  if (rc != SQLITE_OK) db_.fail(rc, what_);
  return *this;
}

int Stmt::stepCode() { return sqlite3_step(s_); }

bool Stmt::step() {
  int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_.fail(rc, what_);
}

void Stmt::run() {
  while (step()) {
  }
}

std::string Stmt::text(int col) const {
  auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, col));
  return p ? std::string(p, size_t(sqlite3_column_bytes(s_, col))) : std::string();
}

Tx::Tx(Db& db, const char* what) : db_(db), what_(what) {
  // IMMEDIATE takes the write lock now, so a busy database fails here and not at COMMIT.
  db_.prepare("BEGIN IMMEDIATE", what_).run();
}

Tx::~Tx() {
  if (open_) db_.rollbackQuietly();
}

void Tx::commit() {
  db_.prepare("COMMIT", what_).run();
  open_ = false;
}

}  // namespace pine::store::detail
