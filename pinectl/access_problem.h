// What to tell a person whom pine's home, a socket or the token refused: daemon
// down, no home there, not in pine's admin group, or added to it after they logged
// in. pinectl often runs in another account than pined (docs/setup.md).
#pragma once
#include <string>

namespace pine {

// `path` (in the home) failed with `err` (an errno from connect or open): one message
// saying what is wrong and what to do.
std::string describeAccessProblem(const std::string& home, const std::string& path, int err);

// The peer closed pined.sock without a word: it refused this account.
std::string describeOwnerSocketRefusal(const std::string& home);

}  // namespace pine
