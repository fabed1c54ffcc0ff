// The telegram and telegramFile methods of the Supervisor capability: Bot API calls for a
// telegram source, made by a pine-egress process like every request. pined builds the
// address itself from the source's configuration (baseUrl, and `bot${secret:NAME}` for its
// tokenSecret), so the broker names a source and a method, never the token, and cannot
// point the token at another host. The answer's body is relayed unread.
#pragma once
#include <kj/async.h>

#include <optional>
#include <string>

#include "proto/supervisor.capnp.h"

namespace pine {

class Supervisor;
class EgressProcesses;

kj::Promise<void> telegramCall(
    Supervisor& sup, EgressProcesses& egress,
    capnp::CallContext<proto::Supervisor::TelegramParams, proto::Supervisor::TelegramResults> context);
kj::Promise<void> telegramFile(
    Supervisor& sup, EgressProcesses& egress,
    capnp::CallContext<proto::Supervisor::TelegramFileParams, proto::Supervisor::TelegramFileResults> context);

// Why a file path from getFile may not be fetched, or nullopt: [A-Za-z0-9_./-], no "..", no
// leading '/', 1 to 256 bytes (it is spliced into the address).
std::optional<std::string> telegramFilePathProblem(const std::string& path);

}  // namespace pine
