#include <kj/debug.h>

#include "supervisor/supervisor.h"

#include "supervisor/admin_group.h"
#include "supervisor/checkpoint_call.h"
#include "supervisor/taint_undo.h"
#include "supervisor/socket_carrier.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>

#include "common/fd.h"
#include "common/log.h"
#include "config/folder_check.h"
#include "sandbox/folder_rules.h"

#include <openssl/crypto.h>
#include "supervisor/service.h"
#include "supervisor/spawn.h"
#include "common/sanitizer_env.h"
#include "common/cloexec.h"

namespace pine {
namespace {

void addSanitizerEnv(std::vector<std::string>& env, bool sandboxed = false) {
  for (auto& e : sanitizerEnvironment(sandboxed)) env.push_back(std::move(e));
}

int64_t msSince(long long startMs) { return nowMs() - startMs; }

// After a tainted run: what it left that git would obey is moved aside, and the owner is told.
void undoTaintedRun(const sandbox::TaintedRun& trees, const std::string& taskId, const std::string& agent) {
  try {
    auto moved = trees.undo(taskId);
    if (moved.empty()) return;
    audit("taint.undo", taintUndoFields(moved, {{"task", taskId}, {"agent", agent}}));
    spdlog::warn("task {} (agent {}) had read outside content and created what later runs would obey; moved aside: {}",
                 taskId, agent, taintUndoList(moved));
  } catch (std::exception& e) {
    spdlog::error("task {} (agent {}): checking what the tainted run left: {}", taskId, agent, e.what());
  }
}

std::pair<dev_t, ino_t> fileIdentity(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return {0, 0};
  return {st.st_dev, st.st_ino};
}

// Each folder with what is at its path now ({0, 0}: nothing), following a link as Landlock does.
std::vector<std::pair<std::string, std::pair<dev_t, ino_t>>> folderIdentities(const std::vector<std::string>& paths) {
  std::vector<std::pair<std::string, std::pair<dev_t, ino_t>>> out;
  for (const auto& p : paths) {
    struct stat st;
    out.emplace_back(p, stat(p.c_str(), &st) == 0 ? std::pair<dev_t, ino_t>{st.st_dev, st.st_ino}
                                                   : std::pair<dev_t, ino_t>{0, 0});
  }
  return out;
}

nlohmann::json exitFields(int status) {
  nlohmann::json f;
  if (WIFEXITED(status)) f["code"] = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) f["signal"] = WTERMSIG(status);
  f["how"] = describeWaitStatus(status);
  return f;
}

}  // namespace

Supervisor::Supervisor(kj::AsyncIoContext& io, SupervisorOptions options)
    : io_(io),
      options_(std::move(options)),
      children_(io.unixEventPort),
      tasks_(*this),
      startedAtMs_(nowMs()),
      sandboxes_(options_.home.root, options_.workerProgram.substr(0, options_.workerProgram.find_last_of('/')),
                 sandbox::makeSandboxHost(options_.backend.backend, options_.sandbox)),
      config_(options_.home.root),
      secrets_(options_.home.root + "/.env"),
      owner_(io, *this),
      control_(io, [this](int fd) { return handOwnerConnection(fd); }) {
  // main() validated the configuration before anything started; this cannot fail short of a race.
  for (auto& e : config_.reload()) spdlog::error("{}", e.format());
  for (auto& e : secrets_.load()) spdlog::error("{}", e);  // positions only, never a value
  rebuildRedactor();
}

void Supervisor::rebuildRedactor() {
  auto known = secrets_.values();
  try {
    std::string token = readFile(options_.home.token());
    while (!token.empty() && (token.back() == '\n' || token.back() == ' ')) token.pop_back();
    known.push_back(token);
  } catch (std::exception&) {
  }
  redactor_ = std::make_shared<const redact::Redactor>(known);
  // No secret pined knows of, and nothing shaped like one, reaches a log line.
  setLogFilter([r = redactor_](std::string_view line) { return r->redact(line); },
               [r = redactor_](std::string_view line) { return r->redact(line, redact::Format::kJson); });
  for (auto& v : known) OPENSSL_cleanse(v.data(), v.size());
}

