// What the event benchmarks (bench-events, bench-mqtt) measure against: the raw SQLite
// floor (the store's events table, its pragmas, one prepared insert, a transaction per
// batch) and the CPU time a thread or a process has used. Header-only, like bench_client.h.
#pragma once
#include <openssl/rand.h>
#include <sqlite3.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <string>

#include "tests/integration/harness.h"

namespace pine::bench {

using Clock = std::chrono::steady_clock;

inline double secs(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

inline double threadCpu() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

inline void check(sqlite3* db, int rc, const char* what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW)
    throw std::runtime_error(std::string("floor: ") + what + ": " + sqlite3_errmsg(db));
}

// An id shaped like the broker's (broker/event_bus.cpp newId): time, counter, random bytes, so the
// UNIQUE index sees keys of the same length and order.
inline std::string eventId(long long ms, unsigned n) {
  unsigned char r[4];
  RAND_bytes(r, sizeof r);
  char id[64];
  snprintf(id, sizeof id, "e%llx-%x-%02x%02x%02x%02x", ms, n, r[0], r[1], r[2], r[3]);
  return id;
}

// The floor: the store's events table as broker/store/migrations.cpp creates it (same columns, CHECK and
// indexes), the store's pragmas, one prepared insert, BEGIN IMMEDIATE .. COMMIT per batch.
inline double rawSqliteRate(const std::string& dir, int total, int batch, double* cpuSecs,
                            const std::string& file = "raw.db") {
  std::string path = dir + "/" + file;
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) throw std::runtime_error("floor: cannot open " + path);
  check(db,
        sqlite3_exec(db,
                     "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;"
                     "PRAGMA secure_delete=ON; PRAGMA journal_size_limit=16777216;"
                     "CREATE TABLE events(seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,"
                     " topic TEXT NOT NULL, time_ms INTEGER NOT NULL, source TEXT NOT NULL,"
                     " trust TEXT NOT NULL CHECK (trust IN ('owner', 'untrusted')), payload TEXT NOT NULL,"
                     " hops INTEGER NOT NULL DEFAULT 0, origin TEXT NOT NULL DEFAULT '');"
                     "CREATE INDEX events_by_topic ON events(topic, seq); CREATE INDEX events_by_time ON events(time_ms);",
                     nullptr, nullptr, nullptr),
        "creating the table");
  sqlite3_stmt* st = nullptr;
  check(db,
        sqlite3_prepare_v2(db,
                           "INSERT INTO events(id, topic, time_ms, source, trust, payload, hops, origin) "
                           "VALUES(?,?,?,?,?,?,?,?)",
                           -1, &st, nullptr),
        "preparing the insert");
  auto t0 = Clock::now();
  double c0 = threadCpu();
  long long ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  for (int i = 0; i < total; i += batch) {
    check(db, sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), "BEGIN");
    for (int k = i; k < std::min(total, i + batch); ++k) {
      std::string id = eventId(ms, (unsigned)k), topic = "bench/t" + std::to_string(k % 8),
                  payload = "{\"n\":" + std::to_string(k) + "}";
      sqlite3_bind_text(st, 1, id.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(st, 2, topic.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64(st, 3, ms);
      sqlite3_bind_text(st, 4, "owner", -1, SQLITE_STATIC);
      sqlite3_bind_text(st, 5, "owner", -1, SQLITE_STATIC);
      sqlite3_bind_text(st, 6, payload.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_int(st, 7, 0);
      sqlite3_bind_text(st, 8, "control-api", -1, SQLITE_STATIC);
      check(db, sqlite3_step(st), "inserting");
      sqlite3_reset(st);
    }
    check(db, sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr), "COMMIT");
  }
  double rate = total / secs(t0, Clock::now());
  *cpuSecs = threadCpu() - c0;
  sqlite3_finalize(st);
  sqlite3_close(db);
  return rate;
}

// CPU time (user + system) a process has used so far, from /proc/<pid>/stat, in seconds.
inline double processCpu(pid_t pid) {
  std::string stat = pine::test::readText("/proc/" + std::to_string(pid) + "/stat");
  size_t close = stat.rfind(')');
  if (close == std::string::npos) throw std::runtime_error("cannot read /proc/" + std::to_string(pid) + "/stat");
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; rest >> field; ++i) {  // field 3 is the state; 14 utime, 15 stime
    if (i == 14) utime = std::stoull(field);
    if (i == 15) {
      stime = std::stoull(field);
      break;
    }
  }
  return double(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

}  // namespace pine::bench
