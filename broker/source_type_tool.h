// add_source_type (docs/sources.md "source programs"): a program in the main agent's workspace
// becomes a registered source type. The broker cannot read workspaces, so pined reads the file:
// once to put its size, SHA-256 and first lines in the owner's question (programQuestion), and
// again after the yes, when it copies exactly the confirmed content into pine's home
// (BrokerTools::addSourceType). The rule that asks or refuses is policy's (Decide::AddSourceType).
#pragma once
#include <kj/async.h>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "broker/run_context.h"

namespace pine {

struct ProgramQuestion {
  std::optional<std::string> refused;  // the file cannot be used: refused without asking
  std::string question;                // what the owner reads: a program, its path, size, SHA-256, first lines
  std::string sha256;                  // what the yes is to
};

kj::Promise<ProgramQuestion> programQuestion(RunContext& run, const nlohmann::json& args);

}  // namespace pine
