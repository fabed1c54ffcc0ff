// The SHA-256 of a program file that pine runs with its rights (a source's `use`, a registered
// source type), so that `pinectl check` can name exactly what runs, and add_source_type can
// show the owner what they confirm (supervisor/program_file).
#pragma once
#include <string>
#include <string_view>

namespace pine::config {

// file: as written in pine.yaml (relative to home, or absolute). Lowercase hex, or "" when the
// file cannot be read.
std::string programSha256(const std::string& home, const std::string& file);

}  // namespace pine::config
