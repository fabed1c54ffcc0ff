// What a command can do to the machine beyond the workspace, judged by program
// and verb: escalate privilege, persist (service managers, schedulers, login
// items), change system, security, network or launch settings (Linux and
// macOS), capture the screen, camera, microphone or clipboard, load kernel
// code, or hand work to another application. Each entry names what the
// program can do, so that a program of the class is refused whatever its
// arguments look like, and only its read-only verbs pass.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace pine::guard {

// args[0] is the program (lower case, canonical); args the words as written.
// Why the command changes the machine, or nullopt.
std::optional<std::string> systemChange(const std::string& name, const std::vector<std::string>& args);

}  // namespace pine::guard
