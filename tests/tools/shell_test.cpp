// bash: the guard first, then a shell with a minimal environment, a time
// limit that ends the whole process group, capped and stripped output.
#include <signal.h>
#include <stdlib.h>

#include <cerrno>
#include <chrono>
#include <thread>

#include "tools_helpers.h"

using namespace tools_test;
using Clock = std::chrono::steady_clock;

namespace {

ToolResult bash(ToolBox& box, const std::string& command, int timeout = 0) {
  json args{{"command", command}};
  if (timeout > 0) args["timeout_sec"] = timeout;
  return box.run("bash", args);
}

// Gone: no such process, or only a zombie no one waits for (not ours).
bool processGone(pid_t pid) {
  for (int i = 0; i < 100; ++i) {  // give the kernel a moment to finish the kill
    if (kill(pid, 0) != 0 && errno == ESRCH) return true;
    std::string st = slurp("/proc/" + std::to_string(pid) + "/stat");
    if (has(st, ") Z ")) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

pid_t firstNumber(const std::string& text) { return pid_t(std::atoi(text.c_str())); }

}  // namespace

TEST_CASE("the guard refuses before anything runs; a legitimate command runs") {
  Space s;
  auto box = s.box();
  auto r = bash(box, "touch ran.txt; rm -rf ~");
  CHECK(r.isError);
  CHECK(has(r.text, "refused by the command guard"));
  CHECK(has(r.text, "nothing was run"));
  CHECK_FALSE(fsys::exists(s.ws + "/ran.txt"));
  CHECK(fsys::exists(s.home));
  r = bash(box, "python3 -c 'import os'");
  CHECK(r.isError);
  CHECK(has(r.text, "refused by the command guard"));
  // Twins: ordinary work, in the workspace, with stdin closed.
  r = bash(box, "touch ran.txt && pwd && cat");
  CHECK_FALSE(r.isError);
  CHECK(r.text == s.ws + "\n[exit code 0]");
  CHECK(fsys::exists(s.ws + "/ran.txt"));
}

TEST_CASE("stdout and stderr interleave; the exit code is reported") {
  Space s;
  auto box = s.box();
  auto r = bash(box, "echo one; echo two >&2; echo three");
  CHECK(r.text == "one\ntwo\nthree\n[exit code 0]");
  r = bash(box, "echo failing >&2; exit 3");
  CHECK(r.isError);
  CHECK(r.text == "failing\n[exit code 3]");
  r = bash(box, "true");
  CHECK(r.text == "(no output)\n[exit code 0]");
  r = bash(box, "   ");
  CHECK(r.isError);
  CHECK(has(r.text, "empty"));
}

TEST_CASE("the environment is minimal: nothing of the worker's leaks") {
  setenv("PINE_TOOLS_CANARY", "canary-value-91", 1);
  setenv("OPENAI_API_KEY", "sk-test-should-not-leak", 1);
  Space s;
  auto box = s.box();
  auto r = bash(box, "env");
  CHECK_FALSE(r.isError);
  CHECK_FALSE(has(r.text, "canary-value-91"));
  CHECK_FALSE(has(r.text, "sk-test-should-not-leak"));
  CHECK_FALSE(has(r.text, "PINE_"));
  CHECK(has(r.text, "PATH=/usr/local/bin:/usr/bin:/bin\n"));
  CHECK(has(r.text, "LANG=C.UTF-8\n"));
  CHECK(has(r.text, "HOME=" + s.home + "\n"));
  CHECK(has(r.text, "TMPDIR=" + s.tmp + "\n"));
  r = bash(box, "echo \"[$PINE_TOOLS_CANARY]\"");
  CHECK(has(r.text, "[]\n"));
  unsetenv("PINE_TOOLS_CANARY");
  unsetenv("OPENAI_API_KEY");
}

TEST_CASE("the time limit ends the command and its children") {
  Space s;
  auto box = s.box();
  auto t0 = Clock::now();
  auto r = bash(box, "sleep 10 & echo $!; sleep 10", 1);
  auto secs = std::chrono::duration<double>(Clock::now() - t0).count();
  CHECK(secs < 8);  // ended, not hung
  CHECK(r.isError);
  CHECK(has(r.text, "timed out after 1 s"));
  pid_t child = firstNumber(r.text);
  REQUIRE(child > 0);
  CHECK(processGone(child));

  // A shell that ignores SIGTERM gets SIGKILL.
  t0 = Clock::now();
  r = bash(box, "trap '' TERM; echo $$; while true; do sleep 1; done", 1);
  secs = std::chrono::duration<double>(Clock::now() - t0).count();
  CHECK(secs < 10);
  CHECK(has(r.text, "then SIGKILL"));
  pid_t shell = firstNumber(r.text);
  REQUIRE(shell > 0);
  CHECK(processGone(shell));

  // The agent's limit caps what the call asks for.
  ToolEnv e = s.env();
  e.shellTimeoutSec = 1;
  ToolBox capped(e);
  t0 = Clock::now();
  r = bash(capped, "sleep 10", 100);
  CHECK(std::chrono::duration<double>(Clock::now() - t0).count() < 8);
  CHECK(has(r.text, "timed out after 1 s"));
  // Twin: a command within its limit finishes normally.
  r = bash(box, "sleep 0.2; echo done", 5);
  CHECK(r.text == "done\n[exit code 0]");
}

TEST_CASE("background jobs do not outlive the call or hold it open") {
  Space s;
  auto box = s.box();
  auto t0 = Clock::now();
  auto r = bash(box, "sleep 30 & echo $!");
  CHECK(std::chrono::duration<double>(Clock::now() - t0).count() < 8);
  CHECK_FALSE(r.isError);
  pid_t bg = firstNumber(r.text);
  REQUIRE(bg > 0);
  CHECK(processGone(bg));
}

TEST_CASE("long output keeps its head and tail and says how much was cut") {
  Space s;
  ToolEnv e = s.env();
  e.outputCap = 4096;
  ToolBox box(e);
  auto r = bash(box, "seq 1 100000");
  CHECK_FALSE(r.isError);
  CHECK(r.text.rfind("1\n2\n3\n", 0) == 0);
  CHECK(has(r.text, "\n99999\n100000\n[exit code 0]"));
  CHECK(has(r.text, "bytes of output cut from the middle"));
  CHECK(r.text.size() < 4096 + 200);
  // Twin: output under the cap comes whole.
  r = bash(box, "seq 1 100");
  CHECK_FALSE(has(r.text, "cut"));
  CHECK(has(r.text, "\n50\n51\n"));
}

TEST_CASE("terminal control sequences are stripped from the output") {
  Space s;
  auto box = s.box();
  auto r = bash(box, "printf '\\033[31mred\\033[0m plain\\n'");
  CHECK(r.text == "red plain\n[exit code 0]");
  r = bash(box, "printf 'before\\033]52;c;ZXZpbA==\\007after\\n'");  // OSC 52: clipboard write
  CHECK(r.text == "beforeafter\n[exit code 0]");
  r = bash(box, "printf 'rm -rf / \\rls -la \\n'");  // a bare CR would hide the first part on a terminal
  CHECK(r.text == "rm -rf / ls -la \n[exit code 0]");
  CHECK_FALSE(has(r.text, "\r"));
  CHECK_FALSE(has(r.text, "\x1b"));
}
