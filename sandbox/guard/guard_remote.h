// Code and data from remote sources the owner did not configure: a package
// manager told to install from a URL, a git repository or another index, and
// a version-control command aimed at a network location given on the command
// line (or one it would read from files any clone can carry, .gitmodules).
// Installing a named package from the configured registry and fetching from
// or pushing to a repository's configured remotes stay with the sandbox's
// network policy: those destinations are the owner's (.git/config and the
// private home's configuration are read-only to a session that read outside
// content), while a URL in a command may be anyone's.
#pragma once
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace pine::guard {

// A word that names a network location: scheme://, user@host:path, host:path,
// git+https, github:owner/repo, ... (file:// and local paths are not).
bool isRemoteLocation(const std::string& word);

// args[0] is the program (lower case, canonical). Why it installs from, runs
// from or points at a remote source, or nullopt.
std::optional<std::string> remoteSource(const std::string& name, const std::vector<std::string>& args);

// git SUB REST...: why the subcommand reaches a network location the
// repository does not already trust, or nullopt. addedRemotes holds the
// remotes this command pointed at a network location (git remote add NAME URL):
// adding one is configuration, using it in the same command is reaching that URL.
std::optional<std::string> gitRemote(const std::string& sub, const std::vector<std::string>& rest,
                                     std::set<std::string>& addedRemotes);

}  // namespace pine::guard
