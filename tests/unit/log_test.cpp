#include <doctest/doctest.h>
#include <kj/async-io.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "common/log.h"
#include "redact/redactor.h"
#include "supervisor/stderr_log.h"

TEST_CASE("every audit line is one valid JSON object, whatever the fields hold, even from two processes") {
  char dir[] = "/tmp/pine-audit-XXXXXX";
  REQUIRE(mkdtemp(dir));
  std::string path = std::string(dir) + "/audit.jsonl";
  pine::setupLogging("test", "", false);
  pine::setupAudit(path);
  pid_t child = fork();
  REQUIRE(child >= 0);
  for (int i = 0; i < 300; ++i) {
    pine::audit("test.event", {{"i", i},
                               {"text", std::string("quote \" backslash \\ newline \n tab \t nul ") + '\0' + " end"},
                               {"bad_utf8", std::string("\xff\xfe ok")},
                               {"big", std::string(3000, 'x')},
                               {"event", "a field that tries to rename the line"},
                               {"role", "supervisor"}});
  }
  if (child == 0) _exit(0);
  int status;
  waitpid(child, &status, 0);
  std::ifstream in(path);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    REQUIRE_MESSAGE(!j.is_discarded(), "not JSON: " << line.substr(0, 200));
    CHECK(j["event"] == "test.event");
    CHECK(j.contains("ts"));
    CHECK(j["role"] == "test");
    CHECK(j["event_field"] == "a field that tries to rename the line");
    CHECK(j["role_field"] == "supervisor");
    ++lines;
  }
  CHECK(lines == 600);
  unlink(path.c_str());
  rmdir(dir);
}

TEST_CASE("isoTime prints UTC with milliseconds") {
  CHECK(pine::isoTime(0) == "1970-01-01T00:00:00.000Z");
  CHECK(pine::isoTime(1796018719988LL) == "2026-11-30T06:05:19.988Z");
  CHECK(pine::isoTime(951782400007LL) == "2000-02-29T00:00:00.007Z");  // a leap day
  CHECK(pine::isoTime(253402300799999LL) == "9999-12-31T23:59:59.999Z");
  CHECK(pine::isoTime(-1) == "1969-12-31T23:59:59.999Z");
  CHECK(pine::isoTime(253402300800000LL) == "10000-01-01T00:00:00.000Z");
}

TEST_CASE("every log and audit line passes the filter: a known secret and a patterned one never reach the file") {
  char dir[] = "/tmp/pine-logf-XXXXXX";
  REQUIRE(mkdtemp(dir));
  std::string log = std::string(dir) + "/x.log", aud = std::string(dir) + "/a.jsonl";
  pine::setupLogging("test", log, false);
  pine::setupAudit(aud);
  auto r = std::make_shared<const pine::redact::Redactor>(std::vector<std::string>{"known-secret-value-42"});
  pine::setLogFilter([r](std::string_view line) { return r->redact(line); });
  spdlog::info("calling with known-secret-value-42 and ghp_abcdefghijklmnopqrstuvwxyz0123456789");
  pine::audit("test.secret", {{"detail", "token known-secret-value-42"}});
  pine::setLogFilter({});
  std::ifstream l(log), a(aud);
  std::stringstream ls, as;
  ls << l.rdbuf();
  as << a.rdbuf();
  CHECK(ls.str().find("known-secret-value-42") == std::string::npos);
  CHECK(ls.str().find("ghp_abc") == std::string::npos);
  CHECK(ls.str().find("[redacted]") != std::string::npos);
  CHECK(as.str().find("known-secret-value-42") == std::string::npos);
  CHECK_FALSE(nlohmann::json::parse(as.str(), nullptr, false).is_discarded());  // still valid JSON
  std::filesystem::remove_all(dir);
}

