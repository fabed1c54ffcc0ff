// pine-checkpoint: one job on one agent's workspace for pined, run in its own sandbox (no network;
// the workspace, and the agent's checkpoint folder, which pined hands over as fd 0 because the
// agent's uid cannot reach it by path). Answers one JSON object on stdout; on failure one line
// saying why, on stdout and stderr, and exit 1.
//   pine-checkpoint snapshot TASK before|after WORKSPACE   record the workspace
//   pine-checkpoint changes TASK WORKSPACE [--diff]         what TASK changed
//   pine-checkpoint undo TASK WORKSPACE [--force]           put back what TASK changed
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "checkpoint/changes.h"
#include "checkpoint/fs_walk.h"
#include "checkpoint/manifest.h"
#include "checkpoint/restore.h"
#include "common/sanitizer_no_proc.h"  // no /proc in its sandbox
#include "common/version_flag.h"

using namespace pine::checkpoint;

namespace {

bool plainId(const std::string& s) {
  return !s.empty() && s.size() <= 64 && s[0] != '-' &&
         s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == std::string::npos;
}

int usage() {
  std::cerr << "usage: pine-checkpoint snapshot TASK before|after WORKSPACE | changes TASK WORKSPACE [--diff] | "
               "undo TASK WORKSPACE [--force]   (fd 0: the checkpoint folder)\n";
  return 2;
}

int openWorkspace(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open the workspace " + path + ": " + strerror(errno));
  return fd;
}

}  // namespace

int main(int argc, char** argv) {
  if (pine::printedVersion(argc, argv, "pine-checkpoint")) return 0;
  if (argc < 4) return usage();
  const std::string cmd = argv[1], task = argv[2];
  if (!plainId(task)) {
    std::cerr << "pine-checkpoint: '" << task << "' is not a task id\n";
    return 2;
  }
  const int shadow = 0;
  try {
    nlohmann::json out;
    if (cmd == "snapshot" && argc == 5) {
      const std::string phase = argv[3];
      if (phase != "before" && phase != "after") return usage();
      const std::string id = task + "." + phase;
      // A task started again (a retry, a restart) keeps the checkpoint from before its first attempt.
      if (phase == "before" && exists(shadow, id)) {
        out = {{"id", id}, {"kept", true}};
      } else {
        // A workspace no task has made yet is recorded as empty.
        int ws = open(argv[4], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (ws < 0 && errno != ENOENT) throw std::runtime_error(std::string("cannot open the workspace ") + argv[4] + ": " + strerror(errno));
        Manifest m = ws < 0 ? Manifest{} : snapshot(ws, shadow);
        if (ws >= 0) close(ws);
        save(shadow, id, m);
        out = {{"id", id}, {"files", m.files.size()}, {"skipped", m.skipped.size()}};
      }
    } else if ((cmd == "changes" || cmd == "undo") && argc >= 4 && argc <= 5) {
      const std::string flag = argc == 5 ? argv[4] : "";
      if (!flag.empty() && flag != (cmd == "changes" ? "--diff" : "--force")) return usage();
      if (!exists(shadow, task + ".before") || !exists(shadow, task + ".after"))
        throw std::runtime_error("task " + task + " has no checkpoint (it did not run a worker, ran before " +
                                 "checkpoints existed, or is still running)");
      Manifest before = load(shadow, task + ".before"), after = load(shadow, task + ".after");
      if (cmd == "changes") {
        out = describe(shadow, before, after, flag == "--diff");
      } else {
        int ws = openWorkspace(argv[3]);
        out = undo(ws, shadow, before, after, flag == "--force");
        close(ws);
      }
      out["task"] = task;
    } else {
      return usage();
    }
    std::cout << out.dump() << "\n";
    return 0;
  } catch (std::exception& e) {
    // On stdout too: pined passes the line on as the call's error.
    std::cout << e.what() << "\n";
    std::cerr << "pine-checkpoint: " << e.what() << "\n";
    return 1;
  }
}
