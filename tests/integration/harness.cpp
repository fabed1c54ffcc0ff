#include "tests/integration/harness.h"
#include "common/cloexec.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace pine::test {

static std::string envOr(const char* name, const std::string& fallback) {
  const char* v = getenv(name);
  return v && *v ? v : fallback;
}
std::string binDir() { return envOr("PINE_BIN_DIR", "build/bin"); }
std::string testBinDir() { return envOr("PINE_TEST_BIN_DIR", "build/tests"); }
std::string sourceDir() { return envOr("PINE_SOURCE_DIR", "."); }
bool seatbeltStandIn() { return envOr("PINE_TEST_BACKEND", "linux") == "seatbelt"; }
std::string standInLog() { return testBinDir() + "/fixtures/sandbox-exec.log"; }

static std::string slurp(int fd) {
  std::string s;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) s.append(buf, (size_t)n);
  return s;
}

Result run(const std::vector<std::string>& argv, const std::string& input) {
  char outPath[] = "/tmp/pine-run-out-XXXXXX";
  char errPath[] = "/tmp/pine-run-err-XXXXXX";
  int outFd = mkstemp(outPath), errFd = mkstemp(errPath);
  int in[2];
  if (outFd < 0 || errFd < 0 || pipe(in) != 0) throw std::runtime_error("run: cannot make temp files");
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(outFd, 1);
    dup2(errFd, 2);
    close(in[1]);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(in[0]);
  signal(SIGPIPE, SIG_IGN);
  ssize_t ignored = write(in[1], input.data(), input.size());
  (void)ignored;
  close(in[1]);
  int status = 0;
  waitpid(pid, &status, 0);
  Result r;
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  lseek(outFd, 0, SEEK_SET);
  lseek(errFd, 0, SEEK_SET);
  r.out = slurp(outFd);
  r.err = slurp(errFd);
  close(outFd);
  close(errFd);
  unlink(outPath);
  unlink(errPath);
  return r;
}

