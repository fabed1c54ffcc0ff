// What a program pined runs for the owner (a source program, an MCP server) writes to stderr,
// into pined's log: whole lines, each cut at 1,000 bytes, at most 100 a minute; the lines beyond
// are counted, and the count is logged when the next minute begins or the stream ends. The log
// is not the program's to fill.
#pragma once
#include <kj/async-io.h>

#include <string>

namespace pine {

inline constexpr size_t kStderrLineBytes = 1000;
inline constexpr int kStderrLinesPerMinute = 100;

// Resolves when `in` ends. `label` starts each line ("source program 'x'").
kj::Promise<void> logStderrLines(kj::Own<kj::AsyncInputStream> in, std::string label);

}  // namespace pine
