// The table of processes pined started and has not yet reaped. Reaping goes
// through KJ's child-exit port, so a pid is never signalled after it was reaped.
#pragma once
#include <kj/async-unix.h>
#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace pine {

struct ChildInfo {
  std::string role;  // "broker", "worker", "egress" or "source"
  long long startedAtMs = 0;
  unsigned restarts = 0;
  std::string taskId;
  std::string agent;
};

class ProcessTable {
 public:
  explicit ProcessTable(kj::UnixEventPort& port) : port_(port) {}
  KJ_DISALLOW_COPY(ProcessTable);

  // Registers a child right after it was forked; resolves with its wait status once reaped.
  kj::Promise<int> add(pid_t pid, ChildInfo info);
  // Signals the child's process group (and the child itself), if it has not been reaped.
  void signal(pid_t pid, int sig);
  // Signals every child of `role` ("" for all).
  void signalRole(const std::string& role, int sig);
  std::vector<std::pair<pid_t, ChildInfo>> list() const;
  bool empty() const { return entries_.empty(); }

 private:
  struct Entry {
    kj::Maybe<pid_t> pid;
    ChildInfo info;
  };
  kj::UnixEventPort& port_;
  std::map<pid_t, kj::Own<Entry>> entries_;
};

// "exited with 3", "killed by SIGKILL".
std::string describeWaitStatus(int status);

}  // namespace pine
