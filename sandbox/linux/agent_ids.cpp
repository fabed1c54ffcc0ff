#include "sandbox/linux/agent_ids.h"

#include <dirent.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>

#include <memory>
#include <set>
#include <stdexcept>

namespace pine::sandbox {
namespace {

bool ownerOf(const std::string& path, uid_t& uid) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  uid = st.st_uid;
  return true;
}

}  // namespace

SandboxIds pickAgentIds(const std::string& home, const std::string& agent, uid_t first, uid_t last) {
  if (first == 0 || last < first)
    throw std::runtime_error("the workers' id range " + std::to_string(first) + "-" + std::to_string(last) +
                             " is empty or starts at 0 (pined --worker-ids FIRST-LAST)");
  auto inRange = [&](uid_t id) { return id >= first && id <= last; };
  // What the other agents' folders carry.
  std::set<uid_t> taken;
  if (std::unique_ptr<DIR, int (*)(DIR*)> d(opendir((home + "/agents").c_str()), closedir); d) {
    while (dirent* e = readdir(d.get())) {
      std::string name = e->d_name;
      if (name == "." || name == ".." || name == agent) continue;
      uid_t id;
      if (ownerOf(home + "/agents/" + name + "/workspace", id) && inRange(id)) taken.insert(id);
      if (ownerOf(home + "/sandbox/" + name, id) && inRange(id)) taken.insert(id);
    }
  }
  auto free = [&](uid_t id) { return !taken.count(id) && !getpwuid(id) && !getgrgid((gid_t)id); };
  uid_t current;
  if (ownerOf(home + "/agents/" + agent + "/workspace", current) && inRange(current) && free(current))
    return {current, (gid_t)current};
  for (uid_t id = first; id <= last && id >= first; ++id)
    if (free(id) && !uidInUse(id)) return {id, (gid_t)id};
  throw std::runtime_error("every id from " + std::to_string(first) + " to " + std::to_string(last) +
                           " is taken by an account, a group, a process or another agent; agent " + agent +
                           " needs one of its own: give pined another range with --worker-ids FIRST-LAST");
}

}  // namespace pine::sandbox