void Supervisor::secretsChanged() {
  rebuildRedactor();
  reloadConfig("pinectl secret");
  restartBrokerIfEnvReplaced("pinectl secret");
  if (loginsChanged_) loginsChanged_();
}

void Supervisor::shareHomeWithBroker(const char* why) {
  if (!options_.brokerIds) return;
  try {
    sandboxes_.host().shareHomeWithBroker(options_.home.root, *options_.brokerIds);
  } catch (std::exception& e) {
    spdlog::error("after {}: {}", why, e.what());
  }
}

bool Supervisor::envReplacedUnderBroker() const {
  // As root, .env is closed to the broker's uid whatever its inode.
  return !sandboxes_.host().root() && brokerPid_ != 0 && fileIdentity(options_.home.root + "/.env") != maskedEnv_;
}

void Supervisor::restartBrokerIfEnvReplaced(const char* why) {
  if (!envReplacedUnderBroker()) return;
  spdlog::warn("{} replaced .env, which the broker's mask no longer covers: restarting the broker", why);
  audit("broker.restart", {{"reason", std::string(why) + " replaced .env"}, {"process_pid", brokerPid_}});
  restartingBroker_ = brokerPid_;
  children_.signal(brokerPid_, SIGTERM);
}

bool Supervisor::restartBrokerIfFoldersChanged() {
  auto cfg = config_.current();
  if (brokerPid_ == 0 || !cfg) return false;
  auto now = folderIdentities(watchedFolders(*cfg));
  if (now == brokerFolders_) return false;
  // The broker's sandbox holds exactly the folders of the configuration it started with, as they
  // were then: a folder removed and made again at its path is another one, closed to it.
  bool samePaths = now.size() == brokerFolders_.size() &&
                   std::equal(now.begin(), now.end(), brokerFolders_.begin(),
                              [](const auto& a, const auto& b) { return a.first == b.first; });
  std::string reason = samePaths ? "a folder source's folder was made anew at its path" : "the folder sources' folders changed";
  spdlog::warn("{}: restarting the broker so that its sandbox holds exactly those there now", reason);
  audit("broker.restart", {{"reason", reason}, {"process_pid", brokerPid_}});
  brokerFolders_ = std::move(now);  // asked once, even if reloaded again meanwhile
  restartingBroker_ = brokerPid_;   // until it is gone, every reload is the next broker's to apply
  // A moment later: a reload the owner asked for through the broker (pinectl reload) gets its answer first.
  tasks_.add(io_.provider->getTimer().afterDelay(1 * kj::SECONDS).then([this, pid = brokerPid_]() {
    if (brokerPid_ == pid) children_.signal(pid, SIGTERM);
  }));
  return true;
}

