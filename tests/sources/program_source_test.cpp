// ProgramSource on its own (no pined): the protocol over a real socket pair, with the test as
// the program. The whole path through pined and the broker is tests/integration/source_program_test.
#include <doctest/doctest.h>
#include <kj/async-io.h>

#include "broker/sources/program_line.h"
#include "broker/sources/program_source.h"

using pine::sources::Draft;
using pine::sources::ProgramLink;
using pine::sources::ProgramSource;

namespace {

struct Program {
  kj::Own<kj::AsyncIoStream> end;  // the program's stdin and stdout
  int starts = 0;
};

// Reads up to the next newline from the program's end.
std::string readLine(kj::AsyncIoStream& s, kj::WaitScope& ws) {
  std::string out;
  char c;
  while (s.tryRead(&c, 1, 1).wait(ws) == 1 && c != '\n') out += c;
  return out;
}

}  // namespace

TEST_CASE("program source: events, status, garbage counted, publish written, restarted after its end") {
  auto io = kj::setupAsyncIo();
  auto& ws = io.waitScope;
  auto& timer = io.provider->getTimer();
  Program prog;
  std::vector<Draft> drafts;
  std::string found, error;
  pine::config::Source src;
  src.name = "prog";
  src.trust = pine::config::Trust::Owner;
  src.options["mode"] = "x";
  pine::sources::ProgramLimits limits;
  limits.maxLineBytes = 100;
  auto starter = [&](const std::string&) -> kj::Promise<ProgramLink> {
    auto pipe = io.provider->newTwoWayPipe();
    prog.end = kj::mv(pipe.ends[1]);
    ++prog.starts;
    ProgramLink link;
    link.stream = kj::mv(pipe.ends[0]);
    link.exited = [] { return kj::Promise<std::string>(std::string("exited with 0")); };
    return link;
  };
  ProgramSource source(timer, src, starter, [&](Draft d) { drafts.push_back(std::move(d)); },
                       [&](const std::string&, const std::string& f, const std::string& e) {
                         if (e.empty()) found = f;
                         else error = e;
                       },
                       limits);
  timer.afterDelay(50 * kj::MILLISECONDS).wait(ws);
  REQUIRE(prog.starts == 1);
  CHECK(readLine(*prog.end, ws) == R"({"options":{"mode":"x"},"source":"prog"})");
  CHECK_FALSE(source.whyNotRunning());

  std::string lines = std::string("{\"topic\":\"a/b\",\"payload\":{\"n\":1}}\n") + "garbage\n" +
                      "{\"topic\":\"pine/x\",\"payload\":1}\n" + "{\"payload\":\"" + std::string(200, 'z') + "\"}\n" +
                      "{\"payload\":2}\n" + "{\"status\":{\"found\":5}}\n";
  prog.end->write(lines.data(), lines.size()).wait(ws);
  timer.afterDelay(100 * kj::MILLISECONDS).wait(ws);
  REQUIRE(drafts.size() == 2);
  CHECK(drafts[0].topic == "a/b");
  CHECK(drafts[0].payload == R"({"n":1})");
  CHECK(drafts[0].trust == "owner");
  CHECK(drafts[1].topic == "prog");  // no topic: the source's name
  CHECK(source.dropped() == 3);      // not JSON, pine's own topic, too long
  CHECK(found == "5");
  CHECK(error.find("skipped") != std::string::npos);

  // Publish requests reach the program as lines; a payload that is not JSON goes as a string.
  CHECK_FALSE(source.publish("cmd/x", R"({"on":true})"));
  CHECK_FALSE(source.publish("cmd/y", "plain"));
  CHECK(readLine(*prog.end, ws) == R"({"publish":{"payload":{"on":true},"topic":"cmd/x"}})");
  CHECK(readLine(*prog.end, ws) == R"({"publish":{"payload":"plain","topic":"cmd/y"}})");

  // The program ends: why is known at once, and it is started again after the backoff.
  prog.end->shutdownWrite();
  timer.afterDelay(100 * kj::MILLISECONDS).wait(ws);
  auto why = source.whyNotRunning();
  REQUIRE(why);
  CHECK(why->find("exited with 0") != std::string::npos);
  CHECK(source.publish("cmd/x", "1")->find("cannot publish") != std::string::npos);
  timer.afterDelay(1200 * kj::MILLISECONDS).wait(ws);
  CHECK(prog.starts == 2);
  CHECK_FALSE(source.whyNotRunning());
}

TEST_CASE("program source: checkProgramTopic refuses pine's own topics and wildcards") {
  CHECK_FALSE(pine::sources::checkProgramTopic("house/door"));
  CHECK(pine::sources::checkProgramTopic("agent/main"));
  CHECK(pine::sources::checkProgramTopic("state"));
  CHECK(pine::sources::checkProgramTopic("a/+/b"));
  CHECK(pine::sources::checkProgramTopic(""));
}

TEST_CASE("program source: a line is an event, a status, blank, or skipped with why; deep nesting is skipped unread") {
  using pine::sources::ProgramLine;
  using pine::sources::readProgramLine;
  auto e = readProgramLine("{\"topic\": \"weather/now\", \"payload\": {\"t\": 21.5}}\r", "weather");
  CHECK(e.kind == ProgramLine::Event);
  CHECK(e.topic == "weather/now");
  CHECK(e.payload == "{\"t\":21.5}");
  CHECK(readProgramLine("{\"payload\": 1}", "weather").topic == "weather");
  CHECK(readProgramLine("{\"status\": {\"found\": 3}}", "w").found == "3");
  CHECK(readProgramLine("  \t", "w").kind == ProgramLine::Blank);
  CHECK(readProgramLine("{\"topic\": \"agent/main\", \"payload\": 1}", "w").why.find("pine's own topics") != std::string::npos);
  CHECK(readProgramLine("[1]", "w").why == "a line that is not a JSON object");
  // 64 levels are data; 500,000 would recurse once per level when printed again: skipped unread.
  std::string ok = "{\"payload\": " + std::string(62, '[') + std::string(62, ']') + "}";
  CHECK(readProgramLine(ok, "w").kind == ProgramLine::Event);
  std::string deep = "{\"payload\": " + std::string(500000, '[') + std::string(500000, ']') + "}";
  auto d = readProgramLine(deep, "w");
  CHECK(d.kind == ProgramLine::Skipped);
  CHECK(d.why == "a line nested deeper than 64 levels");
}
