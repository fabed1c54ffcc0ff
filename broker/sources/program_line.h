// One line a source program printed (docs/sources.md, source programs), read without trusting
// it: an event ({"topic"?, "payload"}), its status ({"status": {"found": X}}), a blank line,
// or a line that is skipped and why. Never throws; JSON nested deeper than kMaxJsonDepth is
// skipped before it is parsed (printing it again would recurse once per level).
#pragma once
#include <string>
#include <string_view>

namespace pine::sources {

struct ProgramLine {
  enum Kind { Blank, Status, Event, Skipped } kind = Blank;
  std::string found;    // Status: the value found, as text ("" when none)
  std::string topic;    // Event: the line's topic, or the default
  std::string payload;  // Event: the payload as compact JSON
  std::string why;      // Skipped
};

ProgramLine readProgramLine(std::string_view text, const std::string& defaultTopic);

}  // namespace pine::sources
