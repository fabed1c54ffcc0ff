// The pollSource method of the Supervisor capability: one GET of an `http` source, made by a
// pine-egress process like every request. pined builds it from the source's configuration:
// the broker names the source (and, after a redirect, an address on the same scheme, host and
// port), never the token, so it cannot send the token to another host nor reach the local
// network for an address the owner confirmed as public.
#pragma once
#include <kj/async.h>

#include <optional>
#include <string>

#include "config/model.h"
#include "egress/request/request.h"
#include "proto/supervisor.capnp.h"

namespace pine {

class Supervisor;
class EgressProcesses;

// The request for one poll of `source` and its rules, or why there is none (`refused`).
struct SourcePoll {
  egress::EgressRequest request;
  egress::EgressPolicy policy;
  std::string refused;
};
SourcePoll sourcePoll(const config::Source& source, const std::string& url, const std::string& etag,
                      const std::string& lastModified);

kj::Promise<void> pollSource(
    Supervisor& sup, EgressProcesses& egress,
    capnp::CallContext<proto::Supervisor::PollSourceParams, proto::Supervisor::PollSourceResults> context);

}  // namespace pine
