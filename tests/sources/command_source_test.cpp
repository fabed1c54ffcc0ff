// CommandSource (broker/sources/command_source.h) on a KJ loop, with real /bin/sh processes
// started by a test starter in place of pined (the sandbox is tests/integration's
// command_source_test): interval runs and their events only on a change, the time limit, lines
// as events, a line cut at its cap, a flood dropped and reported, restarts after an exit, and a
// refused start listed as not running.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <kj/debug.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "broker/sources/command_source.h"
#include "broker/sources/source_manager.h"
#include "common/cloexec.h"
#include "tests/sources/mosquitto_fixture.h"

using namespace sources_test;
using namespace std::chrono_literals;
using pine::sources::CommandExit;
using pine::sources::CommandSource;

namespace {

// A process of its own group, reaped by polling; dropping the handle kills the group.
class ShellProcess final : public pine::sources::CommandHandle {
 public:
  ShellProcess(kj::Timer& timer, pid_t pid) : timer_(timer), pid_(pid) {}
  ~ShellProcess() noexcept(false) override {
    if (!reaped_) {
      ::kill(-pid_, SIGKILL);
      int st;
      waitpid(pid_, &st, 0);
    }
  }
  kj::Promise<CommandExit> wait() override {
    if (reaped_) return exit_;
    int st = 0;
    if (waitpid(pid_, &st, WNOHANG) == pid_) {
      reaped_ = true;
      ::kill(-pid_, SIGKILL);  // what it left in its group goes with it, as pined does
      exit_ = WIFSIGNALED(st) ? CommandExit{true, WTERMSIG(st)} : CommandExit{false, WEXITSTATUS(st)};
      return exit_;
    }
    return timer_.afterDelay(10 * kj::MILLISECONDS).then([this]() { return wait(); });
  }
  void kill() override { ::kill(-pid_, SIGKILL); }
  pid_t pid() const { return pid_; }

 private:
  kj::Timer& timer_;
  pid_t pid_;
  bool reaped_ = false;
  CommandExit exit_;
};

struct Harness {
  Loop loop;
  std::map<std::string, std::string> memory;
  std::vector<std::string> errors, looks;
  long long events = 0;
  int starts = 0;
  std::string refuse;  // set: the starter fails with this

