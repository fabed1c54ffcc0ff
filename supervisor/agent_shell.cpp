#include "supervisor/agent_shell.h"
#include "supervisor/taint_undo.h"

#include <kj/debug.h>
#include <unistd.h>

#include "common/cloexec.h"
#include "common/log.h"
#include "config/command_line.h"
#include "sandbox/shell_env.h"
#include "supervisor/service.h"
#include "supervisor/supervisor.h"

namespace pine {
namespace {

// Past its time limit the broker kills a command itself; pined's own kill a few seconds later
// holds even when the broker does not.
constexpr int kBackstopGraceSec = 5;

std::string envValue(const std::vector<std::string>& env, const std::string& name) {
  for (const auto& e : env)
    if (e.rfind(name + "=", 0) == 0) return e.substr(name.size() + 1);
  return "";
}

class ShellProcess final : public proto::WorkerProcess::Server {
 public:
  ShellProcess(Supervisor& sup, kj::Timer& timer, pid_t pid, kj::ForkedPromise<int> exit, int timeoutSec)
      : sup_(sup), pid_(pid), exit_(kj::mv(exit)) {
    if (timeoutSec > 0)
      backstop_ = timer.afterDelay((timeoutSec + kBackstopGraceSec) * kj::SECONDS)
                      .then([this]() {
                        spdlog::warn("command {} outlived its time limit: killed", pid_);
                        sup_.killChild(pid_, "command");
                      })
                      .eagerlyEvaluate(nullptr);
  }
  // The broker dropped its handle (the source stopped, the call ended, or the broker went away):
  // so does the command.
  ~ShellProcess() noexcept(false) { sup_.killChild(pid_, "command"); }

 protected:
  kj::Promise<void> wait(WaitContext context) override {
    return exit_.addBranch().then(
        [context](int status) mutable { setExitStatus(context.getResults().initExit(), status); });
  }
  kj::Promise<void> kill(KillContext) override {
    sup_.killChild(pid_, "command");
    return kj::READY_NOW;
  }

