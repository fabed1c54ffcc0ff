// `pinectl redact`: filters stdin to stdout with the supervisor's redaction, so an
// operator can clean a log before sharing it.
#pragma once
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace pine {

// Reads <home>/.env and <home>/data/http-token and redacts in to out.
// Returns the exit status: 0, or 1 when a file exists but cannot be read.
int cmdRedact(const std::string& home, std::istream& in, std::ostream& out);

// KEY=VALUE pairs of a .env text: '#' comments, an optional "export ", single or
// double quotes (double quotes take \n, \t, \", \\ escapes and may span lines), and
// " #" comments after unquoted values.
std::vector<std::pair<std::string, std::string>> parseDotEnv(const std::string& text);

}  // namespace pine
