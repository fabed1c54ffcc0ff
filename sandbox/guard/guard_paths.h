// Where a path written in a shell command points, judged lexically (the guard
// never touches the file system): the workspace, tmp, home, a system path, a
// device. And which paths hold credentials or must not be written by a shell.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pine::guard {

// Marks text the guard could not compute (an unknown $VAR, $(...) output).
inline constexpr char kDynamic = '\x01';

enum class Where {
  Workspace,      // relative, inside the workspace
  WorkspaceRoot,  // ".", "*", "./*": the whole workspace
  Outside,        // relative but climbing out with ".."
  Tmp,            // under /tmp, /var/tmp, /dev/shm, ...
  Home,           // inside a home directory (~, $HOME, /home/x, /root, /Users/x)
  HomeRoot,       // a home directory itself, or all of it ("~", "~/*")
  Root,           // "/" or everything right under it ("/*")
  System,         // any other absolute path
  Device,         // /dev/sda, /dev/mem, ...
  DevSafe,        // /dev/null, /dev/stdout, /dev/fd/N, ...
  Dynamic,        // starts with something computed at run time
};

struct PathInfo {
  Where where = Where::Workspace;
  std::string display;             // normalised text for messages (~/x, /x, x)
  // Normalised components (home: after the home dir; /private/etc as etc),
  // folded (name_fold.h) so that rules compare them with lower-case names.
  std::vector<std::string> comps;
};

// cwd: "" for the workspace, else a normalised "~/x", "/x" or "x" the script cd'ed to.
PathInfo classifyPath(std::string_view path, std::string_view cwd, bool cwdKnown);

// Why deleting (recursive: a whole tree) the path would be destructive.
std::optional<std::string> destructiveReason(const PathInfo& p, bool recursive);
// Why a shell must not write the path (outside the workspace or a protected
// name: .git's hooks and config at any depth, .git itself, .env, .pine, agent
// instruction files), compared case-insensitively as macOS and the jail do.
std::optional<std::string> writeReason(const PathInfo& p);
// Why reading the path is a credential read (or reads another application's
// private data: mail, messages, browsers, the macOS privacy database).
std::optional<std::string> credentialReason(const PathInfo& p);

}  // namespace pine::guard
