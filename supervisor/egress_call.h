// The egress method of the Supervisor capability: each request runs in a child
// forked from pined (it inherits the secrets, nothing is passed in), so a slow
// or hostile server never stalls pined's event loop and a crash in the HTTP
// stack never takes pined down. The child streams framed results back on a pipe.
#pragma once
#include <kj/async-io.h>

#include "proto/supervisor.capnp.h"

namespace pine {

class Supervisor;

kj::Promise<void> runEgressCall(Supervisor& sup, kj::AsyncIoContext& io,
                                capnp::CallContext<proto::Supervisor::EgressParams, proto::Supervisor::EgressResults> context);

// The download tool's fetch: a GET under the agent's download rules (see proto/supervisor.capnp).
kj::Promise<void> runDownloadCall(Supervisor& sup, kj::AsyncIoContext& io,
                                  capnp::CallContext<proto::Supervisor::DownloadParams, proto::Supervisor::DownloadResults> context);

}  // namespace pine
