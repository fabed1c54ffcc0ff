// The makeHookSecret method of the Supervisor capability: the secret of a webhook an agent sets up
// (add_source, after the owner's yes). pined makes it, stores it in .env and tells the broker only
// the entry's name, which pined derives from the source's name: the broker never sees the value
// and cannot choose which entry is written, and an entry that exists is never replaced.
#pragma once
#include <optional>
#include <string>

#include "proto/supervisor.capnp.h"

namespace pine {

class Supervisor;

// HOOK_<SOURCE> for a valid source name (upper case, '-' as '_'); nothing for any other text.
std::optional<std::string> hookSecretName(const std::string& source);

kj::Promise<void> makeHookSecret(
    Supervisor& sup,
    capnp::CallContext<proto::Supervisor::MakeHookSecretParams, proto::Supervisor::MakeHookSecretResults> context);

}  // namespace pine
