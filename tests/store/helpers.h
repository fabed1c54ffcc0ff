// Shared by the store tests: a fresh folder per test, raw SQLite access, sample rows.
#pragma once
#include <doctest/doctest.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "broker/store/store.h"

namespace storetest {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/pine-store-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string db() const { return path + "/pine.db"; }
};

// A second connection that bypasses the store: to build old or foreign files, and to look.
struct Raw {
  sqlite3* db = nullptr;
  explicit Raw(const std::string& path) { REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK); }
  ~Raw() { sqlite3_close(db); }
  void exec(const std::string& sql) {
    char* err = nullptr;
    int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    INFO(sql << " -> " << (err ? err : ""));
    sqlite3_free(err);
    REQUIRE(rc == SQLITE_OK);
  }
  std::string text(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    REQUIRE(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK);
    std::string out;
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
      out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    return out;
  }
};

inline std::string fileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline pine::store::Event ev(const std::string& id, const std::string& topic = "mqtt/door", long long timeMs = 1000,
                             const std::string& trust = "untrusted", const std::string& source = "mqtt") {
  pine::store::Event e;
  e.id = id;
  e.topic = topic;
  e.timeMs = timeMs;
  e.source = source;
  e.trust = trust;
  e.payload = R"({"state":"open"})";
  e.hops = 1;
  e.origin = source;
  return e;
}

inline std::vector<pine::store::Event> allEvents(pine::store::Store& s) {
  std::vector<pine::store::Event> out;
  pine::store::EventQuery q;
  q.limit = 10000;
  for (;;) {
    auto page = s.events(q);
    if (page.empty()) break;
    q.afterSeq = page.back().seq;
    out.insert(out.end(), page.begin(), page.end());
  }
  return out;
}

inline pine::store::TaskRow sampleTask(const std::string& id, const std::string& agent, const std::string& state,
                                       long long created) {
  pine::store::TaskRow t;
  t.id = id;
  t.agent = agent;
  t.session = "main";
  t.text = "summarise the notes";
  t.trust = "owner";
  t.state = state;
  t.createdMs = created;
  return t;
}

inline std::string errorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const pine::store::StoreError& e) {
    return e.what();
  }
  return "";
}

}  // namespace storetest
