#include "supervisor/checkpoint_call.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/cloexec.h"
#include "common/log.h"
#include "common/sanitizer_env.h"
#include "common/unix_socket.h"
#include "sandbox/policy.h"
#include "supervisor/spawn.h"
#include "supervisor/supervisor.h"

namespace pine {
namespace {

void makeCheckpointDir(const std::string& path) {
  if (mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
    throw std::runtime_error("cannot create " + path + ": " + strerror(errno));
}

bool isCheckpointDir(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The workspace as the agent's sandbox makes it (and, as root, hands it over), in case no task of
// the agent has run yet: pine-launch opens it as the agent's uid.
void makeWorkspace(Supervisor& sup, const std::string& agent) {
  const std::string home = sup.home().root;
  for (const auto& d : {home + "/agents", home + "/agents/" + agent, home + "/agents/" + agent + "/workspace"})
    makeCheckpointDir(d);
  const auto& host = sup.sandboxHost();
  host.handOverAgentFolders(home, {"agents/" + agent + "/workspace"}, {}, host.agentIds(home, agent));
}

sandbox::Policy checkpointPolicy(const std::string& program, const std::string& workspace, const std::string& shadow,
                                 CheckpointAccess mode) {
  sandbox::Policy pol;
  pol.network = sandbox::Network::None;
  for (const char* r : {"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/etc/ld.so.cache", "/dev/null"})
    if (::access(r, F_OK) == 0) pol.readable.push_back(sandbox::canonicalPath(r));
  pol.execOnly = true;  // it runs nothing, least of all what the workspace names
  pol.executable.push_back(sandbox::canonicalPath(program));
  if (auto loader = sandbox::elfInterpreter(program); !loader.empty()) pol.executable.push_back(loader);
  // Only while it writes the workspace back (undo) is the workspace writable; the checkpoint
  // folder is written while it records.
  if (isCheckpointDir(workspace))
    (mode == CheckpointAccess::WriteWorkspace ? pol.writable : pol.readable).push_back(sandbox::canonicalPath(workspace));
  (mode == CheckpointAccess::WriteWorkspace ? pol.readable : pol.writable).push_back(sandbox::canonicalPath(shadow));
  return pol;
}

}  // namespace

kj::Promise<std::string> runCheckpoint(Supervisor& sup, kj::LowLevelAsyncIoProvider& io, const std::string& agent,
                                       const std::vector<std::string>& args, CheckpointAccess mode) {
  const std::string home = sup.home().root;
  const std::string workspace = home + "/agents/" + agent + "/workspace";
  const std::string shadow = home + "/checkpoints/" + agent;
  const auto& host = sup.sandboxHost();
  // The ids after the workspace is handed over: they are its owner's from then on. Picked before,
  // a workspace no uid owned yet could get another uid than the checkpoint (the first free one
  // changes as processes come and go), and checkpoints written under one uid were closed to the
  // next (CI: "cannot create blobs/5a in the checkpoint folder: Permission denied").
  makeWorkspace(sup, agent);
  const sandbox::SandboxIds ids = host.agentIds(home, agent);
  makeCheckpointDir(home + "/checkpoints");
  makeCheckpointDir(shadow);
  // As root: checkpoints/ is pined's, 711 (pine-launch, as the agent's uid, must open the agent's
  // folder by path for its Landlock rule; no uid but root may list it), and checkpoints/<agent>/
  // the agent's uid's, 700. A worker, with the same uid, is kept out by its sandbox, which never
  // grants anything of pine's home.
  if (host.root() && (chmod((home + "/checkpoints").c_str(), 0711) != 0 || chown(shadow.c_str(), ids.uid, ids.gid) != 0))
    throw std::runtime_error("cannot hand " + shadow + " to the agent's uid: " + strerror(errno));
  const std::string program = programDir() + "/pine-checkpoint";
  sandbox::PreparedSandbox box;
  box.policy = checkpointPolicy(program, workspace, shadow, mode);
  box.cwd = "/";
  sandbox::LaunchParams launch;
  launch.cwd = "/";
  launch.ids = ids;
  launch.seatbelt = sandbox::SeatbeltOptions{false, false, true};
  host.launch(box, launch);

  kj::AutoCloseFd shadowFd(open(shadow.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (shadowFd.get() < 0) throw std::runtime_error("cannot open " + shadow + ": " + strerror(errno));
  int sv[2];
  if (socketpairCloexec(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
    throw std::runtime_error(std::string("socketpair: ") + strerror(errno));
  kj::AutoCloseFd ours(sv[0]), theirs(sv[1]);
  SpawnSpec spec;
  spec.program = program;
  spec.args = {program};
  for (const auto& a : args) spec.args.push_back(a);
  // snapshot TASK PHASE WORKSPACE; changes|undo TASK WORKSPACE [flag]
  spec.args.insert(spec.args.begin() + (args.at(0) == "snapshot" ? 4 : 3), workspace);
  spec.env = {"LANG=C.UTF-8"};
  for (auto& e : sanitizerEnvironment(true)) spec.env.push_back(std::move(e));
  spec.stdinFd = shadowFd.get();
  spec.stdoutFd = theirs.get();
  sup.useSandbox(spec, box);
  spec.launcher = sup.options().launcherProgram.empty() ? programDir() + "/pine-launch" : sup.options().launcherProgram;
  spec.label = "checkpoint " + agent;
  pid_t pid = spawnChild(spec);
  theirs = nullptr;
  shadowFd = nullptr;
  auto exit = sup.adoptSourceProgram(pid, agent, "checkpoint");
  auto stream = io.wrapSocketFd(ours.release(), kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP);
  auto read = stream->readAllText(64u << 20);
  return read.attach(kj::mv(stream)).then([exit = kj::mv(exit)](kj::String text) mutable {
    return exit.addBranch().then([text = std::string(text.cStr())](int status) -> std::string {
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        // Its one line of why (a failure's text, not parsed here), or how it ended.
        std::string why = text.substr(0, std::min<size_t>(text.find('\n'), 2000));
        throw std::runtime_error(why.empty() ? "pine-checkpoint " + describeWaitStatus(status) : why);
      }
      return text;
    });
  });
}

kj::Promise<void> checkpointTask(Supervisor& sup, kj::LowLevelAsyncIoProvider& io, const std::string& task,
                                 const std::string& agent, const std::string& phase, bool tainted) {
  auto failed = [task, agent, phase](const std::string& why) {
    audit("checkpoint.failed", {{"task", task}, {"agent", agent}, {"phase", phase}, {"reason", why}});
    spdlog::warn("task {} (agent {}): no checkpoint {} it ran, so `pinectl changes` and `undo` cannot show or undo it: {}",
                 task, agent, phase == "before" ? "before" : "after", why);
  };
  try {
    if (phase == "before" && tainted) {
      // The empty instruction files pined makes for a tainted run (sandbox/agent_sandbox.cpp) are
      // made first, so that they do not count as the run's changes; making them is idempotent.
      const auto& host = sup.sandboxHost();
      const std::string home = sup.home().root;
      makeWorkspace(sup, agent);
      const sandbox::SandboxIds owner = host.root() ? host.agentIds(home, agent) : sandbox::SandboxIds{(uid_t)-1, (gid_t)-1};
      host.createMissingFiles(home, "agents/" + agent + "/workspace", {"AGENTS.md", "SOUL.md", "MEMORY.md", "CLAUDE.md"}, owner);
    }
    return runCheckpoint(sup, io, agent, {"snapshot", task, phase}, CheckpointAccess::ReadWorkspace)
        .then([](std::string) {}, [failed](kj::Exception&& e) { failed(e.getDescription().cStr()); });
  } catch (std::exception& e) {
    failed(e.what());
    return kj::READY_NOW;
  }
}

}  // namespace pine
