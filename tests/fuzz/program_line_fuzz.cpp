// One line a source program printed (broker/sources/program_line.h), any bytes: nothing may
// crash (ASan, UBSan), throw or recurse without bound; an event's topic is the default or one
// checkProgramTopic accepts and its payload is JSON that parses again; a skipped line says why;
// only a line of blanks is blank.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "broker/sources/program_line.h"
#include "broker/sources/program_source.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::string fallback = "weather";
  auto l = pine::sources::readProgramLine(in, fallback);
  switch (l.kind) {
    case pine::sources::ProgramLine::Blank:
      FUZZ_CHECK(in.find_first_not_of(" \t\r") == std::string_view::npos || in == "\r", "a line with text read as blank");
      break;
    case pine::sources::ProgramLine::Skipped:
      FUZZ_CHECK(!l.why.empty(), "a skipped line without a reason");
      break;
    case pine::sources::ProgramLine::Status:
      break;
    case pine::sources::ProgramLine::Event:
      FUZZ_CHECK(l.topic == fallback || !pine::sources::checkProgramTopic(l.topic), "an event on a refused topic");
      FUZZ_CHECK(!nlohmann::json::parse(l.payload, nullptr, false).is_discarded(), "a payload that is not JSON");
      break;
  }
  return 0;
}
