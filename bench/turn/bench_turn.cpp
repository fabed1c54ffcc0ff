// One owner message to its answer through every process (control API -> broker ->
// pined spawns a sandboxed worker -> the `script` model asks for a `read` -> the
// answer comes back), against a bare fork+exec+wait of /bin/true measured in the
// same run; then the peak RSS (VmHWM) of pined, pine-broker and each worker,
// sampled from /proc while turns run, against the peak of a bare /bin/sleep.
// pined starts the broker and each worker through pine-launch (the sandbox's
// monitor, and its clone the pid namespace's init, stay above the program), so
// every process is told apart by the program it runs (/proc/PID/exe) at the time
// of each sample, not by the pid `GET /v1/status` gives for a role.
//
//   bench-turn [TURNS [RSS_TURNS]]     defaults: 30 timed turns, 10 sampled turns
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/events/bench_client.h"
#include "bench/events/bench_process.h"
#include "tests/integration/harness.h"

using Clock = std::chrono::steady_clock;
using namespace pine::test;
using pine::bench::Conn;
using pine::bench::descendants;
using pine::bench::programName;
using pine::bench::median;
using pine::bench::percentile;

namespace {

double msSince(Clock::time_point a) { return std::chrono::duration<double, std::milli>(Clock::now() - a).count(); }

// The floor: fork, exec /bin/true, wait for it.
double forkExecTrue() {
  auto t0 = Clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/true", "true", (char*)nullptr);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("floor: /bin/true did not exit 0");
  return msSince(t0);
}

// "2024-05-01T12:00:00.123Z" -> unix ms (the task record's times).
long long isoMs(const std::string& s) {
  struct tm tm {};
  int ms = 0;
  if (sscanf(s.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
             &tm.tm_sec, &ms) != 7)
    return 0;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return (long long)timegm(&tm) * 1000 + ms;
}

// What /proc/<pid>/status says about memory, in kB; `name` is the program it runs (exe).
struct Mem {
  std::string name;
  long hwm = -1, rss = 0, anon = 0, file = 0, shmem = 0;
};

// hwm stays -1 for a process that is gone or a zombie (no mm left), or that exec'd another
// program while it was read.
Mem readMem(pid_t pid) {
  Mem m;
  m.name = programName(pid);
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    auto num = [&](const char* key, long* out) {
      if (line.rfind(key, 0) == 0) *out = atol(line.c_str() + strlen(key));
    };
    num("VmHWM:", &m.hwm);
    num("VmRSS:", &m.rss);
    num("RssAnon:", &m.anon);
    num("RssFile:", &m.file);
    num("RssShmem:", &m.shmem);
  }
  if (m.name.empty() || programName(pid) != m.name) m.hwm = -1;
  return m;
}

// Polls pined's process tree and keeps, per pid and program, the highest VmHWM seen and the
// split of the largest VmRSS seen. Per program because one pid runs several in turn, each exec
// starting a fresh VmHWM: pined's clone until it execs pine-launch (sharing pined's memory, so
// showing pined's peak), and the pid namespace's worker, a clone of pine-launch's init until it
// execs pine-worker. A worker's last growth before it exits can be missed between two polls
// (VmHWM is gone once it is a zombie); the poll runs every 200 us to keep that window small.
class Sampler {
 public:
  explicit Sampler(pid_t root) : root_(root), thread_([this] { loop(); }) {}
  ~Sampler() { stopNow(); }
  void stopNow() {
    if (stop_.exchange(true)) return;
    thread_.join();
  }
  struct Peak {
    Mem hwm;     // name and highest VmHWM
    Mem atRss;   // the sample with the largest VmRSS (its anon/file/shmem split)
    int samples = 0;
  };
  using Key = std::pair<pid_t, std::string>;  // pid, program
  std::map<Key, Peak> peaks() {
    std::lock_guard<std::mutex> g(mu_);
    return peaks_;
  }

