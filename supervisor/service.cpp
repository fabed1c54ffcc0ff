#include <kj/debug.h>

#include "supervisor/service.h"

#include "supervisor/checkpoint_call.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "common/log.h"
#include "common/names.h"
#include "redact/redactor.h"
#include "supervisor/egress_call.h"
#include "supervisor/hook_check.h"
#include "supervisor/mqtt_call.h"
#include "supervisor/program_file.h"
#include "supervisor/agent_command.h"
#include "supervisor/ftp_fetch.h"
#include "supervisor/hook_secret.h"
#include "supervisor/source_command.h"
#include "supervisor/source_fetch.h"
#include "supervisor/ftp_list.h"
#include "supervisor/mcp_server.h"
#include "supervisor/source_program.h"
#include "supervisor/telegram_call.h"
#include "supervisor/secrets/config_writer.h"
#include "supervisor/socket_carrier.h"
#include "supervisor/supervisor.h"

namespace pine {

void setExitStatus(proto::ExitStatus::Builder out, int status) {
  if (WIFSIGNALED(status))
    out.setSignal(WTERMSIG(status));
  else
    out.setCode(WEXITSTATUS(status));
}

namespace {

// A worker's or a source program's handle (role "worker" or "source"); `keep` lives as long as
// the handle (a source program's stderr copy).
class WorkerProcessImpl final : public proto::WorkerProcess::Server {
 public:
  WorkerProcessImpl(Supervisor& sup, pid_t pid, kj::ForkedPromise<int> exit, std::string role = "worker",
                    kj::Promise<void> keep = kj::READY_NOW)
      : sup_(sup), pid_(pid), exit_(kj::mv(exit)), role_(std::move(role)), keep_(kj::mv(keep)) {}
  // The broker dropped its handle: the task (or the source) is over, so is the process.
  ~WorkerProcessImpl() noexcept(false) { sup_.killChild(pid_, role_); }

 protected:
  kj::Promise<void> wait(WaitContext context) override {
    return exit_.addBranch().then(
        [context](int status) mutable { setExitStatus(context.getResults().initExit(), status); });
  }
  kj::Promise<void> kill(KillContext) override {
    sup_.killChild(pid_, role_);
    return kj::READY_NOW;
  }