  pine::sources::CommandStarter starter(std::vector<std::string> argv) {
    return [this, argv](const std::string&) -> kj::Promise<pine::sources::StartedCommand> {
      ++starts;
      if (!refuse.empty()) return kj::Exception(kj::Exception::Type::FAILED, __FILE__, __LINE__, kj::str(refuse));
      int out[2], err[2];
      REQUIRE(pine::pipeCloexec(out) == 0);
      REQUIRE(pine::pipeCloexec(err) == 0);
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      pid_t pid = fork();
      if (pid == 0) {
        setpgid(0, 0);
        dup2(out[1], 1);
        dup2(err[1], 2);
        execv(args[0], args.data());
        _exit(127);
      }
      setpgid(pid, pid);
      close(out[1]);
      close(err[1]);
      pine::sources::StartedCommand c;
      auto& io = *loop.io.lowLevelProvider;
      c.out = io.wrapInputFd(out[0], kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP);
      c.err = io.wrapInputFd(err[0], kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP);
      c.process = kj::heap<ShellProcess>(loop.io.provider->getTimer(), pid);
      c.sandbox = "test";
      return kj::mv(c);
    };
  }
  pine::sources::SourceStatus status() {
    pine::sources::SourceStatus s;
    s.look = [this](const std::string&, const std::string& f) { looks.push_back(f); };
    s.events = [this](const std::string&, long long n) { events += n; };
    s.error = [this](const std::string&, const std::string& e) { errors.push_back(e); };
    s.recall = [this](const std::string& src, const std::string& k) -> std::optional<std::string> {
      auto it = memory.find(src + "/" + k);
      if (it == memory.end()) return std::nullopt;
      return it->second;
    };
    s.remember = [this](const std::string& src, const std::string& k, const std::string& v) { memory[src + "/" + k] = v; };
    return s;
  }
  bool anyError(const std::string& part) const {
    for (auto& e : errors)
      if (e.find(part) != std::string::npos) return true;
    return false;
  }
};

pine::config::Source commandSource(const std::string& mode, int intervalSec = 1, int timeoutSec = 60) {
  pine::config::Source s;
  s.name = "cmd";
  s.type = "command";
  s.command = {"unused"};  // the test starter runs its own argv
  s.commandMode = mode;
  s.intervalSec = intervalSec;
  s.timeoutSec = timeoutSec;
  return s;
}

struct TempDirHolder {
  std::string path;
  TempDirHolder() {
    char tmpl[] = "/tmp/pine-cmdsrc-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDirHolder() { std::filesystem::remove_all(path); }
};

void writeFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

nlohmann::json payload(const pine::sources::Draft& d) { return nlohmann::json::parse(d.payload); }

pine::sources::CommandLimits fastLimits() {
  pine::sources::CommandLimits l;
  l.restartMinMs = 100;
  l.restartMaxMs = 400;
  l.drainMs = 300;
  return l;
}

}  // namespace

TEST_CASE("command source, interval: a run's output is one event, the same output again is none") {
  Harness h;
  TempDirHolder dir;
  const std::string file = dir.path + "/value";
  writeFile(file, "21\n");
  CommandSource src(h.loop.io, commandSource("interval"), h.starter({"/bin/sh", "-c", "cat " + file + "; echo oops >&2"}),
                    h.loop.sink(), h.status(), fastLimits());
  REQUIRE(h.loop.until([&] { return h.loop.drafts.size() == 1; }, 5s));
  auto p = payload(h.loop.drafts[0]);
  CHECK(p["stdout"] == "21\n");
  CHECK(p["exitCode"] == 0);
  CHECK(p["timedOut"] == false);
  CHECK(p["stderr"] == "oops\n");
  CHECK(h.loop.drafts[0].topic == "command/cmd");
  CHECK(h.loop.drafts[0].trust == "untrusted");
  // The next run (a second later) prints the same: no event.
  REQUIRE(h.loop.until([&] { return h.starts >= 2 && h.looks.size() >= 2; }, 5s));
  CHECK(h.loop.drafts.size() == 1);
  writeFile(file, "22\n");
  REQUIRE(h.loop.until([&] { return h.loop.drafts.size() == 2; }, 5s));
  CHECK(payload(h.loop.drafts[1])["stdout"] == "22\n");
  CHECK(h.looks.back() == "0");
  CHECK(h.events == 2);
  CHECK_FALSE(src.notRunning());
}

TEST_CASE("command source, interval: a new broker waits out the interval of the run remembered; a changed command runs at once") {
  Harness h;
  {
    CommandSource first(h.loop.io, commandSource("interval", 60), h.starter({"/bin/echo", "x"}), h.loop.sink(), h.status(),
                        fastLimits());
    REQUIRE(h.loop.until([&] { return h.starts == 1 && h.looks.size() == 1; }, 5s));
  }
  REQUIRE(h.memory.count("cmd/lastRun"));
  // The broker restarts (a reload, a crash): the same source with the same memory runs nothing yet.
  {
    CommandSource again(h.loop.io, commandSource("interval", 60), h.starter({"/bin/echo", "x"}), h.loop.sink(), h.status(),
                        fastLimits());
    CHECK_FALSE(h.loop.until([&] { return h.starts > 1; }, 1500ms));
  }
  // The twins: another command line, or a run remembered longer ago than the interval, run at once.
  {
    auto changed = commandSource("interval", 60);
    changed.command = {"another"};
    CommandSource other(h.loop.io, changed, h.starter({"/bin/echo", "x"}), h.loop.sink(), h.status(), fastLimits());
    REQUIRE(h.loop.until([&] { return h.starts == 2; }, 5s));
  }
  std::string& last = h.memory["cmd/lastRun"];
  last = std::to_string(std::stoll(last.substr(0, last.find('|'))) - 61000) + last.substr(last.find('|'));
  auto changed = commandSource("interval", 60);
  changed.command = {"another"};
  CommandSource late(h.loop.io, changed, h.starter({"/bin/echo", "x"}), h.loop.sink(), h.status(), fastLimits());
  CHECK(h.loop.until([&] { return h.starts == 3; }, 5s));
}

TEST_CASE("command source, interval: stdout past its cap is cut and counted; a failing run is a status error") {
  Harness h;
  auto limits = fastLimits();
  limits.maxStdoutBytes = 1000;
  CommandSource src(h.loop.io, commandSource("interval", 60),
                    h.starter({"/bin/sh", "-c", "head -c 300000 /dev/zero | tr '\\0' x; exit 3"}), h.loop.sink(),
                    h.status(), limits);
  REQUIRE(h.loop.until([&] { return h.loop.drafts.size() == 1; }, 5s));
  auto p = payload(h.loop.drafts[0]);
  CHECK(p["stdout"].get<std::string>().size() == 1000);
  CHECK(p["stdoutCut"] == true);
  CHECK(p["stdoutBytes"] == 300000);
  CHECK(p["exitCode"] == 3);
  CHECK(h.anyError("exited with 3"));
}

TEST_CASE("command source: 30 MB on stdout and on stderr are read to their end, the stack kept flat") {
  // Before: each 16 KiB read nested the next one a level deeper, and 20 MB overflowed the stack
  // (the broker died, and again after each restart, as the command ran again).
  Harness h;
  auto limits = fastLimits();
  limits.maxStdoutBytes = 1000;
  CommandSource src(h.loop.io, commandSource("interval", 60),
                    h.starter({"/bin/sh", "-c", "head -c 30000000 /dev/zero | tr '\\0' x; head -c 30000000 /dev/zero >&2"}),
                    h.loop.sink(), h.status(), limits);
  REQUIRE(h.loop.until([&] { return h.loop.drafts.size() == 1; }, 60s));
  auto p = payload(h.loop.drafts[0]);
  CHECK(p["stdoutBytes"] == 30000000);
  CHECK(p["stdoutCut"] == true);
  CHECK(p["exitCode"] == 0);
}

TEST_CASE("command source, lines: 30 MB on stderr are read to their end, the stack kept flat") {
  Harness lh;
  CommandSource lines(lh.loop.io, commandSource("lines"),
                      lh.starter({"/bin/sh", "-c", "head -c 30000000 /dev/zero >&2; echo done; sleep 1000"}),
                      lh.loop.sink(), lh.status(), fastLimits());
  REQUIRE(lh.loop.until([&] { return lh.loop.drafts.size() == 1; }, 60s));
  CHECK(payload(lh.loop.drafts[0]) == nlohmann::json{{"line", "done"}});
}

TEST_CASE("command source, interval: a run past timeoutSec is killed, with what it started") {
  Harness h;
  CommandSource src(h.loop.io, commandSource("interval", 60, 1),
                    h.starter({"/bin/sh", "-c", "echo started; sleep 1000 & sleep 1000"}), h.loop.sink(), h.status(),
                    fastLimits());
  auto began = std::chrono::steady_clock::now();
  REQUIRE(h.loop.until([&] { return h.loop.drafts.size() == 1; }, 10s));
  CHECK(std::chrono::steady_clock::now() - began < 5s);
  auto p = payload(h.loop.drafts[0]);
  CHECK(p["timedOut"] == true);
  CHECK(p["signal"] == SIGKILL);
  CHECK(p["stdout"] == "started\n");
  CHECK(h.looks.back() == "timeout");
  CHECK(h.anyError("timeoutSec"));
}

TEST_CASE("command source, lines: each line is an event; a long line is cut and marked") {
  Harness h;
  auto limits = fastLimits();
  limits.maxLineBytes = 100;
  CommandSource src(h.loop.io, commandSource("lines"),
                    h.starter({"/bin/sh", "-c", "printf 'one\\r\\n\\n \\t \\ntwo\\n'; head -c 5000 /dev/zero | tr '\\0' y; "
                                                "echo; printf tail; sleep 1000"}),
                    h.loop.sink(), h.status(), limits);
  REQUIRE(h.loop.until([&] { return h.loop.drafts.size() >= 3; }, 5s));
  CHECK(payload(h.loop.drafts[0]) == nlohmann::json{{"line", "one"}});
  CHECK(payload(h.loop.drafts[1]) == nlohmann::json{{"line", "two"}});
  auto cut = payload(h.loop.drafts[2]);
  CHECK(cut["line"] == std::string(100, 'y'));
  CHECK(cut["cut"] == true);
  CHECK(cut["bytes"] == 5000);
  CHECK(h.looks.back() == "running");
  h.loop.run(300ms);
  CHECK(h.loop.drafts.size() == 3);  // "tail" has no newline yet: not a line while the command runs
}

TEST_CASE("command source, lines: a flood is bounded, dropped lines are counted and reported, and not read in full") {
  Harness h;
  auto limits = fastLimits();
  limits.linesPerSec = 10;
  limits.lineBurst = 50;
  auto begun = std::chrono::steady_clock::now();
  CommandSource src(h.loop.io, commandSource("lines"), h.starter({"/usr/bin/yes", "flood"}), h.loop.sink(), h.status(), limits);
  REQUIRE(h.loop.until([&] { return src.droppedLines() >= 1000; }, 20s));
  h.loop.run(2000ms);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count();
  // The burst and what the rate let through since; never the flood.
  CHECK(h.loop.drafts.size() >= 50);
  CHECK(h.loop.drafts.size() <= 50 + 10 * secs + 1);
  CHECK(h.anyError("dropped"));
  // Past the bucket the broker reads one buffer (16 KiB, 2,731 lines of "flood") per line due, and
  // `yes` waits on its pipe; read in full, `yes` would have printed millions of lines by now. Twice
  // that, as KJ's timer counts from the loop's last look at the clock, which a slow build makes early.
  CHECK_MESSAGE(src.droppedLines() <= 2 * (2 + 10 * secs) * 2731, ("lines read and dropped: " + std::to_string(src.droppedLines())));
}

TEST_CASE("command source, lines: a line that does not end is read at the pace of lines, not as fast as it is written") {
  {  // one event loop at a time
    Harness h;
    auto limits = fastLimits();
    limits.maxLineBytes = 1000;  // a line's worth of tokens each 1,000 bytes
    limits.linesPerSec = 10;
    limits.lineBurst = 50;
    // 30 KB fit in the burst: read at once, one cut line (the legitimate twin). Then 5 MB without a
    // newline: read in full before, well within a second; now at about 10 KB a second.
    CommandSource src(h.loop.io, commandSource("lines"),
                      h.starter({"/bin/sh", "-c", "head -c 30000 /dev/zero | tr '\\0' x; echo; "
                                                  "head -c 5000000 /dev/zero | tr '\\0' y; echo; echo done; sleep 1000"}),
                      h.loop.sink(), h.status(), limits);
    REQUIRE(h.loop.until([&] { return h.loop.drafts.size() >= 1; }, 5s));
    auto first = payload(h.loop.drafts[0]);
    CHECK(first["cut"] == true);
    CHECK(first["bytes"] == 30000);
    h.loop.run(3000ms);
    CHECK_MESSAGE(h.loop.drafts.size() == 1, payload(h.loop.drafts.back()).dump().substr(0, 200));
  }

  // Whole lines pay with their token alone: 90 lines just under the cap all fit a burst of 100.
  Harness whole;
  CommandSource lines(whole.loop.io, commandSource("lines"),
                      whole.starter({"/bin/sh", "-c", "for i in $(seq 90); do head -c 4000 /dev/zero | tr '\\0' z; echo; done; "
                                                      "sleep 1000"}),
                      whole.loop.sink(), whole.status(), fastLimits());
  CHECK(whole.loop.until([&] { return whole.loop.drafts.size() == 90; }, 10s));
  CHECK(lines.droppedLines() == 0);
}

TEST_CASE("command source, lines: a command that exits is restarted, with backoff, and says so") {
  Harness h;
  CommandSource src(h.loop.io, commandSource("lines"), h.starter({"/bin/sh", "-c", "echo hi; exit 4"}), h.loop.sink(),
                    h.status(), fastLimits());
  REQUIRE(h.loop.until([&] { return h.loop.drafts.size() >= 3; }, 5s));
  CHECK(h.starts >= 3);
  CHECK(h.anyError("exited with 4"));
}

TEST_CASE("command source, lines: while it waits to be started again it is listed as not running, with why") {
  // Before, `pinectl sources` said "running" for a command that had ended and waited 32 s.
  Harness h;
  auto limits = fastLimits();
  limits.restartMinMs = limits.restartMaxMs = 3000;
  CommandSource src(h.loop.io, commandSource("lines"), h.starter({"/bin/sh", "-c", "echo hi; sleep 0.5; exit 4"}),
                    h.loop.sink(), h.status(), limits);
  REQUIRE(h.loop.until([&] { return h.loop.drafts.size() == 1; }, 5s));
  CHECK_FALSE(src.notRunning());  // the twin: running while it runs
  REQUIRE(h.loop.until([&] { return src.notRunning().has_value(); }, 5s));
  CHECK(src.notRunning()->find("exited with 4") != std::string::npos);
  CHECK(src.notRunning()->find("restarting it in 3 s") != std::string::npos);
  REQUIRE(h.loop.until([&] { return h.starts == 2; }, 6s));
  CHECK(h.loop.until([&] { return !src.notRunning().has_value(); }, 2s));
}

TEST_CASE("command source: a start pined refuses is listed as not running, with pined's reason") {
  Harness h;
  h.refuse = "no usable sandbox: Landlock is missing";
  pine::sources::Options options;
  options.startCommand = h.starter({"/bin/true"});
  options.status = h.status();
  pine::sources::SourceManager manager(h.loop.io, h.loop.sink(), noConnectors(), options);
  auto s = commandSource("interval", 60);
  manager.update({s});
  REQUIRE(h.loop.until([&] { return !manager.notRunning().empty(); }, 5s));
  CHECK(manager.notRunning().at("cmd").find("no usable sandbox") != std::string::npos);
  CHECK(manager.running().empty());
  CHECK(h.anyError("the command is not run"));
  // Legitimate twin: a start that succeeds runs and is listed.
  h.refuse.clear();
  manager.update({});
  manager.update({s});
  REQUIRE(h.loop.until([&] { return h.loop.drafts.size() == 1; }, 5s));
  CHECK(manager.running() == std::vector<std::string>{"cmd"});
  CHECK(manager.notRunning().empty());
  auto published = manager.publish("cmd", "x/y", "{}").wait(h.loop.io.waitScope);
  REQUIRE(published);
  CHECK(published->find("is a command") != std::string::npos);
}
