// ProgramSource on its own (no pined): the protocol over a real socket pair, with the test as
// the program. The whole path through pined and the broker is tests/integration/source_program_test.
#include <doctest/doctest.h>
#include <kj/async-io.h>

#include <functional>

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

// Starts "the program" as a pipe whose other end the test holds in prog.end; it exits with 0.
std::function<kj::Promise<ProgramLink>(const std::string&)> pipeStarter(kj::AsyncIoContext& io, Program& prog) {
  return [&io, &prog](const std::string&) -> kj::Promise<ProgramLink> {
    auto pipe = io.provider->newTwoWayPipe();
    prog.end = kj::mv(pipe.ends[1]);
    ProgramLink link;
    link.stream = kj::mv(pipe.ends[0]);
    link.exited = [] { return kj::Promise<std::string>(std::string("exited with 0")); };
    return link;
  };
}

// A started program under `limits`, its first line (the source's options) already read: events go
// to drafts, status lines are counted.
struct PacedProgram {
  kj::AsyncIoContext io = kj::setupAsyncIo();
  kj::WaitScope& ws = io.waitScope;
  kj::Timer& timer = io.provider->getTimer();
  Program prog;
  std::vector<Draft> drafts;
  int statuses = 0;
  pine::config::Source src;
  ProgramSource source;

  explicit PacedProgram(pine::sources::ProgramLimits limits)
      : src([] {
          pine::config::Source s;
          s.name = "prog";
          return s;
        }()),
        source(timer, src, pipeStarter(io, prog), [this](Draft d) { drafts.push_back(std::move(d)); },
               [this](const std::string&, const std::string& f, const std::string&) { statuses += !f.empty(); },
               limits) {
    timer.afterDelay(50 * kj::MILLISECONDS).wait(ws);
    readLine(*prog.end, ws);
  }
  void write(const std::string& text) { prog.end->write(text.data(), text.size()).wait(ws); }
  void wait(int ms) { timer.afterDelay(ms * kj::MILLISECONDS).wait(ws); }
};

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

TEST_CASE("program source: status lines and lines to skip count against the pace, as events do") {
  // A program printing status or garbage without pause held the broker's loop (a store write a
  // status line): every line now counts, so the program waits, not the broker.
  for (unsigned perSecond : {10u, 1000u}) {
    pine::sources::ProgramLimits limits;
    limits.eventsPerSecond = perSecond;
    PacedProgram p(limits);
    std::string flood;
    for (int i = 0; i < 50; ++i) flood += "{\"status\":{\"found\":" + std::to_string(i) + "}}\nnot json\n";
    p.write(flood);
    p.wait(200);
    if (perSecond == 10) CHECK(p.statuses <= 10);  // the first second's lines, no more
    else CHECK(p.statuses == 50);
    p.write("{\"topic\":\"a/b\",\"payload\":1}\n");
    p.wait(300);
    if (perSecond == 10) CHECK(p.drafts.empty());  // 100 lines at 10 a second: the program waits
    else CHECK(p.drafts.size() == 1);               // the twin: under the pace, the event comes at once
  }
}

TEST_CASE("program source: a flood of short lines is read at the pace, not a whole read at once") {
  // Before: every line of a 64 KiB read was taken before the pace was looked at (at 1,000 a second,
  // 1,753 events in 100 ms), and 1,999 lines waited only one second.
  for (unsigned perSecond : {100u, 100000u}) {
    CAPTURE(perSecond);
    pine::sources::ProgramLimits limits;
    limits.eventsPerSecond = perSecond;
    PacedProgram p(limits);
    std::string flood;
    for (int i = 0; i < 1000; ++i) flood += "{\"payload\":" + std::to_string(i) + "}\n";  // 15 to 17 bytes a line
    const auto began = std::chrono::steady_clock::now();
    auto writing = p.prog.end->write(flood.data(), flood.size()).eagerlyEvaluate(nullptr);
    // At most 100 for each second begun since (the pace's seconds start at the first line).
    auto mostSoFar = [&] {
      auto s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
      return 100 * (1 + static_cast<size_t>(s));
    };
    p.wait(500);
    if (perSecond == 100) {
      CHECK(p.drafts.size() <= mostSoFar());
      p.wait(1000);
      CHECK(p.drafts.size() > 100);  // the next second's came
      CHECK(p.drafts.size() <= mostSoFar());
    } else {
      CHECK(p.drafts.size() == 1000);  // the twin: under the pace, all of them at once
    }
  }
}