std::vector<std::string> Supervisor::reloadConfig(const std::string& by) {
  const bool owner = by == "SIGHUP" || by == "pinectl reload";
  if (owner) {
    // .env too: a secret the owner rotated by editing it (a hook's, say) is in force from now on,
    // and the old one no longer is.
    for (auto& e : secrets_.load()) spdlog::error("{}", e);  // positions only, never a value
    rebuildRedactor();
  }
  std::vector<std::string> errors;
  brokerRestartsForReload_ = false;
  for (auto& e : config_.reload()) errors.push_back(e.format());
  if (errors.empty()) {
    spdlog::info("configuration reloaded ({})", by);
    shareHomeWithBroker("a configuration change");
    // Only when the owner reloads: a change the broker itself asked for (add_source) comes in
    // the middle of a task, which a restart would cut short.
    // The broker then does not apply it itself: the one that starts next reads it, so that what it
    // starts (a command source's run) starts once, not in the old broker too.
    brokerRestartsForReload_ = owner && restartBrokerIfFoldersChanged();
    if (owner && loginsChanged_) loginsChanged_();  // .env was read again above
  } else {
    spdlog::error("configuration NOT reloaded ({}): {} error(s); the previous one stays in force", by, errors.size());
    for (auto& e : errors) spdlog::error("  {}", e);
  }
  // An editor may have replaced .env, which the broker's mask then no longer covers: restarted
  // whether or not the configuration loaded, a moment later so that pinectl, which asked through
  // the broker, gets its answer first (SIGHUP's handler checks at once).
  // Decided now and carried out then, whatever .env is by then: a broker marked as going must go.
  if (by == "pinectl reload" && envReplacedUnderBroker() && restartingBroker_ != brokerPid_) {
    restartingBroker_ = brokerPid_;
    spdlog::warn("an edit of .env replaced it, which the broker's mask no longer covers: restarting the broker");
    audit("broker.restart", {{"reason", "an edit of .env replaced .env"}, {"process_pid", brokerPid_}});
    tasks_.add(io_.provider->getTimer().afterDelay(1 * kj::SECONDS).then([this, pid = brokerPid_]() {
      if (brokerPid_ == pid) children_.signal(pid, SIGTERM);
    }));
  }
  // A restart on its way (this reload's, a moment ago's, an editor's new .env): the broker that
  // asks is about to go, and must not start what its successor will start again.
  if (errors.empty() && restartingBroker_ != 0 && restartingBroker_ == brokerPid_) brokerRestartsForReload_ = true;
  audit("config.reload", {{"by", by}, {"ok", errors.empty()}, {"errors", errors}});
  return errors;
}

void Supervisor::taskFailed(kj::Exception&& e) {
  spdlog::error("supervisor task failed: {}", e.getDescription().cStr());
}

kj::Promise<void> Supervisor::run() {
  audit("process.start", {{"process", "supervisor"}, {"process_pid", (int)getpid()}, {"home", options_.home.root}});
  spdlog::info("pined {} started on {}", getpid(), options_.home.root);
  const auto facts = sandboxes_.host().facts();
  spdlog::info("sandbox: {}", facts.description);
  const auto& refused = facts.refused;
  if (refused) spdlog::error("no usable sandbox: every task will be refused: {}", *refused);
  else if (facts.degraded) spdlog::warn("the sandbox is degraded: {}", facts.description);
  audit("sandbox.probe", {{"backend", facts.backend},
                          {"mode", refused ? "none" : facts.degraded ? "degraded" : "full"},
                          {"landlock_abi", facts.landlockAbi},
                          {"notes", facts.notes},
                          {"refused", refused ? *refused : ""}});
  owner_.listen(options_.home.ownerSocket());
  control_.listen(options_.home.socket());
  if (options_.admin) {
    shareSocketWithAdmins(options_.home.ownerSocket(), *options_.admin->adminGid);
    shareSocketWithAdmins(options_.home.socket(), *options_.admin->adminGid);
  }
  tasks_.add(keepBroker());
  tasks_.add(onHangup());
  auto term = io_.unixEventPort.onSignal(SIGTERM).exclusiveJoin(io_.unixEventPort.onSignal(SIGINT));
  auto asked = kj::newPromiseAndFulfiller<void>();
  stopAsked_ = kj::mv(asked.fulfiller);
  return term.then([](siginfo_t info) { spdlog::info("signal {}: stopping", info.si_signo); })
      .exclusiveJoin(asked.promise.then([] { spdlog::info("the owner asked pined to stop (pinectl stop)"); }))
      .then([this] { return shutdown(); });
}

void Supervisor::requestStop() {
  if (stopAsked_.get() == nullptr || !stopAsked_->isWaiting()) return;
  audit("pined.stop", {{"by", "pinectl"}});
  stopAsked_->fulfill();
}

