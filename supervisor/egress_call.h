// The egress and download methods of the Supervisor capability. Each request runs in a
// pine-egress process of its own, started by exec (never a fork of pined, whose memory
// holds every secret) inside its sandbox: network, the libraries, read-only resolver and
// CA files; no home, no .env; an unprivileged uid when pined is root. pined sends it the
// job (proto/egress.capnp) with the values of exactly the secrets the request names, and
// relays the frames it answers with: the body chunks go to the broker's ByteSink unread.
// A slow or hostile server never stalls pined's event loop, a crash in the HTTP stack
// never takes pined down, and the bytes from the internet never enter pined's memory.
#pragma once
#include <capnp/common.h>
#include <kj/array.h>
#include <kj/async-io.h>
#include <kj/io.h>

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "egress/request/request.h"
#include "proto/supervisor.capnp.h"
#include "sandbox/policy.h"
#include "sandbox/sandbox_host.h"

namespace pine {

class Supervisor;

// What a request's process answered: the head, or why there is none (the body went to the sink).
struct EgressAnswer {
  long status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string error;
  bool done = false;
};

// Sets the results of a method that answers (status, headers, error).
template <typename Results>
void setAnswer(Results res, const EgressAnswer& a) {
  res.setStatus((uint16_t)a.status);
  auto list = res.initHeaders((unsigned)a.headers.size());
  for (unsigned i = 0; i < a.headers.size(); ++i) {
    list[i].setName(a.headers[i].first);
    list[i].setValue(a.headers[i].second);
  }
  res.setError(a.error);
}

// The egress processes of one broker connection. Each request gets a process of its own,
// used once: the one started ahead of it when there is one (exec'd, sandboxed, its
// libraries loaded, waiting for a job and holding nothing), else a new one. After a
// request that ended with an answer the next is started in the background, so that a
// model call does not wait for an exec; after a cancelled or failed one none is, and the
// one waiting is killed with this object (the broker went away).
class EgressProcesses final : private kj::TaskSet::ErrorHandler {
 public:
  EgressProcesses(Supervisor& sup, kj::AsyncIoContext& io);
  ~EgressProcesses() noexcept(false);
  KJ_DISALLOW_COPY(EgressProcesses);

  kj::Promise<void> egress(capnp::CallContext<proto::Supervisor::EgressParams, proto::Supervisor::EgressResults> context);
  // The download tool's fetch: a GET under the agent's download rules (see proto/supervisor.capnp).
  kj::Promise<void> download(
      capnp::CallContext<proto::Supervisor::DownloadParams, proto::Supervisor::DownloadResults> context);

  // One request under `policy` (the caller re-checked it), its body streaming to sink; `purpose`
  // names it in the audit log.
  kj::Promise<EgressAnswer> run(const egress::EgressRequest& request, egress::EgressPolicy policy,
                                proto::ByteSink::Client sink, const std::string& purpose);

  struct Started {
    pid_t pid = 0;
    kj::AutoCloseFd fd;  // pined's end of the process's fd 3
  };
  // A process for one job: the waiting one if it is still there, else a new one. Throws
  // (saying why) when its sandbox cannot be built or it cannot be started.
  Started take();
  // Starts the next process on a later turn of the event loop, unless one is waiting.
  void startNextLater();
  kj::AsyncIoContext& io() { return io_; }

 private:
  Started start();
  void taskFailed(kj::Exception&& e) override;

  Supervisor& sup_;
  kj::AsyncIoContext& io_;
  kj::Maybe<Started> waiting_;
  bool starting_ = false;
  kj::TaskSet tasks_;
};

// What pined sends one pine-egress process: a serialized proto::egress::EgressJob with the
// request, its rules, and the values of exactly the secrets its placeholders name (a name
// the store does not know is left out: the process reports it by name). When the request
// fails the checks that need no secret (egress/request/placeholders.h), `refused` says why
// (as "METHOD URL: why") and `message` is empty: no value is looked up, no process started.
struct PreparedJob {
  std::string refused;
  kj::Array<capnp::word> message;
};
PreparedJob prepareEgressJob(const egress::EgressRequest& request, const egress::EgressPolicy& policy,
                             const egress::SecretLookup& secrets);

// What a pine-egress process's policy is built from (sandbox::egressPolicy): its program, pine's
// home and the owner's home, both closed to it.
sandbox::EgressPaths egressPaths(const std::string& program, const std::string& pineHome);

// The sandbox of a pine-egress process (sandbox::egressPolicy, the workers' default uid, cwd /):
// throws, saying why, when it cannot be built; no request then runs unconfined.
sandbox::PreparedSandbox egressSandbox(const std::string& program, const std::string& pineHome,
                                       const sandbox::SandboxHost& host);

}  // namespace pine
