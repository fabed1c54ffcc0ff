// pined's state: the broker it keeps running, the workers it started for the
// broker, and shutdown. It spawns, reaps and listens; it never parses outside
// content.
#pragma once
#include <kj/async-io.h>

#include <optional>
#include <string>
#include <utility>

#include "common/home.h"
#include "common/rpc_link.h"
#include "config/load.h"
#include "proto/supervisor.capnp.h"
#include "sandbox/agent_sandbox.h"
#include "sandbox/broker_sandbox.h"
#include "supervisor/backoff.h"
#include "supervisor/children.h"
#include "supervisor/spawn.h"
#include "common/unix_socket.h"
#include "supervisor/control_socket.h"
#include "supervisor/owner_service.h"
#include "redact/redactor.h"
#include "supervisor/secrets/secret_store.h"

namespace pine {

struct SupervisorOptions {
  Home home;
  std::string brokerProgram;
  std::string workerProgram;
  bool foreground = false;
  int readyFd = -1;  // written to once the broker is ready (daemon start-up), then closed
  sandbox::SandboxOptions sandbox;  // worker uid/gid and the broker's id range when root, Landlock minimum
  std::string egressCaFile;       // trust only this CA bundle for egress (empty: the system's)
  std::string launcherProgram;    // pine-launch (empty: beside pined)
  std::optional<sandbox::SandboxIds> brokerIds;  // when root: the broker's own uid and gid (main picks them)
  sandbox::BackendChoice backend;  // Linux's own, or Seatbelt through sandbox-exec
  std::optional<SocketAccess> admin;  // --admin-group: who besides pine's uid may use the sockets
};

struct SpawnedWorker {
  pid_t pid;
  int brokerEnd;                // the broker's end of the worker's fd 3; the caller owns it
  kj::ForkedPromise<int> exit;  // the wait status, once reaped
  std::string sandbox;          // which sandbox the worker runs in
};

class Supervisor final : private kj::TaskSet::ErrorHandler {
 public:
  Supervisor(kj::AsyncIoContext& io, SupervisorOptions options);
  KJ_DISALLOW_COPY(Supervisor);

  // Runs until SIGTERM or SIGINT (or the owner's `pinectl stop`), then stops every process it started.
  kj::Promise<void> run();
  // `pinectl stop`, over pined.sock: the same clean stop as SIGTERM.
  void requestStop();

  // Called by the Supervisor capability, after it validated its arguments.
  // Throws, saying why, when the worker's sandbox cannot be built: no task runs unconfined.
  SpawnedWorker spawnWorker(const std::string& taskId, const std::string& agent, const sandbox::Grants& grants,
                            bool tainted, bool untrusted = false, const std::string& folder = "");
  // Puts a child under the backend's sandbox: the Linux plan (pine-launch enters it) or the
  // Seatbelt profile (sandbox-exec applies it, in box.cwd). `box` must outlive the spawn.
  void useSandbox(SpawnSpec& spec, const sandbox::PreparedSandbox& box) const;
  sandbox::Backend backend() const { return options_.backend.backend; }
  void killWorker(pid_t pid);
  std::vector<std::pair<pid_t, ChildInfo>> processes() const { return children_.list(); }
  long long startedAtMs() const { return startedAtMs_; }
  unsigned brokerRestarts() const { return brokerRestarts_; }
  // The broker serves the owner; `problems` are what it could not do (said on stderr at the start).
  void brokerReady(const std::vector<std::string>& problems = {});
  void brokerStartFailed(const std::string& why);
  bool tellStarter(char code, const std::string& said);
  secrets::SecretStore& secrets() { return secrets_; }
  const redact::Redactor& redactor() const { return *redactor_; }
  std::shared_ptr<const redact::Redactor> redactorSnapshot() const { return redactor_; }
  const std::string& egressCaFile() const { return options_.egressCaFile; }
  // What an egress process's sandbox is built from (egress_call.cpp): pine-egress beside
  // pine-worker, the same sandbox host (and uid options) as the workers'.
  const SupervisorOptions& options() const { return options_; }
  const sandbox::SandboxHost& sandboxHost() const { return sandboxes_.host(); }
  // The base URLs of the model providers in force (egress may reach these even on loopback).
  std::vector<std::string> providerBaseUrls() const;
  // The configuration in force (null before the first successful load).
  std::shared_ptr<const config::Home> config() const { return config_.current(); }
  // A child forked for a helper job ("egress"): reaped and audited like the others.
  void adoptChild(pid_t pid, const std::string& role);
  void killChild(pid_t pid, const std::string& role);
  // For a command source (source_command.cpp): the same agent sandboxes the workers get, and
  // its child reaped and listed like them.
  sandbox::PreparedSandbox prepareAgentSandbox(const sandbox::AgentSandboxRequest& r) const { return sandboxes_.prepare(r); }
  kj::Promise<int> watchChild(pid_t pid, ChildInfo info) { return children_.add(pid, std::move(info)); }
  // Work that must run to its end even when whoever waited for it is gone (a command's
  // bookkeeping after its exit, when the broker dropped it).
  void keep(kj::Promise<void> work) { tasks_.add(kj::mv(work)); }
  bool stopping() const { return stopping_; }
  // A source program or a local MCP server (owner_program.cpp; role "source" or "mcp"): reaped and
  // audited like the others, killed with the broker that asked for it and at shutdown; resolves
  // with its wait status.
  kj::ForkedPromise<int> adoptSourceProgram(pid_t pid, const std::string& source, const std::string& role = "source");
  const Home& home() const { return options_.home; }
  // After `pinectl secret set/unset`: configuration may name the secret now.
  void secretsChanged();
  // Re-reads the configuration; on errors keeps the one in force and returns them (formatted).
  std::vector<std::string> reloadConfig(const std::string& by);
  // Called when .env or a CA file may hold other values (pinectl secret, the owner's reload): the
  // broker's service restarts the MQTT connectors whose login changed.
  void setLoginsChanged(std::function<void()> f) { loginsChanged_ = std::move(f); }
  // Whether the last successful reload restarts the broker (its folders changed).
  bool brokerRestartsForReload() const { return brokerRestartsForReload_; }

