// `pinectl redact`: filters stdin to stdout with the supervisor's redaction, so an
// operator can clean a log before sharing it.
#pragma once
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "redact/redactor.h"

namespace pine {

// Reads <home>/.env and <home>/data/http-token and redacts in to out.
// Returns the exit status: 0, or 1 when a file exists but cannot be read.
int cmdRedact(const std::string& home, std::istream& in, std::ostream& out);

// A redactor of the home's .env values (8 characters or more) and control token, and the
// patterns; nothing, with `error` saying which file, when one exists but cannot be read.
// `shortKeys` names the .env keys whose values are too short to be matched as known values.
std::optional<redact::Redactor> homeRedactor(const std::string& home, std::string& error, std::string& shortKeys);

// KEY=VALUE pairs of a .env text: '#' comments, an optional "export ", single or
// double quotes (double quotes take \n, \t, \", \\ escapes and may span lines), and
// " #" comments after unquoted values.
std::vector<std::pair<std::string, std::string>> parseDotEnv(const std::string& text);

}  // namespace pine
