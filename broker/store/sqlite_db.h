// A thin layer over the SQLite C API, internal to the store: one connection, prepared
// statements cached by their text, every error a StoreError naming the file.
#pragma once
#include <sqlite3.h>

#include <string>
#include <unordered_map>

#include "broker/store/rows.h"

namespace pine::store::detail {

class Db;

// One use of a cached statement: bind, step, read columns. Reset when it goes out of scope,
// so the next use starts clean even after an exception.
class Stmt {
 public:
  Stmt(Db& db, sqlite3_stmt* s, const char* what) : db_(db), s_(s), what_(what) {}
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& bind(int i, const std::string& v);
  Stmt& bind(int i, const char* v);
  Stmt& bind(int i, long long v);
  Stmt& bind(int i, int v);
  Stmt& bind(int i, double v);
  Stmt& bind(int i, bool v);
  Stmt& bindBlob(int i, const std::string& bytes);
  // Binds without a copy: `v` must stay unchanged until the next reset() or the Stmt's end.
  Stmt& bindKept(int i, const std::string& v);
  // Clears the last use (result and bindings), for the next in a loop of many.
  void reset();

  bool step();     // true: a row is ready; false: done. Throws on any error.
  int stepCode();  // the raw result code, for callers that explain a constraint themselves
  void run();      // a statement that returns no row

  long long i64(int col) const { return sqlite3_column_int64(s_, col); }
  int i32(int col) const { return sqlite3_column_int(s_, col); }
  double f64(int col) const { return sqlite3_column_double(s_, col); }
  bool flag(int col) const { return sqlite3_column_int(s_, col) != 0; }
  std::string text(int col) const;

 private:
  Db& db_;
  sqlite3_stmt* s_;
  const char* what_;
};

class Db {
 public:
  // Opens an existing file read-write; never creates it (Store::open does, with mode 600).
  explicit Db(std::string path);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  const std::string& path() const { return path_; }
  sqlite3* handle() const { return db_; }
  Stmt prepare(const char* sql, const char* what);  // cached by text
  void exec(const std::string& sql, const char* what);  // uncached, may hold several statements
  long long pragmaInt(const char* name);
  long long changes() const { return sqlite3_changes64(db_); }
  long long lastRowid() const { return sqlite3_last_insert_rowid(db_); }
  [[noreturn]] void fail(int rc, const std::string& what) const;
  void rollbackQuietly() noexcept;

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
  std::unordered_map<std::string, sqlite3_stmt*> cache_;
};

// BEGIN IMMEDIATE ... COMMIT; rolls back when it goes out of scope uncommitted.
class Tx {
 public:
  Tx(Db& db, const char* what);
  ~Tx();
  Tx(const Tx&) = delete;
  Tx& operator=(const Tx&) = delete;
  void commit();

 private:
  Db& db_;
  const char* what_;
  bool open_ = true;
};

// How to fix a failure with this result code, as a sentence ending the error message.
std::string hintFor(int rc);

}  // namespace pine::store::detail
