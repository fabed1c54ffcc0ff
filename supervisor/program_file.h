// What add_source_type shows the owner about a program in an agent's workspace, and the copy
// into pine's home that is made once the owner said yes (proto Supervisor.sourceProgram). The
// broker cannot read workspaces, so pined reads the file here: only a regular file reached
// without following any symlink, inside the agent's workspace.
#pragma once
#include <cstdint>
#include <string>

namespace pine {

struct ProgramFile {
  std::string error;    // why the file cannot be used; the rest is empty then
  uint64_t size = 0;
  std::string sha256;   // lowercase hex
  std::string head;     // the first lines, control and non-ASCII bytes escaped as \xNN
  std::string content;  // the bytes
};

constexpr uint64_t kMaxProgramBytes = 64ull << 20;  // a source program larger than this is refused
constexpr int kProgramHeadLines = 20;

// path: relative to workspace, or absolute under it. Never follows a symlink, refuses "..".
ProgramFile readProgramFile(const std::string& workspace, const std::string& path);

// The first `lines` lines of `bytes` (each at most 200 bytes shown), printable ASCII kept,
// everything else written \xNN, so that no terminal escape or invisible character reaches the question.
std::string escapedHead(const std::string& bytes, int lines);

// Copies `content` to <home>/source-types/<name>-<sha12> (directory 0755, file 0555: readable and
// runnable, writable by nobody but its owner changing the mode) and returns the path relative to
// home. Throws std::runtime_error saying what failed.
std::string installProgram(const std::string& home, const std::string& name, const std::string& sha256,
                           const std::string& content);

}  // namespace pine
