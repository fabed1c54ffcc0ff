// Events per second from HTTP publish to the durable store to delivery (an SSE
// listener receives each one after routing), against raw SQLite inserts with
// the same batching, measured in the same run; and the overhead of an approval
// (request, approved through the API at once, the worker resumes), as the
// difference of median run times with and without it.
#include <sqlite3.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.h"

using Clock = std::chrono::steady_clock;
using namespace pine::test;

namespace {

double secs(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// The floor: the store's events table shape, WAL, synchronous=NORMAL, prepared insert, same batch size.
double rawSqliteRate(const std::string& dir, int total, int batch) {
  std::string path = dir + "/raw.db";
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) throw std::runtime_error("sqlite open");
  sqlite3_exec(db,
               "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
               "CREATE TABLE events(seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, topic TEXT NOT NULL,"
               " time_ms INTEGER NOT NULL, source TEXT NOT NULL, trust TEXT NOT NULL, payload TEXT NOT NULL,"
               " hops INTEGER NOT NULL, origin TEXT NOT NULL);"
               "CREATE INDEX events_topic ON events(topic, seq); CREATE INDEX events_time ON events(time_ms);",
               nullptr, nullptr, nullptr);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "INSERT INTO events(id, topic, time_ms, source, trust, payload, hops, origin) VALUES(?,?,?,?,?,?,?,?)",
                     -1, &st, nullptr);
  auto t0 = Clock::now();
  for (int i = 0; i < total; i += batch) {
    sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
    for (int k = i; k < std::min(total, i + batch); ++k) {
      std::string id = "e" + std::to_string(k), topic = "bench/t" + std::to_string(k % 8),
                  payload = "{\"n\":" + std::to_string(k) + "}";
      sqlite3_bind_text(st, 1, id.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(st, 2, topic.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64(st, 3, k);
      sqlite3_bind_text(st, 4, "owner", -1, SQLITE_STATIC);
      sqlite3_bind_text(st, 5, "owner", -1, SQLITE_STATIC);
      sqlite3_bind_text(st, 6, payload.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_int(st, 7, 0);
      sqlite3_bind_text(st, 8, "bench", -1, SQLITE_STATIC);
      sqlite3_step(st);
      sqlite3_reset(st);
    }
    sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  }
  double rate = total / secs(t0, Clock::now());
  sqlite3_finalize(st);
  sqlite3_close(db);
  return rate;
}

int connectUnix(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  if (connect(fd, (sockaddr*)&a, sizeof a) != 0) throw std::runtime_error("connect " + path);
  return fd;
}

std::string token(const std::string& home) {
  std::string t = readText(home + "/data/http-token");
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

// One keep-alive connection: POST, then read exactly the answer.
class Client {
 public:
  Client(const std::string& home) : fd_(connectUnix(home + "/pine.sock")), token_(token(home)) {}
  ~Client() { close(fd_); }
  int post(const std::string& path, const std::string& body, std::string* out = nullptr) {
    std::string req = "POST " + path + " HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + token_ +
                      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    for (size_t off = 0; off < req.size();) {
      ssize_t n = write(fd_, req.data() + off, req.size() - off);
      if (n <= 0) return -1;
      off += (size_t)n;
    }
    std::string in;
    char buf[65536];
    size_t headEnd = std::string::npos, want = 0;
    while (true) {
      ssize_t n = read(fd_, buf, sizeof buf);
      if (n <= 0) return -1;
      in.append(buf, (size_t)n);
      if (headEnd == std::string::npos && (headEnd = in.find("\r\n\r\n")) != std::string::npos) {
        std::string head = in.substr(0, headEnd);
        for (auto& c : head) c = (char)tolower((unsigned char)c);
        auto cl = head.find("content-length:");
        want = headEnd + 4 + (cl == std::string::npos ? 0 : std::stoul(head.substr(cl + 15)));
      }
      if (headEnd != std::string::npos && in.size() >= want) break;
    }
    if (out) *out = in.substr(headEnd + 4, want - headEnd - 4);
    return atoi(in.c_str() + 9);
  }

 private:
  int fd_;
  std::string token_;
};

// Reads an SSE stream and counts `data:` lines (each one event) until told to stop.
class SseCounter {
 public:
  SseCounter(const std::string& home, const std::string& path, std::function<void(const nlohmann::json&)> onData = {})
      : fd_(connectUnix(home + "/pine.sock")), onData_(std::move(onData)) {
    std::string req = "GET " + path + " HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + token(home) +
                      "\r\nAccept: text/event-stream\r\n\r\n";
    if (write(fd_, req.data(), req.size()) != (ssize_t)req.size()) throw std::runtime_error("sse write");
    thread_ = std::thread([this] { loop(); });
  }
  ~SseCounter() {
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
  }
  std::atomic<long> count{0};
  std::atomic<long long> lastNs{0};

 private:
  void loop() {
    std::string buf;
    char chunk[65536];
    while (true) {
      ssize_t n = read(fd_, chunk, sizeof chunk);
      if (n <= 0) return;
      buf.append(chunk, (size_t)n);
      size_t pos;
      while ((pos = buf.find('\n')) != std::string::npos) {
        std::string line = buf.substr(0, pos);
        buf.erase(0, pos + 1);
        if (line.rfind("data:", 0) == 0) {
          if (onData_) {
            auto j = nlohmann::json::parse(line.substr(5), nullptr, false);
            if (!j.is_discarded()) onData_(j);
          }
          ++count;
          lastNs = Clock::now().time_since_epoch().count();
        }
      }
    }
  }
  int fd_;
  std::function<void(const nlohmann::json&)> onData_;
  std::thread thread_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  setenv("PINE_BIN_DIR", PINE_BUILD_BIN, 0);
  setenv("PINE_SOURCE_DIR", PINE_SOURCE, 0);
  int total = argc > 1 ? atoi(argv[1]) : 40000;
  const int batch = 100, clients = 2, runs = argc > 2 ? atoi(argv[2]) : 25;
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeMinimalConfig(home, {"main", "asker"});
  // A route is evaluated for every event; none matches the benchmark's topics, so no run starts.
  writeText(home + "/pine.yaml", readText(home + "/pine.yaml") +
                                     "security:\n  approvalTimeout: 60\nroutes:\n  - topic: alarms/#\n    agent: main\n");
  writeText(home + "/providers/replies.yaml",
            "replies:\n  - match: \"\"\n    turns:\n      - tool_calls: [{name: send, arguments: {to: owner, text: hi}}]\n"
            "      - text: done\n");
  writeText(home + "/agents/main/agent.yaml", "description: m\ntools: [read, send]\n");
  writeText(home + "/agents/asker/agent.yaml", "description: a\ntools: [read, send]\napprove: [\"send:owner\"]\n");
  Pined pined(home, {}, {});

  double floor = rawSqliteRate(dir.path(), total, batch);

  // ---- publish -> store -> delivered ---------------------------------------------------
  SseCounter sse(home, "/v1/events/stream?topic=bench/%23");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto t0 = Clock::now();
  std::vector<std::thread> pubs;
  std::atomic<int> failures{0};
  for (int c = 0; c < clients; ++c)
    pubs.emplace_back([&, c] {
      Client cl(home);
      for (int i = c * batch; i < total; i += batch * clients) {
        nlohmann::json events = nlohmann::json::array();
        for (int k = i; k < std::min(total, i + batch); ++k)
          events.push_back({{"topic", "bench/t" + std::to_string(k % 8)}, {"payload", {{"n", k}}}});
        if (cl.post("/v1/events", nlohmann::json{{"events", events}}.dump()) != 200) ++failures;
      }
    });
  for (auto& p : pubs) p.join();
  auto acked = Clock::now();
  while (sse.count < total && secs(acked, Clock::now()) < 30) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto delivered = Clock::time_point(Clock::duration(sse.lastNs.load()));
  double rate = sse.count / secs(t0, delivered);
  printf("events: %d in batches of %d over %d connections; %ld delivered to an SSE listener, %d failed posts\n",
         total, batch, clients, sse.count.load(), failures.load());
  printf("  floor: raw SQLite inserts, batches of %d   %10.0f events/s\n", batch, floor);
  printf("  pine: HTTP publish -> store -> delivered   %10.0f events/s   (%.2fx of the floor; target >= 20000/s)\n",
         rate, rate / floor);

  // ---- approval overhead -----------------------------------------------------------------
  // Both agents run the same script (one `send`, then an answer); only `asker` has send on its approve
  // list. Each run is started without waiting and watched the same way, so only the approval differs.
  std::vector<double> with, without;
  auto runOnce = [&](const std::string& agent, bool approve) {
    Client cl(home);
    auto s = Clock::now();
    std::string out;
    cl.post("/v1/agents/" + agent + "/messages", "{\"text\": \"go\", \"wait\": false}", &out);
    std::string task = nlohmann::json::parse(out)["task"];
    bool answered = !approve;
    while (true) {
      if (!answered) {
        auto listed = pined.api("GET", "/v1/approvals").json();  // bound: a temporary's element would dangle in range-for
        for (auto& a : listed["approvals"])
          if (a["task"] == task) {
            cl.post("/v1/approvals/" + a["id"].get<std::string>() + "/approve", "{}");
            answered = true;
          }
      }
      auto j = pined.api("GET", "/v1/tasks?agent=" + agent + "&limit=1").json();
      if (!j["tasks"].empty() && j["tasks"][0]["id"] == task && j["tasks"][0]["state"] != "running" &&
          j["tasks"][0]["state"] != "queued")
        break;
    }
    return secs(s, Clock::now()) * 1000;
  };
  for (int i = 0; i < runs; ++i) {
    without.push_back(runOnce("main", false));
    with.push_back(runOnce("asker", true));
  }
  double mw = median(with), mo = median(without);
  printf("approval: %d runs each, median run %.1f ms with an approval answered at once, %.1f ms without\n", runs, mw, mo);
  printf("  overhead %.2f ms at the median (target <= 5 ms)\n", mw - mo);
  return 0;
}