TEST_CASE("a log message is one line: newlines and terminal controls from outside text are escaped") {
  char dir[] = "/tmp/pine-logc-XXXXXX";
  REQUIRE(mkdtemp(dir));
  std::string log = std::string(dir) + "/x.log";
  pine::setupLogging("test", log, false);
  // A name a stranger chose: it would forge a second line and clear the reader's screen.
  spdlog::warn("cannot watch {}", "inbox/a\n[2026-12-04 00:00:00.000] [info] all fine\x1b[2J\r\x07 end\tok");
  // A C1 CSI (U+009B, a CSI to terminals that read UTF-8) and a right-to-left override from a
  // server's redirect: before, both reached the log and the terminal as they came.
  spdlog::warn("redirect to {}", "\xc2\x9b" "2J\xc2\x9b" "31mEVIL\xe2\x80\xaeLIVE caf\xc3\xa9 \xe2\x80\x8b.");
  // A filter that finds a secret spanning lines still sees it as it was (it runs first).
  auto r = std::make_shared<const pine::redact::Redactor>(std::vector<std::string>{"line-one\nline-two-secret"});
  pine::setLogFilter([r](std::string_view line) { return r->redact(line); });
  spdlog::info("value line-one\nline-two-secret here");
  pine::setLogFilter({});
  spdlog::info("a plain message stays as it was");
  std::ifstream l(log);
  std::vector<std::string> lines;
  for (std::string line; std::getline(l, line);) lines.push_back(line);
  REQUIRE(lines.size() == 4);
  CHECK(lines[1].find("redirect to \\u009b2J\\u009b31mEVIL\\u202eLIVE caf\xc3\xa9 \\u200b.") != std::string::npos);
  lines.erase(lines.begin() + 1);
  CHECK(lines[0].find("inbox/a\\n[2026-12-04 00:00:00.000] [info] all fine\\x1b[2J\\r\\x07 end\tok") !=
        std::string::npos);
  CHECK(lines[1].find("line-two-secret") == std::string::npos);
  CHECK(lines[1].find("[redacted]") != std::string::npos);
  CHECK(lines[2].find("a plain message stays as it was") != std::string::npos);
  for (auto& line : lines)
    for (char c : line) CHECK_FALSE((((unsigned char)c < 0x20 && c != '\t') || c == 0x7f));
  std::filesystem::remove_all(dir);
}

namespace {

// What logStderrLines writes to a fresh log file for a program that writes `text` and ends.
std::vector<std::string> stderrLogLines(const std::string& label, const std::string& text) {
  char dir[] = "/tmp/pine-logs-XXXXXX";
  REQUIRE(mkdtemp(dir));
  std::string log = std::string(dir) + "/x.log";
  pine::setupLogging("test", log, false);
  auto io = kj::setupAsyncIo();
  auto pipe = io.provider->newOneWayPipe();
  auto done = pine::logStderrLines(kj::mv(pipe.in), label);
  pipe.out->write(text.data(), text.size()).wait(io.waitScope);
  pipe.out = nullptr;  // the program ended
  done.wait(io.waitScope);
  std::ifstream l(log);
  std::vector<std::string> lines;
  for (std::string line; std::getline(l, line);) lines.push_back(line);
  std::filesystem::remove_all(dir);
  return lines;
}

}  // namespace

TEST_CASE("a program's stderr fills pined's log with at most 100 lines a minute, then a count") {
  std::string flood;
  for (int i = 0; i < 5000; ++i) flood += "noise " + std::to_string(i) + "\n";
  flood += std::string(5000, 'x') + "\n";
  flood += "last words without a newline";
  auto lines = stderrLogLines("source program 'noisy'", flood);
  REQUIRE(lines.size() == 101);  // the first 100, then the count
  CHECK(lines[0].find("source program 'noisy': noise 0") != std::string::npos);
  CHECK(lines[99].find("noise 99") != std::string::npos);
  CHECK(lines[100].find("4902 more line(s) on stderr were not logged") != std::string::npos);
}

TEST_CASE("a program's few stderr lines are all logged, a long one cut") {
  auto lines = stderrLogLines("p", "one\ntwo\n" + std::string(5000, 'x') + "\nlast");
  REQUIRE(lines.size() == 4);
  CHECK(lines[2].find(std::string(1000, 'x')) != std::string::npos);
  CHECK(lines[2].find(std::string(1001, 'x')) == std::string::npos);
  CHECK(lines[3].find("p: last") != std::string::npos);
}