 private:
  void loop() {
    std::vector<pid_t> pids;
    while (!stop_) {
      pids.clear();
      descendants(root_, &pids);
      for (pid_t p : pids) {
        Mem m = readMem(p);
        if (m.hwm < 0 || m.name.empty()) continue;
        std::lock_guard<std::mutex> g(mu_);
        auto& pk = peaks_[{p, m.name}];
        if (m.hwm > pk.hwm.hwm) pk.hwm = m;
        if (m.rss > pk.atRss.rss) pk.atRss = m;
        ++pk.samples;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  pid_t root_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::map<Key, Peak> peaks_;
  std::thread thread_;
};

// The RSS floor: the peak of a bare dynamically linked program (/bin/sleep), read while it sleeps.
long bareProgramHwm() {
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sleep", "sleep", "0.3", (char*)nullptr);
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  long hwm = readMem(pid).hwm;
  waitpid(pid, nullptr, 0);
  if (hwm < 0) throw std::runtime_error("floor: could not read /proc/" + std::to_string(pid) + "/status of /bin/sleep");
  return hwm;
}

struct Turn {
  double ms = 0, queuedMs = 0, runMs = 0;
};

// One owner message with the default wait: the answer is the task record once it has ended.
Turn turn(Conn& conn) {
  auto t0 = Clock::now();
  std::string out;
  int status = conn.request("POST", "/v1/agents/main/messages", R"({"text": "read the note"})", &out);
  Turn t;
  t.ms = msSince(t0);
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (status != 200 || j.is_discarded() || j.value("state", "") != "done" || j.value("answer", "") != "The note says hi.")
    throw std::runtime_error("the turn did not end with the scripted answer: " + std::to_string(status) + " " + out);
  long long created = isoMs(j.value("createdAt", "")), started = isoMs(j.value("startedAt", "")),
            ended = isoMs(j.value("endedAt", ""));
  if (created && started && ended) {
    t.queuedMs = double(started - created);
    t.runMs = double(ended - started);
  }
  return t;
}

double mb(long kb) { return kb / 1024.0; }

}  // namespace

int main(int argc, char** argv) try {
  setenv("PINE_BIN_DIR", PINE_BUILD_BIN, 0);
  setenv("PINE_SOURCE_DIR", PINE_SOURCE, 0);
  int turns = argc > 1 ? atoi(argv[1]) : 30, rssTurns = argc > 2 ? atoi(argv[2]) : 10;
  const int floorPerTurn = 5;
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeMinimalConfig(home, {"main"});
  writeText(home + "/providers/replies.yaml",
            "replies:\n  - match: \"\"\n    turns:\n      - tool_calls: [{name: read, arguments: {path: note.txt}}]\n"
            "      - text: \"The note says hi.\"\n");
  writeText(home + "/agents/main/agent.yaml", "description: the benchmark's agent\ntools: [read]\n");
  writeText(home + "/agents/main/workspace/note.txt", "hi\n");
  Pined pined(home, {}, {});

  auto st = pined.api("GET", "/v1/status").json();
  pid_t supervisor = 0, brokerLaunch = 0;
  for (auto& p : st["processes"]) {
    if (p.value("role", "") == "supervisor") supervisor = p["pid"].get<pid_t>();
    if (p.value("role", "") == "broker") brokerLaunch = p["pid"].get<pid_t>();
  }
  if (!supervisor || !brokerLaunch)
    throw std::runtime_error("GET /v1/status named no supervisor or broker: " + st.dump());
  // The status names pine-launch, the broker's sandbox monitor; pine-broker runs below it.
  pid_t broker = pine::bench::findProgram(brokerLaunch, "pine-broker");

  Conn conn(home);
  for (int i = 0; i < 2; ++i) turn(conn);  // warm-up: page cache, the store's first session rows

  // ---- latency: turns and the floor interleaved, so both see the same load --------------------
  std::vector<double> floorMs, turnMs, queuedMs, runMs;
  for (int i = 0; i < turns; ++i) {
    Turn t = turn(conn);
    turnMs.push_back(t.ms);
    queuedMs.push_back(t.queuedMs);
    runMs.push_back(t.runMs);
    for (int k = 0; k < floorPerTurn; ++k) floorMs.push_back(forkExecTrue());
  }
  double f = median(floorMs), m = median(turnMs);
  printf("turn: one owner message -> answer (script model: one `read`, then the answer), %d turns, wait: true\n",
         turns);
  printf("  floor: fork+exec+wait /bin/true (%d)   median %8.2f ms   p90 %8.2f ms   1\n", turns * floorPerTurn, f,
         percentile(floorMs, 0.9));
  printf("  pine: message -> answer                median %8.2f ms   p90 %8.2f ms   %.1fx\n", m,
         percentile(turnMs, 0.9), m / f);
  printf("    of which created -> worker started   median %8.0f ms   (task record, ms resolution)\n",
         median(queuedMs));
  printf("    of which worker started -> ended     median %8.0f ms\n", median(runMs));
  fflush(stdout);

  // ---- peak RSS, sampled while turns run (not timed) ------------------------------------------
  long floorKb = bareProgramHwm();
  Sampler sampler(supervisor);
  for (int i = 0; i < rssTurns; ++i) turn(conn);
  sampler.stopNow();
  auto peaks = sampler.peaks();
  Mem sup = readMem(supervisor), brk = readMem(broker);
  std::vector<double> workerHwm, workerAnon, workerFile;
  int samples = 0;
  // Everything else below pined, by the last program each pid ran: a pid runs pined (pined's clone,
  // until its exec), then pine-launch (a monitor; an init; or, until its own exec, the clone that
  // becomes the program), then maybe the program. Monitors and inits run pine-launch to the end.
  struct Others {
    std::set<pid_t> pids;
    long hwm = 0;
  };
  std::map<std::string, Others> others;
  std::set<pid_t> clonesOfPined;
  std::map<pid_t, std::map<std::string, const Sampler::Peak*>> byPid;
  for (auto& [key, pk] : peaks) byPid[key.first][key.second] = &pk;
  for (auto& [pid, programs] : byPid) {
    if (programs.count("pined")) clonesOfPined.insert(pid);
    std::string last;
    for (auto& [program, pk] : programs)
      if (program != "pined" && program != "pine-launch") last = program;
    if (last.empty()) last = programs.count("pine-launch") ? "pine-launch" : "";
    if (last.empty() || last == "pine-broker") continue;  // pined's clone alone; the broker is read by its pid
    const Sampler::Peak& pk = *programs[last];
    if (last == "pine-worker") {
      workerHwm.push_back((double)pk.hwm.hwm);
      workerAnon.push_back((double)pk.atRss.anon);
      workerFile.push_back((double)(pk.atRss.file + pk.atRss.shmem));
      samples += pk.samples;
    } else {
      auto& o = others[last];
      o.pids.insert(pid);
      o.hwm = std::max(o.hwm, pk.hwm.hwm);
    }
  }
  if ((int)workerHwm.size() != rssTurns)
    fprintf(stderr, "bench-turn: note: %zu workers sampled for %d turns (a worker that lived under one poll is missed)\n",
            workerHwm.size(), rssTurns);
  double w = median(workerHwm);
  printf("peak RSS (VmHWM), %d turns sampled every 200 us from /proc (%d samples of workers)\n", rssTurns, samples);
  printf("  floor: /bin/sleep                             %7.2f MB   1\n", mb(floorKb));
  printf("  pined (supervisor, pid %7d)              %7.2f MB   %.1fx   (%.2f MB anonymous now)\n", supervisor, mb(sup.hwm),
         (double)sup.hwm / floorKb, mb(sup.anon));
  printf("  pine-broker (pid %7d)                     %7.2f MB   %.1fx   (%.2f MB anonymous now)\n", broker, mb(brk.hwm),
         (double)brk.hwm / floorKb, mb(brk.anon));
  printf("  pine-worker, median of %2zu                    %7.2f MB   %.1fx   (target <= 8 MB)\n", workerHwm.size(),
         mb((long)w), w / floorKb);
  printf("    max %.2f MB; at its largest RSS, median %.2f MB anonymous, %.2f MB file-backed\n",
         mb((long)percentile(workerHwm, 1.0)), mb((long)median(workerAnon)), mb((long)median(workerFile)));
  printf("  other processes below pined, by program (pids seen, largest VmHWM):\n");
  for (auto& [program, o] : others)
    printf("    %-12s %3zu seen   %7.2f MB   %s\n", program.c_str(), o.pids.size(), mb(o.hwm),
           program == "pine-launch" ? "(sandbox monitors and pid-namespace inits: a fresh image, exec'd by pined's clone;"
                                      " a monitor and its init share it)"
                                    : "");
  printf("    pined's clones between clone and their exec of pine-launch: %zu seen (they share pined's memory)\n",
         clonesOfPined.size());
  return 0;
} catch (std::exception& e) {
  fprintf(stderr, "bench-turn: %s\n", e.what());
  return 1;
}