kj::Promise<void> Supervisor::onHangup() {
  return io_.unixEventPort.onSignal(SIGHUP).then([this](siginfo_t) {
    reopenLogs();
    spdlog::info("SIGHUP: logs reopened, configuration re-read, asking the broker to reload");
    reloadConfig("SIGHUP");
    shareHomeWithBroker("SIGHUP");  // logs reopened as root's are the broker's again
    restartBrokerIfEnvReplaced("an edit of .env");
    KJ_IF_MAYBE(admin, brokerAdmin_) {
      if (brokerRestartsForReload_ || (restartingBroker_ != 0 && restartingBroker_ == brokerPid_))
        return onHangup();  // the next broker reads it
      tasks_.add(admin->reloadRequest().send().ignoreResult().catch_([](kj::Exception&& e) {
        spdlog::warn("broker reload failed: {}", e.getDescription().cStr());
      }));
    }
    return onHangup();
  });
}

sandbox::PreparedSandbox Supervisor::prepareBroker() {
  if (sandboxes_.host().root() && !options_.brokerIds)
    throw std::runtime_error("pined runs as root but has no uid for the broker");
  // pined is the only writer of .env. An empty one now, so that the broker's mount namespace has a
  // file to hide (a mask covers what exists); it stays closed to the broker however it changes.
  int env = open((options_.home.root + "/.env").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (env >= 0) close(env);
  sandbox::BrokerSandboxRequest req;
  req.home = options_.home.root;
  req.program = options_.brokerProgram;
  if (auto cfg = config_.current()) {
    if (cfg->pine.http.port > 0) req.listenPorts.push_back(cfg->pine.http.port);
    // No connectPorts: MQTT sessions run in pine-mqtt (openMqtt), so the broker connects nowhere.
    req.watchedFolders = watchedFolders(*cfg);
  }
  brokerFolders_ = folderIdentities(req.watchedFolders);
  return sandbox::prepareBrokerSandbox(req, sandboxes_.host(), options_.brokerIds.value_or(sandbox::SandboxIds{0, 0}));
}

kj::Promise<void> Supervisor::keepBroker() {
  if (stopping_) return kj::READY_NOW;
  auto retryLater = [this]() {
    int64_t delay = backoff_.nextDelay(0);
    return io_.provider->getTimer().afterDelay(delay * kj::MILLISECONDS).then([this]() { return keepBroker(); });
  };
  sandbox::PreparedSandbox box;
  try {
    box = prepareBroker();
  } catch (std::exception& e) {
    // Fail closed: the broker never runs unconfined.
    spdlog::error("the broker's sandbox could not be built, so it is not started: {}", e.what());
    audit("sandbox.refused", {{"process", "broker"}, {"reason", e.what()}});
    brokerStartFailed(std::string("the broker's sandbox could not be built: ") + e.what());
    return retryLater();
  }
  int sv[2];
  KJ_SYSCALL(socketpairCloexec(AF_UNIX, SOCK_STREAM, 0, sv));
  kj::AutoCloseFd ours(sv[0]), theirs(sv[1]);
  SpawnSpec spec;
  spec.program = options_.brokerProgram;
  // The owner is pined's uid: the broker (its own uid when pined is root) serves pine.sock to it.
  spec.args = {options_.brokerProgram, "--home", options_.home.root, "--owner-uid", std::to_string(getuid())};
  // The same id for every broker of this pined: a restarted broker keeps grants and resumes tasks.
  spec.args.insert(spec.args.end(), {"--boot-id", std::to_string(startedAtMs_) + "-" + std::to_string(getpid())});
  // A sandbox weaker than it should be is news for the owner's channels (Telegram's sandboxDegraded).
  if (const auto facts = sandboxes_.host().facts(); facts.refused || facts.degraded)
    spec.args.insert(spec.args.end(), {"--sandbox-note", facts.refused ? "no usable sandbox: every task is refused: " + *facts.refused
                                                                       : "the sandbox is degraded: " + facts.description});
  if (options_.admin)
    spec.args.insert(spec.args.end(), {"--admin-group", options_.admin->adminName + ":" +
                                                            std::to_string(*options_.admin->adminGid)});
  if (options_.foreground) spec.args.push_back("--log-stderr");
  spec.env = box.env;
#ifdef __GLIBC__
  // glibc keeps 7 freed blocks of a size per thread; a group of requests frees dozens at once, and
  // the rest took malloc's slow paths: 256 gave single events about 10 % more a second at the same
  // peak RSS (bench/RESULTS.md, sixth round).
  spec.env.push_back("GLIBC_TUNABLES=glibc.malloc.tcache_count=256");
#endif
  addSanitizerEnv(spec.env, true);
  spec.fd3 = theirs.get();
  useSandbox(spec, box);
  spec.launcher = options_.launcherProgram;
  spec.label = "broker";
  auto envMasked = fileIdentity(options_.home.root + "/.env");

  pid_t pid;
  try {
    pid = spawnChild(spec);
  } catch (std::exception& e) {
    // spawnChild's child already exited 127 and was reaped.
    spdlog::error("{}", e.what());
    audit("sandbox.refused", {{"process", "broker"}, {"reason", e.what()}});
    audit("process.exit", {{"process", "broker"}, {"how", e.what()}});
    brokerStartFailed(std::string("the broker could not be started: ") + e.what());
    return retryLater();
  }
  brokerPid_ = pid;
  maskedEnv_ = envMasked;
  theirs = nullptr;
  long long started = nowMs();
  auto exited = children_.add(pid, {"broker", started, brokerRestarts_, "", ""});
  audit(brokerRestarts_ ? "process.restart" : "process.start",
        {{"process", "broker"}, {"process_pid", pid}, {"restarts", brokerRestarts_},
         {"sandbox", std::string(sandbox::backendName(options_.backend.backend)) + ":" + box.mode},
         {"uid", box.runAs ? (long long)box.runAs->uid : (long long)getuid()},
         {"sandbox_notes", box.notes}});
  spdlog::info("broker started, pid {}", pid);

  auto link = kj::heap<RpcLink>(wrapSocket(*io_.lowLevelProvider, ours.release()), capnp::rpc::twoparty::Side::SERVER,
                                kj::heap<SupervisorService>(*this, io_), LinkLimits{1, 1 << 20});
  brokerAdmin_ = link->peer().castAs<proto::BrokerAdmin>();
  brokerLink_ = kj::mv(link);

  return exited.then([this, pid, started](int status) -> kj::Promise<void> {
    brokerAdmin_ = nullptr;
    brokerReady_ = false;
    brokerLink_ = nullptr;
    brokerPid_ = 0;
    auto fields = exitFields(status);
    fields["process"] = "broker";
    fields["process_pid"] = pid;
    fields["uptime_ms"] = msSince(started);
    audit("process.exit", fields);
    // Workers belonged to the broker's tasks, which died with it; command sources to its sources.
    children_.signalRole("worker", SIGKILL);
    children_.signalRole("command", SIGKILL);
    children_.signalRole("source", SIGKILL);  // so did the source programs it ran
    children_.signalRole("mcp", SIGKILL);     // and the MCP servers
    if (stopping_) return kj::READY_NOW;
    int64_t delay = backoff_.nextDelay(msSince(started));
    spdlog::warn("broker {} {}; restarting in {} ms", pid, describeWaitStatus(status), delay);
    ++brokerRestarts_;
    return io_.provider->getTimer().afterDelay(delay * kj::MILLISECONDS).then([this]() { return keepBroker(); });
  });
}

bool Supervisor::handOwnerConnection(int fd) {
  kj::AutoCloseFd owned(fd);
  if (!brokerReady_) return false;
  KJ_IF_MAYBE(admin, brokerAdmin_) {
    auto req = admin->ownerConnectionRequest();
    req.setSocket(kj::heap<SocketCarrier>(owned.release()));
    tasks_.add(req.send().ignoreResult().catch_([](kj::Exception&& e) {
      spdlog::warn("pine.sock: the broker did not take a connection: {}", e.getDescription().cStr());
    }));
    return true;
  }
  return false;
}

// Detached: the first process waits on the start pipe (main.cpp daemonize) for one byte, 1 started
// or 2 failed, then the lines it prints. False in the foreground (no pipe): the caller prints them.
bool Supervisor::tellStarter(char code, const std::string& said) {
  if (options_.readyFd < 0) return false;
  ssize_t ignored = write(options_.readyFd, &code, 1);
  ignored = write(options_.readyFd, said.data(), said.size());
  (void)ignored;
  close(options_.readyFd);
  options_.readyFd = -1;
  return true;
}

// The first start that fails, before any was ready: said where the owner is looking (the starting
// terminal, through the pipe when detached), not only in the log. pined keeps trying.
void Supervisor::brokerStartFailed(const std::string& why) {
  if (startSaid_) return;
  startSaid_ = true;
  std::string said = "pined: " + why + "\npined: still trying, with backoff (pid " + std::to_string(getpid()) +
                     "); pined.log in " + options_.home.logs() + "/ says more\n";
  if (!tellStarter(2, said)) std::cerr << said << std::flush;
}

void Supervisor::brokerReady(const std::vector<std::string>& problems) {
  brokerReady_ = true;
  spdlog::info("broker ready");
  for (auto& p : problems) spdlog::warn("{}", p);
  if (startSaid_) return;
  startSaid_ = true;
  // Detached: the first process prints what comes through the pipe (main.cpp daemonize).
  // In the foreground: here, on pined's own stdout and stderr.
  std::string said = "pined started on " + options_.home.root + " (pid " + std::to_string(getpid()) + ")\n";
  for (auto& p : problems) said += "pined: " + p + "\n";
  if (!tellStarter(1, said)) {
    std::cout << said.substr(0, said.find('\n') + 1) << std::flush;
    std::cerr << said.substr(said.find('\n') + 1) << std::flush;
  }
}

SpawnedWorker Supervisor::spawnWorker(const std::string& taskId, const std::string& agent,
                                      const sandbox::Grants& grants, bool tainted, bool untrusted,
                                      const std::string& folder) {
  KJ_REQUIRE(!stopping_, "pined is stopping");
  auto cfg = config_.current();
  const config::AgentConfig* agentCfg = nullptr;
  if (cfg) {
    auto it = cfg->agents.find(agent);
    if (it != cfg->agents.end()) agentCfg = &it->second;
  }
  if (!agentCfg)
    kj::throwFatalException(kj::Exception(
        kj::Exception::Type::FAILED, __FILE__, __LINE__,
        kj::str("no agent '", agent, "': create ", options_.home.agents(), "/", agent, "/agent.yaml")));
  // What the configuration grants, widened by what the owner granted this conversation.
  sandbox::Grants all = grants;
  for (auto& r : agentCfg->sandbox.read) all.read.push_back(r);
  for (auto& w : agentCfg->sandbox.write) all.write.push_back(w);
  all.network = sandbox::widest(all.network, sandbox::parseNetwork(config::enumName(agentCfg->sandbox.network)));
  if (untrusted) all = sandbox::Grants{};  // whatever the broker asked: a run outside content started gets none
  if (!agentCfg->sandbox.enabled)
    kj::throwFatalException(kj::Exception(
        kj::Exception::Type::FAILED, __FILE__, __LINE__,
        kj::str("agent '", agent, "' has sandbox.enabled: false in ", agentCfg->file,
                "; running a worker unconfined is not supported: remove that key")));
  sandbox::PreparedSandbox box;
  try {
    // The conversation's folder: never for a run outside content started, and re-checked here
    // (pine's home, its program, other agents, system folders), whatever the broker checked.
    if (!folder.empty() && untrusted)
      throw sandbox::PolicyError("the opened folder " + folder + " is refused: a run that outside content started never gets it");
    sandbox::AgentSandboxRequest request{agent, all, tainted, untrusted, {}};
    std::string opened = folder.empty() ? "" : sandbox::checkOpenedFolder(folder, sandboxes_.pathsFor(agent));
    for (const auto& skill : cfg->pine.skills)
      if (skill.agent.empty() || skill.agent == agent) request.skills.push_back(skill.name);
    box = sandboxes_.prepare(request, opened);
  } catch (std::exception& e) {
    // Fail closed: the task is refused, never run unconfined.
    audit("sandbox.refused", {{"task", taskId}, {"agent", agent}, {"reason", e.what()}});
    spdlog::error("task {} (agent {}): no sandbox, not started: {}", taskId, agent, e.what());
    kj::throwFatalException(kj::Exception(kj::Exception::Type::FAILED, __FILE__, __LINE__,
                                          kj::str("the worker's sandbox could not be built: ", e.what())));
  }

  int sv[2];
  KJ_SYSCALL(socketpairCloexec(AF_UNIX, SOCK_STREAM, 0, sv));
  kj::AutoCloseFd brokerEnd(sv[0]), workerEnd(sv[1]);
  SpawnSpec spec;
  spec.program = options_.workerProgram;
  spec.args = {options_.workerProgram, "--task", taskId, "--agent", agent};
  spec.env = box.env;
  addSanitizerEnv(spec.env, true);
  spec.fd3 = workerEnd.get();
  useSandbox(spec, box);
  spec.launcher = options_.launcherProgram;
  spec.label = "worker " + taskId;
  // A tainted run may create repositories whose hooks and config the owner's git would obey, and
  // instruction files: look at its writable trees before it starts (what is there then is the
  // owner's), and undo what it added once it has ended (tainted_trees.h).
  std::shared_ptr<const sandbox::TaintedRun> trees;
  if (tainted && !untrusted) trees = sandboxes_.host().watchTaintedRun(box.policy.writable, box.runAs);
  pid_t pid;
  try {
    pid = spawnChild(spec);
  } catch (std::exception& e) {
    // pine-launch could not enter the sandbox (or exec): the task is refused, never run unconfined.
    audit("sandbox.refused", {{"task", taskId}, {"agent", agent}, {"reason", e.what()}});
    spdlog::error("task {} (agent {}): not started: {}", taskId, agent, e.what());
    kj::throwFatalException(kj::Exception(kj::Exception::Type::FAILED, __FILE__, __LINE__,
                                          kj::str("the worker could not be started: ", e.what())));
  }
  workerEnd = nullptr;
  const std::string sandbox = std::string(sandbox::backendName(options_.backend.backend)) + ":" + box.mode;
  long long started = nowMs();
  audit("process.start", {{"process", "worker"}, {"process_pid", pid}, {"task", taskId}, {"agent", agent},
                          {"sandbox", sandbox}, {"tainted", tainted}, {"untrusted", untrusted}, {"network", sandbox::networkName(box.policy.network)},
                          {"sandbox_notes", box.notes}});
  auto exit = children_.add(pid, {"worker", started, 0, taskId, agent})
                  .then([this, pid, taskId, agent, started, trees, untrusted](int status) -> kj::Promise<int> {
                    if (trees) undoTaintedRun(*trees, taskId, agent);
                    auto fields = exitFields(status);
                    fields["process"] = "worker";
                    fields["process_pid"] = pid;
                    fields["task"] = taskId;
                    fields["agent"] = agent;
                    fields["uptime_ms"] = msSince(started);
                    audit("process.exit", fields);
                    if (untrusted || stopping_) return status;
                    // The workspace as the task left it (checkpoint_call.h), before the broker hears it ended.
                    return checkpointTask(*this, *io_.lowLevelProvider, taskId, agent, "after").then([status]() { return status; });
                  })
                  .eagerlyEvaluate(nullptr)  // reap and audit even if the broker never asks
                  .fork();
  return SpawnedWorker{pid, brokerEnd.release(), kj::mv(exit), sandbox};
}

std::vector<std::string> Supervisor::providerBaseUrls() const {
  std::vector<std::string> out;
  if (auto cfg = config_.current())
    for (auto& [name, provider] : cfg->models.providers)
      if (!provider.baseUrl.empty()) out.push_back(provider.baseUrl);
  return out;
}

void Supervisor::useSandbox(SpawnSpec& spec, const sandbox::PreparedSandbox& box) const {
  if (box.seatbelt) {
    spec.seatbelt = &*box.seatbelt;
    spec.sandboxExec = options_.backend.sandboxExec;
    spec.cwd = box.cwd;
  } else {
    spec.sandbox = box.linuxPlan.get();
  }
}

void Supervisor::adoptChild(pid_t pid, const std::string& role) {
  long long started = nowMs();
  tasks_.add(children_.add(pid, {role, started, 0, "", ""}).then([pid, role, started](int status) {
    auto fields = exitFields(status);
    fields["process"] = role;
    fields["process_pid"] = pid;
    fields["uptime_ms"] = msSince(started);
    audit("process.exit", fields);
  }));
}

kj::ForkedPromise<int> Supervisor::adoptSourceProgram(pid_t pid, const std::string& source, const std::string& role) {
  long long started = nowMs();
  return children_.add(pid, {role, started, 0, source, ""})
      .then([pid, source, role, started](int status) {
        auto fields = exitFields(status);
        fields["process"] = role;
        fields["process_pid"] = pid;
        fields[role == "source" ? "source" : "server"] = source;
        fields["uptime_ms"] = msSince(started);
        audit("process.exit", fields);
        return status;
      })
      .eagerlyEvaluate(nullptr)
      .fork();
}

void Supervisor::killChild(pid_t pid, const std::string& role) {
  for (auto& [p, info] : children_.list())
    if (p == pid && info.role == role) children_.signal(pid, SIGKILL);
}

void Supervisor::killWorker(pid_t pid) {
  for (auto& [p, info] : children_.list())
    if (p == pid && info.role == "worker") children_.signal(pid, SIGKILL);
}

kj::Promise<void> Supervisor::shutdown() {
  stopping_ = true;
  audit("process.exit", {{"process", "supervisor"}, {"process_pid", (int)getpid()}, {"how", "stopped by signal"},
                         {"uptime_ms", msSince(startedAtMs_)}});
  KJ_IF_MAYBE(admin, brokerAdmin_) {
    tasks_.add(admin->stopRequest().send().ignoreResult().catch_([](kj::Exception&&) {}));
  }
  children_.signalRole("worker", SIGKILL);
  children_.signalRole("command", SIGKILL);
  children_.signalRole("source", SIGKILL);
  children_.signalRole("mcp", SIGKILL);
  children_.signalRole("broker", SIGTERM);
  auto& timer = io_.provider->getTimer();
  return waitAllReaped(timer.now() + 1500 * kj::MILLISECONDS).then([this, &timer]() {
    children_.signalRole("", SIGKILL);
    return waitAllReaped(timer.now() + 400 * kj::MILLISECONDS);
  });
}

kj::Promise<void> Supervisor::waitAllReaped(kj::TimePoint deadline) {
  auto& timer = io_.provider->getTimer();
  if (children_.empty() || timer.now() >= deadline) return kj::READY_NOW;
  return timer.afterDelay(10 * kj::MILLISECONDS).then([this, deadline]() { return waitAllReaped(deadline); });
}

}  // namespace pine