TEST_CASE("program source: bytes count against the pace too, so a line that never ends is read slowly") {
  for (size_t perSecond : {size_t{100'000}, size_t{8} << 20}) {
    pine::sources::ProgramLimits limits;
    limits.bytesPerSecond = perSecond;
    PacedProgram p(limits);
    // 400 KB of a line that is not an event (skipped), then an event.
    std::string endless(400'000, 'x');
    std::string event = "\n{\"topic\":\"a/b\",\"payload\":1}\n";
    auto written = p.prog.end->write(endless.data(), endless.size())
                       .then([&]() { return p.prog.end->write(event.data(), event.size()); })
                       .eagerlyEvaluate(nullptr);
    p.wait(500);
    if (perSecond == 100'000) CHECK(p.drafts.empty());  // 400 KB at 100 KB a second: the program waits
    else CHECK(p.drafts.size() == 1);                    // the twin: under the pace, read at once
  }
}

TEST_CASE("program source: skipped lines within a second of a report are reported once it is over") {
  // Reported at most once a second; before, what followed a report in its second was never told.
  auto io = kj::setupAsyncIo();
  auto& ws = io.waitScope;
  auto& timer = io.provider->getTimer();
  Program prog;
  std::vector<std::string> errors;
  pine::config::Source src;
  src.name = "prog";
  auto starter = pipeStarter(io, prog);
  ProgramSource source(timer, src, starter, [](Draft) {},
                       [&](const std::string&, const std::string&, const std::string& e) {
                         if (!e.empty()) errors.push_back(e);
                       },
                       pine::sources::ProgramLimits{});
  timer.afterDelay(50 * kj::MILLISECONDS).wait(ws);
  readLine(*prog.end, ws);
  std::string lines = "garbage\n[1]\n{\"topic\":\"pine/x\",\"payload\":1}\n";
  prog.end->write(lines.data(), lines.size()).wait(ws);
  timer.afterDelay(200 * kj::MILLISECONDS).wait(ws);
  REQUIRE(errors.size() == 1);  // the first at once
  CHECK(errors[0].find("1 line(s)") != std::string::npos);
  timer.afterDelay(1100 * kj::MILLISECONDS).wait(ws);
  REQUIRE(errors.size() == 2);  // the other two once the second is over, with the last reason
  CHECK(errors[1].find("3 line(s)") != std::string::npos);
  CHECK(errors[1].find("pine") != std::string::npos);
  timer.afterDelay(1100 * kj::MILLISECONDS).wait(ws);
  CHECK(errors.size() == 2);  // nothing new, nothing more
  CHECK(source.dropped() == 3);
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
  // A NUL is not JSON: before, the parser stopped at it, so the line's start was an event and the
  // rest (here another event for a reserved topic) vanished uncounted.
  using namespace std::string_literals;
  for (const std::string& nul : {"{\"payload\": \"kept\"}\0{\"topic\": \"agent/main\", \"payload\": 1} x"s,
                                 "{\"payload\": 1}\0"s, "{\"payload\": \"a\0b\"}"s}) {
    CAPTURE(nul);
    auto l = readProgramLine(nul, "w");
    CHECK(l.kind == ProgramLine::Skipped);
    CHECK(l.why == "a line that is not a JSON object");
  }
  CHECK(readProgramLine("{\"payload\": \"a\\u0000b\"}", "w").kind == ProgramLine::Event);  // the escaped twin
  // The default topic (the source's name) is checked like a written one: before, a source named
  // "state" published on pine's own topics.
  CHECK(readProgramLine("{\"payload\": 1}", "state").why.find("pine's own topics") != std::string::npos);
  CHECK(readProgramLine("{\"payload\": 1}", "stately").kind == ProgramLine::Event);
}
