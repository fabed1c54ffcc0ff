// The broker's side of starting a source program or a local MCP server: asks pined
// (Supervisor.startSourceProgram, startMcpServer),
// which looks up the program in its own configuration and starts it, and turns the answer into
// what broker/sources/program_source speaks to: the program's stdin and stdout as a stream,
// and a way to learn how it ended. Dropping the link drops pined's handle, which kills it.
#pragma once
#include <kj/async-io.h>

#include <string>

#include "broker/sources/program_source.h"
#include "proto/supervisor.capnp.h"

namespace pine {

kj::Promise<sources::ProgramLink> startSourceProgram(kj::LowLevelAsyncIoProvider& io, proto::Supervisor::Client supervisor,
                                                     const std::string& source);
kj::Promise<sources::ProgramLink> startMcpServer(kj::LowLevelAsyncIoProvider& io, proto::Supervisor::Client supervisor,
                                                 const std::string& agent, const std::string& server);

}  // namespace pine