 private:
  kj::Promise<void> keepBroker();
  // The broker's sandbox for the configuration in force; throws saying why it cannot be built.
  sandbox::PreparedSandbox prepareBroker();
  // After a configuration change, as root: what pined wrote (mode 600) readable to the broker again.
  void shareHomeWithBroker(const char* why);
  // Without root the broker shares pined's uid and only a mask in its mount namespace hides .env,
  // which a rename over .env detaches: restart the broker when .env is no longer the file it masked.
  void restartBrokerIfEnvReplaced(const char* why);
  // Its sandbox grants the folder sources' folders it started with: restart it when they change.
  bool restartBrokerIfFoldersChanged();  // true: a restart is on its way
  bool envReplacedUnderBroker() const;   // .env is another file than the one masked from the broker
  kj::Promise<void> onHangup();
  kj::Promise<void> shutdown();
  kj::Promise<void> waitAllReaped(kj::TimePoint deadline);
  void taskFailed(kj::Exception&& e) override;

  kj::AsyncIoContext& io_;
  SupervisorOptions options_;
  ProcessTable children_;
  Backoff backoff_;
  kj::TaskSet tasks_;
  long long startedAtMs_;
  unsigned brokerRestarts_ = 0;
  bool stopping_ = false;
  kj::Own<kj::PromiseFulfiller<void>> stopAsked_;  // set by run()
  kj::Maybe<kj::Own<RpcLink>> brokerLink_;
  kj::Maybe<proto::BrokerAdmin::Client> brokerAdmin_;
  sandbox::AgentSandboxes sandboxes_;
  bool brokerReady_ = false;
  bool startSaid_ = false;  // the one line that says pined has started (and the broker's problems)  // it serves the control API: pine.sock's connections go to it
  pid_t brokerPid_ = 0;                          // the broker's launcher (its monitor), 0 when none
  std::pair<dev_t, ino_t> maskedEnv_{0, 0};      // the .env the running broker's mask covers
  // The watched folders the running broker's sandbox grants, each with the (device, inode) it had
  // then: Landlock grants the folder that was there, not the path.
  std::vector<std::pair<std::string, std::pair<dev_t, ino_t>>> brokerFolders_;
  bool brokerRestartsForReload_ = false;
  std::function<void()> loginsChanged_;
  pid_t restartingBroker_ = 0;  // the broker pined has asked to stop so that its successor starts afresh
  config::ActiveConfig config_;
  secrets::SecretStore secrets_;
  std::shared_ptr<const redact::Redactor> redactor_;  // rebuilt whenever the secrets change
  OwnerListener owner_;
  ControlSocket control_;  // pine.sock: checked here, served by the broker
  bool handOwnerConnection(int fd);
  void rebuildRedactor();
};

}  // namespace pine
