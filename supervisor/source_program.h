// pined's share of a source program (docs/sources.md "source programs"): the owner's program,
// named by a source's `use` or by its registered type, started with pine's rights (no sandbox:
// the seed's layer 6) and a minimal environment, in source-data/<source>/ (outside data/, which the broker writes). Its stdin and
// stdout are one end of a socketpair whose other end goes to the broker, which speaks the
// JSON-lines protocol; its stderr goes to pined's log, line by line, capped and redacted
// (owner_program.h starts it, as it starts local MCP servers).
#pragma once
#include <kj/async-io.h>
#include <sys/types.h>

#include <string>

#include "config/model.h"
#include "supervisor/owner_program.h"

namespace pine {

class Supervisor;

// The program file of the source named in cfg, absolute; error text when it has none.
std::string sourceProgramPath(const config::Home& cfg, const std::string& home, const std::string& source,
                              std::string& error);

// Throws std::runtime_error saying why the program could not be started.
StartedProgram startSourceProgram(Supervisor& sup, kj::AsyncIoContext& io, const std::string& source);

}  // namespace pine
