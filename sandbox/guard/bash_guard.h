// The bash guard: defence in depth in front of the OS sandbox, never instead of
// it. It normalises a shell command (quotes, escapes, expansions it can resolve,
// wrappers such as env/xargs/sh -c/eval) and refuses, by what a command can do:
// destructive commands aimed at home or root, inline interpreter code, registry
// publish verbs, git escape hatches, network tools and remote sources, credential
// and other applications' data reads, shell writes into protected paths (names
// folded as macOS and the path jail compare them), privilege escalation,
// persistence, system and security settings, capture, environment injection and
// payloads written then run. README.md lists the classes. What it cannot read
// with certainty it refuses (fail closed).
#pragma once
#include <string>
#include <string_view>

namespace pine::guard {

struct Verdict {
  bool allowed = false;
  std::string reason;  // why it was refused; empty when allowed
};

// Classifies one shell command (it may hold several lines, pipelines, ...).
// Never throws: anything that goes wrong inside is a refusal with a reason.
Verdict checkBashCommand(std::string_view command) noexcept;

}  // namespace pine::guard