 private:
  Supervisor& sup_;
  pid_t pid_;
  kj::ForkedPromise<int> exit_;
  kj::Promise<void> backstop_ = kj::READY_NOW;
};

}  // namespace

void refuseShell(const ShellStart& start, const std::string& why) {
  nlohmann::json fields = start.audit;
  fields["agent"] = start.agent;
  fields["reason"] = why;
  audit("sandbox.refused", fields);
  spdlog::error("{} (agent {}): not started: {}", start.label, start.agent, why);
  kj::throwFatalException(kj::Exception(kj::Exception::Type::FAILED, __FILE__, __LINE__, kj::str(why)));
}

ShellStarted startInAgentShell(Supervisor& sup, kj::AsyncIoContext& io, const ShellStart& start) {
  auto cfg = sup.config();
  KJ_REQUIRE(cfg != nullptr, "no configuration is loaded");
  const std::string& agent = start.agent;
  auto it = cfg->agents.find(agent);
  if (it == cfg->agents.end())
    refuseShell(start, "agent '" + agent + "' is not configured: create " + sup.home().agents() + "/" + agent +
                           "/agent.yaml");
  const config::AgentConfig& agentCfg = it->second;
  // The agent's shell never runs unconfined (spawnWorker refuses sandbox: false), so neither does this.
  if (!agentCfg.sandbox.enabled)
    refuseShell(start, "agent '" + agent + "' has sandbox: false in " + agentCfg.file +
                           "; its shell does not run unconfined, and neither does this command: remove that key");

  // What the agent's shell gets in any of its conversations: its configured grants, no
  // conversation's, instruction files read-only (a tainted run's sandbox): the command was the
  // owner's, but what it is pointed at may not be.
  sandbox::AgentSandboxRequest request;
  request.agent = agent;
  request.grants.read = agentCfg.sandbox.read;
  request.grants.write = agentCfg.sandbox.write;
  request.grants.network = sandbox::parseNetwork(config::enumName(agentCfg.sandbox.network));
  request.tainted = true;
  for (const auto& skill : cfg->pine.skills)
    if (skill.agent.empty() || skill.agent == agent) request.skills.push_back(skill.name);
  sandbox::PreparedSandbox box;
  try {
    box = sup.prepareAgentSandbox(request);
  } catch (std::exception& e) {
    refuseShell(start, std::string("the sandbox could not be built, so the command is not run: ") + e.what());
  }

  int out[2], err[2];
  KJ_SYSCALL(pipeCloexec(out));
  kj::AutoCloseFd outRead(out[0]), outWrite(out[1]);
  KJ_SYSCALL(pipeCloexec(err));
  kj::AutoCloseFd errRead(err[0]), errWrite(err[1]);
  SpawnSpec spec;
  // bash finds the program on the shell's PATH, as the agent's shell would; the words stay words.
  spec.program = "/bin/bash";
  spec.args = {"bash", "-c", "exec \"$@\"", "bash"};
  spec.args.insert(spec.args.end(), start.words.begin(), start.words.end());
  spec.env = sandbox::shellEnvironment(envValue(box.env, "HOME"), envValue(box.env, "TMPDIR"));
  spec.stdoutFd = outWrite.get();
  spec.stderrFd = errWrite.get();
  sup.useSandbox(spec, box);
  spec.launcher = sup.options().launcherProgram;
  spec.label = start.label;
  // Its writable trees as they are before it starts: what it then adds is undone when it ends.
  std::shared_ptr<const sandbox::TaintedRun> trees = sup.sandboxHost().watchTaintedRun(box.policy.writable, box.runAs);
  pid_t pid;
  try {
    pid = spawnChild(spec);
  } catch (std::exception& e) {
    refuseShell(start, std::string("the command could not be started: ") + e.what());
  }
  outWrite = nullptr;
  errWrite = nullptr;

  ShellStarted started;
  started.pid = pid;
  started.sandbox = std::string(sandbox::backendName(sup.backend())) + ":" + box.mode;
  const long long began = nowMs();
  const std::string line = config::shownCommandLine(start.words);
  nlohmann::json fields = start.audit;
  fields.update({{"process", "command"}, {"process_pid", pid}, {"agent", agent}, {"command", line},
                 {"sandbox", started.sandbox}, {"network", sandbox::networkName(box.policy.network)},
                 {"sandbox_notes", box.notes}});
  audit("process.start", fields);
  spdlog::info("{}: started `{}` (pid {}) in agent {}'s sandbox ({})", start.label, line, pid, agent, started.sandbox);
  const std::string owner = start.audit.contains("source") ? "source:" + start.audit["source"].get<std::string>()
                                                           : "agent:" + agent;
  auto exit = sup.watchChild(pid, {"command", began, 0, owner, agent})
                  .then([pid, start, began, trees](int status) {
                    if (start.exited) start.exited();
                    if (trees) try {
                      auto moved = trees->undo(start.undoTag);
                      if (!moved.empty()) {
                        nlohmann::json f = start.audit;
                        f["agent"] = start.agent;
                        audit("taint.undo", taintUndoFields(moved, f));
                      }
                    } catch (std::exception& e) {
                      spdlog::error("{}: checking what it left: {}", start.label, e.what());
                    }
                    nlohmann::json f = start.audit;
                    f.update({{"process", "command"}, {"process_pid", pid}, {"how", describeWaitStatus(status)},
                              {"uptime_ms", nowMs() - began}});
                    audit("process.exit", f);
                    return status;
                  })
                  .fork();
  // The bookkeeping above (the agent's or source's count of running commands, the tainted-run
  // check, process.exit) must not end with the broker's handle, which is dropped first.
  sup.keep(exit.addBranch().ignoreResult());
  started.out = kj::mv(outRead);
  started.err = kj::mv(errRead);
  started.process = kj::heap<ShellProcess>(sup, io.provider->getTimer(), pid, kj::mv(exit), start.timeoutSec);
  return started;
}

}  // namespace pine
