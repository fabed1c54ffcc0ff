// pinectl guard bash: classifies shell commands read from stdin with the bash guard.
#pragma once
#include <iosfwd>

namespace pine {

// One command per input line (with json, one JSON string per line, so that a
// command may hold newlines). Prints "allow" or "block: <reason>" per line, in order.
int cmdGuardBash(std::istream& in, std::ostream& out, bool json);

}  // namespace pine
