// macOS backend: turns a sandbox Policy into a Seatbelt (SBPL) profile for
// `sandbox-exec`. The profile denies by default and never contains a path:
// every path travels as a `-D NAME=value` parameter and the profile refers to
// it as (param "NAME"), so no path can change what the profile means.
// Built and tested on Linux by golden profiles and structure checks only.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/policy.h"

namespace pine::sandbox {

struct SeatbeltParam {
  std::string name;   // [A-Z][A-Z0-9_]*
  std::string value;  // an absolute, canonical path
};

struct SeatbeltOptions {
  // Refuse writes to what makes git run programs (.git/hooks, .git/config,
  // config.worktree, the .git entry itself), at any depth, under any root.
  bool protectGitControl = true;
  // Tainted sessions: refuse writes to the files read into the prompt
  // (AGENTS.md, SOUL.md, MEMORY.md, USER.md, CLAUDE.md, .pi/, .agents/).
  bool protectInstructionFiles = false;
  // Refuse reading, writing and running secrets files (the path jail's
  // NameRules::secretFiles: .env, .env.*) at any depth, under any root.
  bool protectSecretFiles = true;
};

struct SeatbeltProfile {
  std::string text;                   // the SBPL source, ASCII, no path text
  std::vector<SeatbeltParam> params;  // every (param "X") the text uses, in order
};

// Where sandbox-exec lives; never looked up in PATH.
inline constexpr std::string_view kSandboxExecPath = "/usr/bin/sandbox-exec";

// Lexical macOS canonicalisation of an absolute path: /tmp, /var and /etc are
// symlinks into /private on macOS and Seatbelt matches the resolved path, so a
// rule on /tmp would silently match nothing (fail open for a deny). Refuses
// (std::invalid_argument) relative paths, NUL, empty, "." or ".." components,
// and collapses repeated and trailing slashes.
std::string canonicalMacPath(std::string_view path);

// Builds the profile. A policy for a process that is not a worker (the broker:
// policy.execOnly, listenSockets, tcpPortsOnly) gets process-exec on its
// executable files only and no fork, bind and inbound on its sockets' own paths,
// and TCP on the given ports only. Throws std::invalid_argument on a path canonicalMacPath
// refuses, and std::logic_error if the result fails checkSeatbeltProfile (a
// generator bug: never hand such a profile to sandbox-exec).
SeatbeltProfile buildSeatbeltProfile(const Policy& policy, const SeatbeltOptions& options = {});

// Structure checks; returns the problems found (empty when the profile is
// sound): starts with (version 1) and (deny default); parentheses balanced
// outside string and regex literals; ASCII only; no string literal holds a
// '/'; no path of `policy` or of the parameters appears anywhere in the text;
// every (param "X") used is defined exactly once and every one defined is used;
// no file, exec or network allow without a filter; no deny of file-read*, file-write*
// or process-exec before an allow of the same operation. With an empty `policy`, only
// the text and its parameters are checked (what a stand-in sandbox-exec can see).
std::vector<std::string> checkSeatbeltProfile(const SeatbeltProfile& profile, const Policy& policy);

// The argv that starts `command` under the profile:
//   /usr/bin/sandbox-exec -p PROFILE -D R0=/path ... -- program args...
// (sandbox-exec [-D key=value ...] -p profile command [args]; its getopt stops
// at "--", so a program name starting with '-' is not taken for an option).
// Throws std::invalid_argument when command is empty or a value holds NUL.
std::vector<std::string> sandboxExecArgv(const SeatbeltProfile& profile,
                                         const std::vector<std::string>& command);

// The regular expression (SBPL #"..." body, no anchors) matching one path
// component equal to `name` the way a case-insensitive macOS file system
// compares names: any ASCII case; any non-ASCII run where a letter with a
// non-ASCII equivalent stands (U+212A KELVIN SIGN is k, U+017F LONG S is s);
// and ignorable code points anywhere (HFS+ skips them when comparing). Only
// ASCII letters, digits, '.', '-' and '_' are accepted in `name`; anything
// else throws std::invalid_argument. Exposed for tests.
std::string seatbeltComponentRegex(std::string_view name);

// The same for a one-component glob ('*': any run of characters but '/'), as the path
// jail's name rules write them: ".env.*". Throws std::invalid_argument on a '/', an
// empty pattern or what seatbeltComponentRegex refuses.
std::string seatbeltGlobRegex(std::string_view pattern);

}  // namespace pine::sandbox