bool waitUntil(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
  auto end = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (cond()) return true;
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

static std::string procFile(pid_t pid, const char* name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

static char procState(pid_t pid) {
  std::string stat = procFile(pid, "stat");
  size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ? '?' : stat[close + 2];
}

bool alive(pid_t pid) {
  if (kill(pid, 0) != 0) return false;
  char s = procState(pid);
  return s != 'Z' && s != 'X' && s != '?';
}

namespace {
// Every live process's parent, read in one pass over /proc.
std::map<pid_t, pid_t> parentsOfAll() {
  std::map<pid_t, pid_t> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (auto* e = readdir(d)) {
    pid_t pid = atoi(e->d_name);
    if (pid <= 0) continue;
    std::string stat = procFile(pid, "stat");
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state;
    pid_t ppid;
    rest >> state >> ppid;
    if (state != 'Z' && state != 'X') out[pid] = ppid;
  }
  closedir(d);
  return out;
}
}  // namespace

std::vector<pid_t> childrenOf(pid_t parent) {
  std::vector<pid_t> out;
  for (auto [pid, ppid] : parentsOfAll())
    if (ppid == parent) out.push_back(pid);
  return out;
}

std::vector<pid_t> descendants(pid_t root) {
  std::map<pid_t, std::vector<pid_t>> children;
  for (auto [pid, ppid] : parentsOfAll()) children[ppid].push_back(pid);
  std::vector<pid_t> out, todo = {root};
  while (!todo.empty()) {
    pid_t p = todo.back();
    todo.pop_back();
    for (pid_t c : children[p]) {
      out.push_back(c);
      todo.push_back(c);
    }
  }
  return out;
}

std::vector<pid_t> processesMentioning(const std::string& needle) {
  std::vector<pid_t> out;
  for (pid_t pid : descendants(getpid())) {
    std::string cmd = procFile(pid, "cmdline");
    if (cmd.find(needle) != std::string::npos && alive(pid)) out.push_back(pid);
  }
  return out;
}

TempDir::TempDir() {
  char tmpl[] = "/tmp/pine-test-XXXXXX";
  if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
  // As root, workers run under another uid and must be able to walk down to pine's home.
  chmod(tmpl, 0711);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void writeText(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

std::string tailOf(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(s.size() - n); }

std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int freeTcpPort() {
  int fd = pine::socketCloexec(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (fd < 0 || bind(fd, (sockaddr*)&a, sizeof a) != 0 || getsockname(fd, (sockaddr*)&a, &len) != 0)
    throw std::runtime_error("no free TCP port");
  int port = ntohs(a.sin_port);
  close(fd);
  return port;
}

void writeMinimalConfig(const std::string& home, const std::vector<std::string>& agents) {
  std::filesystem::create_directories(home);
  chmod(home.c_str(), 0700);
  writeText(home + "/pine.yaml",
            "defaults:\n  model: demo\nhttp:\n  port: " + std::to_string(freeTcpPort()) + "\n");
  writeText(home + "/models.yaml",
            "providers:\n  demo:\n    kind: script\n    script: providers/replies.yaml\n"
            "models:\n  demo:\n    provider: demo\n    contextWindow: 32768\n");
  std::ifstream replies(sourceDir() + "/config/examples/home/providers/demo-replies.yaml");
  std::stringstream ss;
  ss << replies.rdbuf();
  writeText(home + "/providers/replies.yaml", ss.str());
  for (auto& a : agents) writeText(home + "/agents/" + a + "/agent.yaml", "description: test agent " + a + "\n");
}

Pined::Pined(const std::string& home, std::vector<std::string> extraArgs, std::vector<std::string> agents,
             bool waitForApi)
    : home_(home) {
  if (!agents.empty()) writeMinimalConfig(home, agents);
  errPath_ = home + ".stderr";
  pid_ = fork();
  if (pid_ == 0) {
    int err = open(errPath_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(err, 2);
    int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, 0);
    dup2(devnull, 1);
    std::vector<std::string> argv = {binDir() + "/pined", "--home", home, "--foreground"};
    if (seatbeltStandIn())
      argv.insert(argv.end(), {"--sandbox-backend", "seatbelt", "--sandbox-exec", testBinDir() + "/fixtures/sandbox-exec"});
    for (auto& a : extraArgs) argv.push_back(a);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  // Without the real broker there is no control API: wait for pined's own socket instead.
  bool up = waitUntil(
      [&] {
        return waitForApi ? ctl({"status"}).exitCode == 0 : access((home + "/pined.sock").c_str(), F_OK) == 0;
      },
      std::chrono::seconds(10));
  if (!up) throw std::runtime_error("pined did not come up: " + stderrText());
}

Pined::~Pined() {
  if (!reaped_) {
    for (pid_t p : processesMentioning(home_)) kill(p, SIGKILL);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  unlink(errPath_.c_str());
}

Pined::Http Pined::api(const std::string& method, const std::string& path, const std::string& body) {
  std::string token = readText(home_ + "/data/http-token");
  while (!token.empty() && (token.back() == '\n' || token.back() == ' ')) token.pop_back();
  int fd = pine::socketCloexec(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::string sock = home_ + "/pine.sock";
  strncpy(a.sun_path, sock.c_str(), sizeof a.sun_path - 1);
  Http h;
  if (fd < 0 || connect(fd, (sockaddr*)&a, sizeof a) != 0) {
    if (fd >= 0) close(fd);
    return h;
  }
  timeval tv{180, 0};  // a message with wait: true may wait out an approval timeout, slower under ASan
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + token +
                    "\r\nConnection: close\r\n";
  if (!body.empty() || method == "POST" || method == "PUT")
    req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n" + body;
  for (size_t off = 0; off < req.size();) {
    ssize_t n = write(fd, req.data() + off, req.size() - off);
    if (n <= 0) break;
    off += (size_t)n;
  }
  // Read the head, then exactly Content-Length bytes (the server may keep the connection open).
  std::string in;
  char buf[65536];
  size_t headEnd = std::string::npos, want = std::string::npos;
  while (true) {
    if (headEnd == std::string::npos && (headEnd = in.find("\r\n\r\n")) != std::string::npos) {
      std::string head = in.substr(0, headEnd);
      for (auto& c : head) c = (char)tolower((unsigned char)c);
      auto cl = head.find("content-length:");
      if (cl != std::string::npos) want = headEnd + 4 + std::stoul(head.substr(cl + 15));
    }
    if (want != std::string::npos && in.size() >= want) break;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    in.append(buf, (size_t)n);
  }
  close(fd);
  if (in.rfind("HTTP/1.1 ", 0) == 0) h.status = atoi(in.c_str() + 9);
  if (headEnd != std::string::npos) h.body = in.substr(headEnd + 4, want == std::string::npos ? std::string::npos : want - headEnd - 4);
  return h;
}

Result Pined::ctl(std::vector<std::string> args, const std::string& input) {
  std::vector<std::string> argv = {binDir() + "/pinectl", "--home", home_};
  for (auto& a : args) argv.push_back(a);
  return run(argv, input);
}

std::string Pined::stderrText() const {
  std::ifstream in(errPath_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

pid_t Pined::rolePid(const std::string& role) {
  auto r = ctl({"status", "--json"});
  if (r.exitCode != 0) return 0;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  if (j.is_discarded()) return 0;
  for (auto& p : j["processes"])
    if (p["role"] == role) return p["pid"].get<pid_t>();
  return 0;
}

int Pined::stop(std::chrono::milliseconds timeout) {
  kill(pid_, SIGTERM);
  int status = -1;
  waitUntil([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, timeout);
  if (status == -1) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
  }
  reaped_ = true;
  return status;
}

std::vector<std::string> Pined::auditEvents(const std::string& event) {
  std::vector<std::string> out;
  std::ifstream in(home_ + "/data/logs/audit.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.value("event", "") == event) out.push_back(line);
  }
  return out;
}

std::vector<nlohmann::json> Pined::auditJson(const std::string& event, const std::string& task) {
  std::vector<nlohmann::json> out;
  for (auto& line : auditEvents(event)) {
    auto j = nlohmann::json::parse(line);
    if (task.empty() || j.value("task", "") == task) out.push_back(j);
  }
  return out;
}

nlohmann::json message(Pined& p, const std::string& agent, const std::string& text, bool wait,
                       const std::string& session) {
  nlohmann::json body = {{"text", text}, {"wait", wait}};
  if (!session.empty()) body["session"] = session;
  auto r = p.api("POST", "/v1/agents/" + agent + "/messages", body.dump());
  auto j = r.json();
  if (!j.is_object())
    throw std::runtime_error("message to " + agent + ": " + std::to_string(r.status) + " " + r.body +
                             "\n--- pined's stderr, last lines:\n" + tailOf(p.stderrText(), 4000));
  return j;
}

std::vector<nlohmann::json> audit(Pined& p, const std::string& event) { return p.auditJson(event); }

std::vector<std::string> Pined::toolResults(const std::string& task) { return pine::test::toolResults(home_, task); }

std::vector<std::string> toolResults(const std::string& home, const std::string& task) {
  sqlite3* db = nullptr;
  std::vector<std::string> out;
  if (sqlite3_open_v2((home + "/data/pine.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "SELECT content FROM messages WHERE task_id = ? AND role = 'tool' ORDER BY seq", -1, &st,
                       nullptr);
    sqlite3_bind_text(st, 1, task.c_str(), -1, SQLITE_TRANSIENT);
    while (sqlite3_step(st) == SQLITE_ROW) out.push_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return out;
}

SourceStatus sourceStatus(const std::string& home, const std::string& source) {
  SourceStatus s;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2((home + "/data/pine.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_busy_timeout(db, 2000);
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT looked_ms, found, events, errors, error FROM source_status WHERE source = ?", -1,
                           &st, nullptr) == SQLITE_OK) {
      sqlite3_bind_text(st, 1, source.c_str(), -1, SQLITE_TRANSIENT);
      if (sqlite3_step(st) == SQLITE_ROW) {
        s.looked = sqlite3_column_int64(st, 0);
        s.found = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
        s.events = sqlite3_column_int64(st, 2);
        s.errors = sqlite3_column_int64(st, 3);
        s.error = reinterpret_cast<const char*>(sqlite3_column_text(st, 4));
      }
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return s;
}

nlohmann::json topicEvents(Pined& p, const std::string& topic) {
  auto j = p.api("GET", "/v1/events?topic=" + topic).json();
  return j.is_object() && j.contains("events") ? j["events"] : nlohmann::json::array();
}

void setIntervalSec(const std::string& home, int from, int to) {
  std::string yaml = readText(home + "/pine.yaml");
  const std::string a = "intervalSec: " + std::to_string(from);
  if (yaml.find(a) == std::string::npos) throw std::runtime_error("pine.yaml has no '" + a + "'");
  yaml.replace(yaml.find(a), a.size(), "intervalSec: " + std::to_string(to));
  writeText(home + "/pine.yaml", yaml);
}

bool taskEnded(const nlohmann::json& t) {
  return t.is_object() && (t.value("state", "") == "done" || t.value("state", "") == "failed");
}

bool sessionTainted(Pined& p, const std::string& agent, const std::string& session) {
  auto j = p.api("GET", "/v1/agents").json();
  for (auto& a : j["agents"])
    if (a["id"] == agent)
      for (auto& s : a["sessions"])
        if (s["session"] == session) return s["tainted"].get<bool>();
  return false;
}

std::vector<size_t> countInMemory(pid_t pid, const std::vector<std::string>& needles, size_t* scanned) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  int mem = open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  if (mem < 0) throw std::runtime_error("cannot open /proc/" + std::to_string(pid) + "/mem: " + strerror(errno));
  size_t overlap = 1;
  for (auto& n : needles) overlap = std::max(overlap, n.size());
  std::vector<size_t> counts(needles.size(), 0);
  size_t bytes = 0;
  for (std::string line; std::getline(maps, line);) {
    unsigned long from = 0, to = 0;
    char perms[8] = {};
    if (sscanf(line.c_str(), "%lx-%lx %7s", &from, &to, perms) != 3 || perms[0] != 'r') continue;
    if (line.find("[vvar") != std::string::npos || line.find("[vsyscall]") != std::string::npos ||
        to - from > (4ul << 30))
      continue;
    std::string carry;  // the end of the previous piece, so that a needle across two pieces is found
    for (unsigned long at = from; at < to;) {
      size_t n = std::min<unsigned long>(to - at, 16ul << 20);
      std::string piece(n, '\0');
      ssize_t got = pread(mem, piece.data(), n, (off_t)at);
      if (got <= 0) break;
      piece.resize((size_t)got);
      bytes += (size_t)got;
      std::string window = carry + piece;
      for (size_t i = 0; i < needles.size(); ++i)
        for (size_t p = window.find(needles[i]); p != std::string::npos; p = window.find(needles[i], p + 1))
          if (p + needles[i].size() > carry.size()) ++counts[i];  // one that ends in the carry was counted
      carry = window.substr(window.size() - std::min(window.size(), overlap - 1));
      at += (unsigned long)got;
    }
  }
  close(mem);
  if (scanned) *scanned += bytes;
  return counts;
}

nlohmann::json pendingApproval(Pined& p, const std::string& notId) {
  nlohmann::json found;
  waitUntil(
      [&] {
        auto j = p.api("GET", "/v1/approvals").json();
        if (j.is_discarded() || !j.contains("approvals")) return false;
        for (auto& a : j["approvals"])
          if (a.value("id", "") != notId) {
            found = a;
            return true;
          }
        return false;
      },
      std::chrono::seconds(20));
  return found;
}

int postHook(const std::string& home, const std::string& name, const std::string& body,
             const std::vector<std::string>& headers) {
  int fd = pine::socketCloexec(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::string sock = home + "/pine.sock";
  strncpy(a.sun_path, sock.c_str(), sizeof a.sun_path - 1);
  if (fd < 0 || connect(fd, (sockaddr*)&a, sizeof a) != 0) {
    if (fd >= 0) close(fd);
    return 0;
  }
  timeval tv{30, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string req = "POST /hooks/" + name + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                    "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  for (auto& h : headers) req += h + "\r\n";
  req += "\r\n" + body;
  if (write(fd, req.data(), req.size()) != (ssize_t)req.size()) {
    close(fd);
    return 0;
  }
  char buf[512];
  ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  std::string head(buf, n > 0 ? (size_t)n : 0);
  return head.size() > 12 ? std::atoi(head.c_str() + 9) : 0;
}

}  // namespace pine::test
