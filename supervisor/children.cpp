#include "supervisor/children.h"

#include "supervisor/kill_session.h"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

namespace pine {

kj::Promise<int> ProcessTable::add(pid_t pid, ChildInfo info) {
  auto entry = kj::heap<Entry>();
  entry->pid = pid;
  // Only a worker, a command source, a source program or an MCP server runs programs of its choosing: the broker and
  // pine-egress may exec nothing, so the walk of every process is spent where something can be left behind.
  const bool runsPrograms = info.role == "worker" || info.role == "command" || info.role == "source" ||
                             info.role == "mcp";
  entry->info = std::move(info);
  auto promise = port_.onChildExit(entry->pid);
  entries_[pid] = kj::mv(entry);
  return promise.then([this, pid, runsPrograms](int status) {
    entries_.erase(pid);
    // Whatever the child left in its process group or its session goes with it: nothing is orphaned.
    ::kill(-pid, SIGKILL);
    if (runsPrograms) killSession(pid);
    return status;
  });
}

void ProcessTable::signal(pid_t pid, int sig) {
  auto it = entries_.find(pid);
  if (it == entries_.end()) return;
  KJ_IF_MAYBE(p, it->second->pid) {
    ::kill(-*p, sig);
    ::kill(*p, sig);
  }
}

void ProcessTable::signalRole(const std::string& role, int sig) {
  for (auto& [pid, entry] : entries_)
    if (role.empty() || entry->info.role == role) signal(pid, sig);
}

std::vector<std::pair<pid_t, ChildInfo>> ProcessTable::list() const {
  std::vector<std::pair<pid_t, ChildInfo>> out;
  for (auto& [pid, entry] : entries_) out.emplace_back(pid, entry->info);
  return out;
}

std::string describeWaitStatus(int status) {
  if (WIFEXITED(status)) return "exited with " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const char* name = sigabbrev_np(WTERMSIG(status));
    return std::string("killed by SIG") + (name ? name : std::to_string(WTERMSIG(status)).c_str());
  }
  return "ended with status " + std::to_string(status);
}

}  // namespace pine