 private:
  Supervisor& sup_;
  pid_t pid_;
  kj::ForkedPromise<int> exit_;
  std::string role_;
  kj::Promise<void> keep_;
};

}  // namespace

kj::Promise<void> SupervisorService::spawnWorker(SpawnWorkerContext context) {
  auto spec = context.getParams().getSpec();
  std::string taskId = spec.getTaskId();
  std::string agent = spec.getAgent();
  KJ_REQUIRE(isValidTaskId(taskId), "spawnWorker: invalid task id");
  KJ_REQUIRE(isValidAgentId(agent), "spawnWorker: invalid agent id");
  // Grants are re-checked in full when the policy is built; here only their shape.
  sandbox::Grants grants;
  auto g = spec.getGrants();
  KJ_REQUIRE(g.getRead().size() <= 64 && g.getWrite().size() <= 64, "spawnWorker: too many grants");
  for (auto [list, out] : {std::pair{g.getRead(), &grants.read}, std::pair{g.getWrite(), &grants.write}})
    for (auto path : list) {
      KJ_REQUIRE(path.size() > 0 && path.size() <= 4096, "spawnWorker: a granted path is empty or too long");
      out->push_back(path.cStr());
    }
  std::string network = g.getNetwork();
  try {
    grants.network = network.empty() ? sandbox::Network::None : sandbox::parseNetwork(network);
  } catch (std::exception& e) {
    KJ_FAIL_REQUIRE("spawnWorker: bad network grant", e.what());
  }
  std::string folder = spec.getFolder();  // checked in full with the policy (sandbox/folder_rules.h)
  KJ_REQUIRE(folder.size() <= 4096, "spawnWorker: the opened folder's path is too long");
  bool tainted = spec.getTainted(), untrusted = spec.getUntrusted();
  auto start = [this, context, taskId, agent, grants, tainted, untrusted, folder]() mutable {
    SpawnedWorker w = sup_.spawnWorker(taskId, agent, grants, tainted, untrusted, folder);
    auto results = context.getResults();
    results.setPid(w.pid);
    results.setSandbox(w.sandbox);
    results.setSocket(kj::heap<SocketCarrier>(w.brokerEnd));
    results.setProcess(kj::heap<WorkerProcessImpl>(sup_, w.pid, kj::mv(w.exit)));
  };
  // The workspace as it was before the task (checkpoint_call.h); a run outside content started
  // cannot write it, so it needs none.
  if (untrusted) {
    start();
    return kj::READY_NOW;
  }
  return checkpointTask(sup_, *io_.lowLevelProvider, taskId, agent, "before", tainted).then(kj::mv(start));
}

kj::Promise<void> SupervisorService::taskChanges(TaskChangesContext context) {
  auto p = context.getParams();
  std::string task = p.getTask(), agent = p.getAgent();
  KJ_REQUIRE(isValidTaskId(task), "taskChanges: invalid task id");
  KJ_REQUIRE(isValidAgentId(agent), "taskChanges: invalid agent id");
  std::vector<std::string> args = {"changes", task};
  if (p.getDiff()) args.push_back("--diff");
  return runCheckpoint(sup_, *io_.lowLevelProvider, agent, args, CheckpointAccess::ReadWorkspace)
      .then([context](std::string result) mutable { context.getResults().setResult(result); });
}

kj::Promise<void> SupervisorService::undoTask(UndoTaskContext context) {
  auto p = context.getParams();
  std::string task = p.getTask(), agent = p.getAgent();
  bool force = p.getForce();
  KJ_REQUIRE(isValidTaskId(task), "undoTask: invalid task id");
  KJ_REQUIRE(isValidAgentId(agent), "undoTask: invalid agent id");
  std::vector<std::string> args = {"undo", task};
  if (force) args.push_back("--force");
  return runCheckpoint(sup_, *io_.lowLevelProvider, agent, args, CheckpointAccess::WriteWorkspace)
      .then([context, task, agent, force](std::string result) mutable {
        // What it put back is in the answer the broker records; pined does not read the names.
        audit("task.undo", {{"task", task}, {"agent", agent}, {"force", force}, {"answer_bytes", result.size()}});
        context.getResults().setResult(result);
      });
}

kj::Promise<void> SupervisorService::status(StatusContext context) {
  auto procs = sup_.processes();
  auto list = context.getResults().initProcesses(procs.size() + 1);
  list[0].setRole("supervisor");
  list[0].setPid(getpid());
  list[0].setStartedAtMs(sup_.startedAtMs());
  list[0].setRestarts(0);
  for (size_t i = 0; i < procs.size(); ++i) {
    auto& [pid, info] = procs[i];
    auto p = list[i + 1];
    p.setRole(info.role);
    p.setPid(pid);
    p.setStartedAtMs(info.startedAtMs);
    p.setRestarts(info.restarts);
    p.setTaskId(info.taskId);
    p.setAgent(info.agent);
  }
  return kj::READY_NOW;
}

kj::Promise<void> SupervisorService::ready(ReadyContext context) {
  std::vector<std::string> problems;
  for (auto p : context.getParams().getProblems()) {
    if (problems.size() == 16) break;
    std::string line(p.cStr(), std::min<size_t>(p.size(), 1024));
    for (char& c : line)
      if ((unsigned char)c < 0x20 || c == 0x7f) c = ' ';  // one line each on pined's stderr
    problems.push_back(std::move(line));
  }
  sup_.brokerReady(problems);
  return kj::READY_NOW;
}


SupervisorService::SupervisorService(Supervisor& sup, kj::AsyncIoContext& io) : sup_(sup), io_(io), egress_(sup, io) {
  sup_.setLoginsChanged([this] { restartMqttWhoseLoginChanged(sup_, mqttSessions_); });
}

SupervisorService::~SupervisorService() noexcept(false) { sup_.setLoginsChanged(nullptr); }

kj::Promise<void> SupervisorService::reloadConfig(ReloadConfigContext context) {
  auto errors = sup_.reloadConfig("pinectl reload");
  auto list = context.getResults().initErrors(errors.size());
  // An error quotes the line it is about, which may hold a .env value: the broker gets none.
  for (size_t i = 0; i < errors.size(); ++i) list.set(i, sup_.redactor().redact(errors[i]));
  context.getResults().setBrokerRestarts(errors.empty() && sup_.brokerRestartsForReload());
  return kj::READY_NOW;
}


namespace {

// (ok, errors) of changeConfig and createAgent.
template <typename Results>
void answerChange(Results out, const secrets::ChangeResult& result, const redact::Redactor& redactor) {
  out.setOk(result.ok);
  auto list = out.initErrors(result.errors.size());
  for (size_t i = 0; i < result.errors.size(); ++i) list.set(i, redactor.redact(result.errors[i]));
}

}  // namespace

kj::Promise<void> SupervisorService::changeConfig(ChangeConfigContext context) {
  auto p = context.getParams();
  KJ_REQUIRE(p.getPath().size() <= 256 && p.getReason().size() <= 1024, "changeConfig: argument too long");
  std::string reason = p.getReason();
  // The broker never writes the owner's rules (agents/<id>/AGENTS.md): fromOwner is false here.
  auto result = secrets::applyConfigChange(sup_.home().root, p.getPath(), p.getContent(), "broker: " + reason, false);
  answerChange(context.getResults(), result, sup_.redactor());
  if (result.ok) sup_.reloadConfig("config change");
  return kj::READY_NOW;
}

kj::Promise<void> SupervisorService::createAgent(CreateAgentContext context) {
  auto p = context.getParams();
  KJ_REQUIRE(p.getId().size() <= 64 && p.getReason().size() <= 1024, "createAgent: argument too long");
  auto result = secrets::createAgentFiles(sup_.home().root, p.getId(), p.getAgentYaml(), p.getInstructions(),
                                          "broker: " + std::string(p.getReason().cStr()));
  answerChange(context.getResults(), result, sup_.redactor());
  if (result.ok) sup_.reloadConfig("new agent");
  return kj::READY_NOW;
}

kj::Promise<void> SupervisorService::egress(EgressContext context) {
  // When the broker gives up on the request (its worker is gone), the call is cancelled and the
  // egress process killed with it, instead of waiting out its own time limit.
  context.allowCancellation();
  return egress_.egress(context);
}

kj::Promise<void> SupervisorService::download(DownloadContext context) {
  context.allowCancellation();
  return egress_.download(context);
}

kj::Promise<void> SupervisorService::telegram(TelegramContext context) {
  context.allowCancellation();
  return telegramCall(sup_, egress_, context);
}

kj::Promise<void> SupervisorService::telegramFile(TelegramFileContext context) {
  context.allowCancellation();
  return pine::telegramFile(sup_, egress_, context);
}

kj::Promise<void> SupervisorService::pollSource(PollSourceContext context) {
  context.allowCancellation();
  return pine::pollSource(sup_, egress_, context);
}

kj::Promise<void> SupervisorService::listFtp(ListFtpContext context) {
  context.allowCancellation();
  return pine::listFtp(sup_, egress_, context);
}

kj::Promise<void> SupervisorService::checkHook(CheckHookContext context) {
  auto p = context.getParams();
  KJ_REQUIRE(p.getHook().size() >= 1 && p.getHook().size() <= 64, "checkHook: bad hook name");
  KJ_REQUIRE(p.getPresented().size() <= 512 && p.getTimestamp().size() <= 32, "checkHook: argument too long");
  KJ_REQUIRE(p.getBody().size() <= (16u << 20), "checkHook: body too large");
  auto cfg = sup_.config();
  KJ_REQUIRE(cfg != nullptr, "checkHook: no configuration is loaded");
  auto body = p.getBody();
  auto verdict = checkHookDelivery(*cfg, sup_.secrets(), p.getHook().cStr(),
                                   std::string_view(reinterpret_cast<const char*>(body.begin()), body.size()),
                                   p.getPresented().cStr(), p.getTimestamp().cStr(), (long long)time(nullptr));
  context.getResults().setOk(verdict.ok);
  context.getResults().setWhy(verdict.why);
  return kj::READY_NOW;
}

kj::Promise<void> SupervisorService::openMqtt(OpenMqttContext context) {
  return pine::openMqtt(sup_, io_, mqttSessions_, context);
}

kj::Promise<void> SupervisorService::runSourceCommand(RunSourceCommandContext context) {
  return pine::runSourceCommand(sup_, io_, context);
}

kj::Promise<void> SupervisorService::runAgentCommand(RunAgentCommandContext context) {
  return pine::runAgentCommand(sup_, io_, context);
}

kj::Promise<void> SupervisorService::makeHookSecret(MakeHookSecretContext context) {
  return pine::makeHookSecret(sup_, context);
}

kj::Promise<void> SupervisorService::fetchFtpFile(FetchFtpFileContext context) {
  return pine::fetchFtpFile(sup_, egress_, context);
}

namespace {

// One of the owner's programs, started by `start` (which throws saying why not), handed to the
// broker: its pid, its stdin+stdout socket, and the handle whose loss kills it.
template <typename Results, typename Start>
void answerWithProgram(Supervisor& sup, Results results, const std::string& role, const std::string& what, Start&& start) {
  StartedProgram p = [&] {
    try {
      return start();
    } catch (std::exception& e) {
      spdlog::error("{} was not started: {}", what, e.what());
      KJ_FAIL_REQUIRE("the program was not started", what, e.what());
    }
  }();
  results.setPid(p.pid);
  results.setSocket(kj::heap<SocketCarrier>(p.brokerEnd));
  results.setProcess(kj::heap<WorkerProcessImpl>(sup, p.pid, kj::mv(p.exit), role, kj::mv(p.stderrLog)));
}

}  // namespace

kj::Promise<void> SupervisorService::startSourceProgram(StartSourceProgramContext context) {
  std::string source = context.getParams().getSource();
  KJ_REQUIRE(isValidAgentId(source), "startSourceProgram: bad source name");
  answerWithProgram(sup_, context.getResults(), "source", "the program of source '" + source + "'",
                    [&] { return pine::startSourceProgram(sup_, io_, source); });
  return kj::READY_NOW;
}

kj::Promise<void> SupervisorService::startMcpServer(StartMcpServerContext context) {
  std::string agent = context.getParams().getAgent(), server = context.getParams().getServer();
  KJ_REQUIRE(isValidAgentId(agent) && isValidAgentId(server), "startMcpServer: bad agent or server name");
  answerWithProgram(sup_, context.getResults(), "mcp", "MCP server '" + server + "' of agent '" + agent + "'",
                    [&] { return pine::startMcpServer(sup_, io_, agent, server); });
  return kj::READY_NOW;
}

kj::Promise<void> SupervisorService::sourceProgram(SourceProgramContext context) {
  auto p = context.getParams();
  std::string agent = p.getAgent(), path = p.getPath(), name = p.getName(), confirmed = p.getSha256();
  KJ_REQUIRE(isValidAgentId(agent), "sourceProgram: bad agent id");
  KJ_REQUIRE(path.size() >= 1 && path.size() <= 4096, "sourceProgram: bad path");
  auto results = context.getResults();
  auto cfg = sup_.config();
  if (!cfg || !cfg->agents.count(agent)) {
    results.setError("no agent '" + agent + "'");
    return kj::READY_NOW;
  }
  // Only the main agent registers programs (add_source_type is main's); pined holds to it too.
  if (agent != "main") {
    results.setError("only the main agent can add a source type");
    return kj::READY_NOW;
  }
  ProgramFile f = readProgramFile(sup_.home().agents() + "/" + agent + "/workspace", path);
  if (!f.error.empty()) {
    results.setError(f.error);
    return kj::READY_NOW;
  }
  results.setSize(f.size);
  results.setSha256(f.sha256);
  results.setHead(f.head);
  if (confirmed.empty()) return kj::READY_NOW;
  KJ_REQUIRE(isValidAgentId(name), "sourceProgram: bad source type name");
  if (confirmed != f.sha256) {
    audit("source_type.refused", {{"agent", agent}, {"path", path}, {"confirmed", confirmed}, {"now", f.sha256}});
    results.setError("the file changed after you were asked (SHA-256 " + confirmed.substr(0, 12) + "... then, " +
                     f.sha256.substr(0, 12) + "... now): nothing was registered; ask again");
    return kj::READY_NOW;
  }
  try {
    std::string file = installProgram(sup_.home().root, name, f.sha256, f.content);
    audit("source_type.install", {{"agent", agent}, {"path", path}, {"name", name}, {"sha256", f.sha256}, {"file", file}});
    results.setFile(file);
  } catch (std::exception& e) {
    results.setError(e.what());
  }
  return kj::READY_NOW;
}

}  // namespace pine
