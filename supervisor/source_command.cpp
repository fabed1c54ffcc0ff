#include "supervisor/source_command.h"

#include <kj/debug.h>
#include <unistd.h>

#include <set>

#include "common/cloexec.h"
#include "common/log.h"
#include "common/names.h"
#include "config/command_line.h"
#include "sandbox/shell_env.h"
#include "supervisor/service.h"
#include "supervisor/socket_carrier.h"
#include "supervisor/supervisor.h"

namespace pine {
namespace {

// Past the source's timeoutSec the broker kills an interval run itself; pined's own kill a few
// seconds later holds even when the broker does not.
constexpr int kBackstopGraceSec = 5;

[[noreturn]] void refuse(const std::string& source, const std::string& agent, const std::string& why) {
  audit("sandbox.refused", {{"source", source}, {"agent", agent}, {"reason", why}});
  spdlog::error("command source '{}' (agent {}): not started: {}", source, agent, why);
  kj::throwFatalException(kj::Exception(kj::Exception::Type::FAILED, __FILE__, __LINE__, kj::str(why)));
}

// The command sources with a process pined has not reaped yet: one each, whatever the broker
// asks (a broker that is misled must not multiply a command). pined is one process with one loop.
std::set<std::string>& runningSources() {
  static std::set<std::string> running;
  return running;
}

std::string envValue(const std::vector<std::string>& env, const std::string& name) {
  for (const auto& e : env)
    if (e.rfind(name + "=", 0) == 0) return e.substr(name.size() + 1);
  return "";
}

class CommandProcess final : public proto::WorkerProcess::Server {
 public:
  CommandProcess(Supervisor& sup, kj::Timer& timer, pid_t pid, kj::ForkedPromise<int> exit, int timeoutSec)
      : sup_(sup), pid_(pid), exit_(kj::mv(exit)) {
    if (timeoutSec > 0)
      backstop_ = timer.afterDelay((timeoutSec + kBackstopGraceSec) * kj::SECONDS)
                      .then([this]() {
                        spdlog::warn("command {} outlived its time limit: killed", pid_);
                        sup_.killChild(pid_, "command");
                      })
                      .eagerlyEvaluate(nullptr);
  }
  // The broker dropped its handle (the source stopped, or the broker went away): so does the command.
  ~CommandProcess() noexcept(false) { sup_.killChild(pid_, "command"); }

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

kj::Promise<void> runSourceCommand(
    Supervisor& sup, kj::AsyncIoContext& io,
    capnp::CallContext<proto::Supervisor::RunSourceCommandParams, proto::Supervisor::RunSourceCommandResults> context) {
  const std::string name = context.getParams().getSource();
  KJ_REQUIRE(isValidAgentId(name), "runSourceCommand: bad source name");
  KJ_REQUIRE(!sup.stopping(), "pined is stopping");
  auto cfg = sup.config();
  KJ_REQUIRE(cfg != nullptr, "runSourceCommand: no configuration is loaded");
  const config::Source* source = nullptr;
  for (const auto& s : cfg->pine.sources)
    if (s.name == name && s.type == "command") source = &s;
  if (!source) refuse(name, "", "no command source named '" + name + "' in pine.yaml");
  const std::string& agent = config::commandAgent(*source);
  if (runningSources().count(name))
    refuse(name, agent, "the command of source '" + name + "' is still running: one at a time");
  auto it = cfg->agents.find(agent);
  if (it == cfg->agents.end())
    refuse(name, agent, "the source belongs to agent '" + agent + "', which is not configured: create " +
                            sup.home().agents() + "/" + agent + "/agent.yaml");
  const config::AgentConfig& agentCfg = it->second;
  // The agent's shell never runs unconfined (spawnWorker refuses sandbox: false), so neither does this.
  if (!agentCfg.sandbox.enabled)
    refuse(name, agent, "agent '" + agent + "' has sandbox: false in " + agentCfg.file +
                            "; its shell does not run unconfined, and neither does its command source: remove that key");

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
    refuse(name, agent, std::string("the sandbox could not be built, so the command is not run: ") + e.what());
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
  spec.args.insert(spec.args.end(), source->command.begin(), source->command.end());
  spec.env = sandbox::shellEnvironment(envValue(box.env, "HOME"), envValue(box.env, "TMPDIR"));
  spec.stdoutFd = outWrite.get();
  spec.stderrFd = errWrite.get();
  sup.useSandbox(spec, box);
  spec.launcher = sup.options().launcherProgram;
  spec.label = "command " + name;
  pid_t pid;
  try {
    pid = spawnChild(spec);
  } catch (std::exception& e) {
    refuse(name, agent, std::string("the command could not be started: ") + e.what());
  }
  outWrite = nullptr;
  errWrite = nullptr;
  runningSources().insert(name);

  std::shared_ptr<const sandbox::TaintedRun> trees = sup.sandboxHost().watchTaintedRun(box.policy.writable, box.runAs);
  const std::string sandbox = std::string(sandbox::backendName(sup.backend())) + ":" + box.mode;
  const long long started = nowMs();
  const std::string line = config::shownCommandLine(source->command);
  audit("process.start", {{"process", "command"}, {"process_pid", pid}, {"source", name}, {"agent", agent},
                          {"command", line}, {"sandbox", sandbox}, {"network", sandbox::networkName(box.policy.network)},
                          {"sandbox_notes", box.notes}});
  spdlog::info("command source '{}': started `{}` (pid {}) in agent {}'s sandbox ({})", name, line, pid, agent, sandbox);
  auto exit = sup.watchChild(pid, {"command", started, 0, "source:" + name, agent})
                  .then([pid, name, agent, started, trees](int status) {
                    runningSources().erase(name);
                    if (trees) try {
                      auto moved = trees->undo("source-" + name);
                      if (!moved.empty())
                        audit("taint.undo", {{"source", name}, {"agent", agent}, {"git_settings_moved_aside", moved}});
                    } catch (std::exception& e) {
                      spdlog::error("command source '{}': checking what it left: {}", name, e.what());
                    }
                    audit("process.exit", {{"process", "command"}, {"process_pid", pid}, {"source", name},
                                           {"how", describeWaitStatus(status)}, {"uptime_ms", nowMs() - started}});
                    return status;
                  })
                  .eagerlyEvaluate(nullptr)
                  .fork();
  auto results = context.getResults();
  results.setPid(pid);
  results.setSandbox(sandbox);
  results.setStdout(kj::heap<SocketCarrier>(outRead.release()));
  results.setStderr(kj::heap<SocketCarrier>(errRead.release()));
  const int timeout = source->commandMode == "lines" ? 0 : source->timeoutSec;
  results.setProcess(kj::heap<CommandProcess>(sup, io.provider->getTimer(), pid, kj::mv(exit), timeout));
  return kj::READY_NOW;
}

}  // namespace pine
