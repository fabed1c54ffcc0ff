// Starts the real process tree in a temporary home and drives it the way an
// operator would: pined, pinectl, signals, /proc.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pine::test {

std::string binDir();      // the built programs (PINE_BIN_DIR)
std::string testBinDir();  // test fixtures (PINE_TEST_BIN_DIR)
std::string sourceDir();   // the source tree (PINE_SOURCE_DIR)

// The suite's second run selects the Seatbelt backend against the stand-in sandbox-exec
// (PINE_TEST_BACKEND=seatbelt): every pined gets --sandbox-backend seatbelt. The stand-in
// enforces nothing, so a test that attacks the Linux backend's enforcement, or looks at
// what only it does (uids, namespaces, pine-launch), calls LINUX_BACKEND_ONLY() first.
bool seatbeltStandIn();
std::string standInLog();  // the stand-in's record, one JSON line per start
#define LINUX_BACKEND_ONLY()                                                         \
  do {                                                                               \
    if (pine::test::seatbeltStandIn()) {                                             \
      MESSAGE("attacks or inspects the Linux backend: not run against the stand-in"); \
      return;                                                                        \
    }                                                                                \
  } while (0)

struct Result {
  int exitCode = -1;
  std::string out, err;
};

// Runs a program to completion with the given stdin; never through a shell.
Result run(const std::vector<std::string>& argv, const std::string& input = "");

// Polls `cond` every 20 ms until it holds or `timeout` passes.
bool waitUntil(const std::function<bool()>& cond, std::chrono::milliseconds timeout);

// Every live process started by this test process (its descendants, orphans included: on Linux
// the test is their subreaper) whose command line mentions `needle` (zombies excluded). Other
// test binaries run beside this one and start the same commands.
std::vector<pid_t> processesMentioning(const std::string& needle);
bool alive(pid_t pid);
// The pids of the direct children of `pid`, and of all its descendants.
std::vector<pid_t> childrenOf(pid_t pid);
std::vector<pid_t> descendants(pid_t root);

class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A configuration pined accepts: pine.yaml, models.yaml (offline script model) and agents/<id>/agent.yaml.
// The control API's TCP port is a free one picked now, so that homes never collide.
void writeMinimalConfig(const std::string& home, const std::vector<std::string>& agents);
int freeTcpPort();
void writeText(const std::string& path, const std::string& text);
std::string readText(const std::string& path);
inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
// The last `n` bytes of `s` (for failure messages that quote a log).
std::string tailOf(const std::string& s, size_t n);

class Pined {
 public:
  // Writes a minimal configuration with these agents (a `script` model), starts
  // `pined --foreground` on that home and waits until the broker answers.
  explicit Pined(const std::string& home, std::vector<std::string> extraArgs = {},
                 std::vector<std::string> agents = {"main"}, bool waitForApi = true);
  ~Pined();  // SIGKILL whatever is left (the tests check clean stops themselves)

  Result ctl(std::vector<std::string> args, const std::string& input = "");
  pid_t pid() const { return pid_; }
  const std::string& home() const { return home_; }
  std::string stderrText() const;
  // The pid of the process of `role` per `pinectl status --json` (0 if none).
  pid_t rolePid(const std::string& role);
  // Sends SIGTERM and waits for pined to exit; returns its wait status.
  int stop(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));
  std::vector<std::string> auditEvents(const std::string& event);
  // The same lines parsed, optionally only those of one task.
  std::vector<nlohmann::json> auditJson(const std::string& event, const std::string& task = "");
  // The text of every tool result stored for a task, in order (from the database, read-only).
  std::vector<std::string> toolResults(const std::string& task);
  // One request to the control API over the home's unix socket with the token: {status, body}.
  struct Http {
    int status = 0;
    std::string body;
    nlohmann::json json() const { return nlohmann::json::parse(body, nullptr, false); }
  };
  Http api(const std::string& method, const std::string& path, const std::string& body = "");

 private:
  std::string home_;
  std::string errPath_;
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// POST /hooks/<name> on pine.sock as a webhook's sender makes it: no control token, the headers
// given ("Name: value"). The status line's code; 0 when there was no answer.
int postHook(const std::string& home, const std::string& name, const std::string& body,
             const std::vector<std::string>& headers);
// POST /v1/agents/<agent>/messages: with wait, the ended task; without, {"task", "session"}.
// Throws, quoting the end of pined's stderr, when no JSON object comes back.
nlohmann::json message(Pined& p, const std::string& agent, const std::string& text, bool wait = true,
                       const std::string& session = "");
// The text of every tool result stored for a task, in order (from the database, read-only).
std::vector<std::string> toolResults(const std::string& home, const std::string& task);
// The audit lines of one event, parsed.
std::vector<nlohmann::json> audit(Pined& p, const std::string& event);
// How often each needle occurs in the readable memory of `pid` (/proc/PID/maps and /proc/PID/mem),
// read a piece at a time, a needle across two pieces included. Mappings over 4 GiB (a sanitizer
// build's shadow memory) are skipped. `scanned` gets the bytes read, so that a scan which read
// nothing cannot pass. Throws when the memory cannot be opened.
std::vector<size_t> countInMemory(pid_t pid, const std::vector<std::string>& needles, size_t* scanned = nullptr);
// The oldest approval waiting (as GET /v1/approvals lists it) whose id is not `notId`, once
// there is one; null after 20 seconds.
nlohmann::json pendingApproval(Pined& p, const std::string& notId = "");
// The status line the broker keeps for a source (source_status, read-only); zeros when it has none.
struct SourceStatus {
  long long looked = 0, events = 0, errors = 0;
  std::string found, error;
};
SourceStatus sourceStatus(const std::string& home, const std::string& source);
// The events on `topic` as GET /v1/events lists them (an empty array when there are none).
nlohmann::json topicEvents(Pined& p, const std::string& topic);
// Writes the first "intervalSec: FROM" of pine.yaml as TO (a polling source whose interval changed
// starts again at the next reload and looks at once); throws when pine.yaml has none.
void setIntervalSec(const std::string& home, int from, int to);
// Whether a task (as the API lists it) has ended, done or failed.
bool taskEnded(const nlohmann::json& t);
// Whether the API says this conversation of `agent` is tainted (false when it is not listed).
bool sessionTainted(Pined& p, const std::string& agent, const std::string& session);

}  // namespace pine::test
