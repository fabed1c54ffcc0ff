#include "broker/run.h"

#include <kj/debug.h>

#include "broker/run_mcp.h"
#include "common/log.h"
#include "common/rpc_link.h"
#include "common/tool_table.h"

namespace pine {

Run::Run(RunServices& services, std::string taskId, RunRequest request, std::shared_ptr<const config::Home> config,
         std::set<std::string> tools, RunResume resume)
    : ctx_(services, std::move(taskId), std::move(request), std::move(config), std::move(tools), resume.attempt),
      gate_(ctx_),
      tools_(ctx_),
      relay_(ctx_, resume.costSoFar) {}

std::vector<ToolSpecText> Run::workerTools() const {
  std::vector<ToolSpecText> out;
  for (const auto& row : tooltable::builtinTools())
    if (row.side == tooltable::Side::Worker && ctx_.tools.count(row.name))
      out.push_back({row.name, row.description, row.parameters.dump()});
  return out;
}

std::vector<ToolSpecText> Run::brokerTools() {
  std::vector<ToolSpecText> out;
  for (const auto& row : tooltable::builtinTools())
    if (ctx_.tools.count(row.name) && isBrokerTool(row.name))
      out.push_back({row.name, row.description, row.parameters.dump()});
  for (auto& spec : mcpToolSpecs(ctx_)) out.push_back(std::move(spec));  // run_mcp.h
  return out;
}

namespace {

// An argument of another type than the tool's schema gives (a number for a name): nlohmann throws
// where a rule or a tool reads it. It is the model's mistake, told to it as such; before, the
// exception ended the worker and with it the task.
std::optional<std::string> wrongArgumentType(const kj::Exception& e) {
  std::string what = e.getDescription().cStr();
  size_t at = what.find("[json.exception.type_error.");
  if (at == std::string::npos) return std::nullopt;
  return "an argument has another type than the tool's schema gives (" + what.substr(at, 160) +
         "): call it again with the types its schema gives";
}

}  // namespace

kj::Promise<GateAnswer> Run::checkTool(std::string tool, std::string argsJson) {
  return kj::evalNow([&]() { return gate_.checkWorkerTool(tool, argsJson); })
      .catch_([](kj::Exception&& e) -> GateAnswer {
        if (auto why = wrongArgumentType(e)) return GateAnswer{false, *why};
        kj::throwFatalException(kj::mv(e));
      });
}

void Run::toolRan(std::string tool, bool isError, std::string firstLine) { gate_.workerRan(tool, isError, firstLine); }

kj::Promise<ToolAnswer> Run::callTool(std::string tool, std::string argsJson) {
  auto checked = kj::evalNow([&]() { return gate_.checkBrokerTool(tool, argsJson); });
  return checked.then([this, tool](RunGate::BrokerCall c) -> kj::Promise<ToolAnswer> {
    if (!c.allowed) return ToolAnswer{c.answer, c.isError};
    long long seq = c.seq;
    // The journal says what came of it; a call that threw is journalled failed and the error passed
    // on, unless it was an argument of the wrong type (the model's to fix).
    return kj::evalNow([&]() { return tools_.carryOut(tool, c.args); })
        .then([this, seq, tool](ToolAnswer a) {
          ctx_.journal.end(seq, !a.isError, a.result);
          gate_.auditResult(tool, a.isError, a.result, "broker");
          return a;
        },
              [this, seq](kj::Exception&& e) -> ToolAnswer {
                ctx_.journal.end(seq, false, describeRemote(e));
                if (auto why = wrongArgumentType(e)) return ToolAnswer{*why, true};
                kj::throwFatalException(kj::mv(e));
              });
  }, [](kj::Exception&& e) -> kj::Promise<ToolAnswer> {
    if (auto why = wrongArgumentType(e)) return ToolAnswer{*why, true};
    return kj::mv(e);
  });
}

kj::Promise<ModelAnswer> Run::model(ModelCallData call, proto::ModelStream::Client sink) {
  return relay_.call(kj::mv(call), kj::mv(sink));
}

}  // namespace pine
