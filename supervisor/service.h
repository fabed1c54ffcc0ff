// The Supervisor capability served to the broker (proto/supervisor.capnp).
// Every argument is re-validated here: the broker is less trusted than pined.
#pragma once
#include <kj/async-io.h>
#include <sys/types.h>

#include <map>
#include <string>

#include "proto/supervisor.capnp.h"
#include "supervisor/egress_call.h"
#include "supervisor/mqtt_call.h"

namespace pine {

class Supervisor;

// A wait status as proto::ExitStatus says it: the exit code, or the signal that ended it.
void setExitStatus(proto::ExitStatus::Builder out, int status);

class SupervisorService final : public proto::Supervisor::Server {
 public:
  SupervisorService(Supervisor& sup, kj::AsyncIoContext& io);
  ~SupervisorService() noexcept(false);

 protected:
  kj::Promise<void> spawnWorker(SpawnWorkerContext context) override;
  kj::Promise<void> status(StatusContext context) override;
  kj::Promise<void> ready(ReadyContext context) override;
  kj::Promise<void> reloadConfig(ReloadConfigContext context) override;
  kj::Promise<void> changeConfig(ChangeConfigContext context) override;
  kj::Promise<void> createAgent(CreateAgentContext context) override;
  kj::Promise<void> egress(EgressContext context) override;
  kj::Promise<void> download(DownloadContext context) override;
  kj::Promise<void> telegram(TelegramContext context) override;
  kj::Promise<void> telegramFile(TelegramFileContext context) override;
  kj::Promise<void> checkHook(CheckHookContext context) override;
  kj::Promise<void> openMqtt(OpenMqttContext context) override;
  kj::Promise<void> pollSource(PollSourceContext context) override;
  kj::Promise<void> listFtp(ListFtpContext context) override;
  kj::Promise<void> runSourceCommand(RunSourceCommandContext context) override;
  kj::Promise<void> runAgentCommand(RunAgentCommandContext context) override;
  kj::Promise<void> makeHookSecret(MakeHookSecretContext context) override;
  kj::Promise<void> fetchFtpFile(FetchFtpFileContext context) override;
  kj::Promise<void> taskChanges(TaskChangesContext context) override;
  kj::Promise<void> undoTask(UndoTaskContext context) override;
  kj::Promise<void> startSourceProgram(StartSourceProgramContext context) override;
  kj::Promise<void> sourceProgram(SourceProgramContext context) override;
  kj::Promise<void> startMcpServer(StartMcpServerContext context) override;

 private:
  Supervisor& sup_;
  kj::AsyncIoContext& io_;
  EgressProcesses egress_;  // this broker connection's egress processes
  std::map<std::string, MqttSession> mqttSessions_;  // the pine-mqtt of each mqtt source, by name
};

}  // namespace pine
