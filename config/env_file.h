// .env: the one file that holds secret values. The supervisor reads values;
// configuration validation needs only the names.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "config/errors.h"

namespace pine::config {

// Lines are KEY=VALUE, optionally prefixed by `export `; blank lines and lines
// starting with '#' are skipped. Values may be bare (trailing ` # comment`
// dropped, surrounding blanks trimmed), 'single-quoted' (literal) or
// "double-quoted" (\n \t \" \\ \$ escapes). A line that is none of these, a
// name that is not [A-Z_][A-Z0-9_]*, or a name given twice is an error with
// its line number; such lines contribute nothing.
std::map<std::string, std::string> parseEnvText(const std::string& text, const std::string& file,
                                                std::vector<ConfigError>* errors);

// Reads and parses path. A missing file is an empty map and no error.
std::map<std::string, std::string> parseEnvFile(const std::string& path, std::vector<ConfigError>* errors = nullptr);

// The names only; values are wiped before the parse result is released. With `shortOnes`,
// also the names whose value has fewer than minBytes bytes (webhook secrets must be longer).
std::set<std::string> envFileNames(const std::string& path, std::vector<ConfigError>* errors,
                                   std::set<std::string>* shortOnes = nullptr, std::size_t minBytes = 0,
                                   std::set<std::string>* tinyOnes = nullptr, std::size_t tinyBytes = 0);

}  // namespace pine::config
