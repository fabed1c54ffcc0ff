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

kj::Promise<GateAnswer> Run::checkTool(std::string tool, std::string argsJson) {
  return gate_.checkWorkerTool(tool, argsJson);
}

void Run::toolRan(std::string tool, bool isError, std::string firstLine) { gate_.workerRan(tool, isError, firstLine); }

kj::Promise<ToolAnswer> Run::callTool(std::string tool, std::string argsJson) {
  return gate_.checkBrokerTool(tool, argsJson).then([this, tool](RunGate::BrokerCall c) -> kj::Promise<ToolAnswer> {
    if (!c.allowed) return ToolAnswer{c.answer, c.isError};
    long long seq = c.seq;
    // The journal says what came of it; a call that threw is journalled failed and the error passed on.
    return tools_.carryOut(tool, c.args)
        .then([this, seq, tool](ToolAnswer a) {
          ctx_.journal.end(seq, !a.isError, a.result);
          gate_.auditResult(tool, a.isError, a.result, "broker");
          return a;
        },
              [this, seq](kj::Exception&& e) -> ToolAnswer {
                ctx_.journal.end(seq, false, describeRemote(e));
                kj::throwFatalException(kj::mv(e));
              });
  });
}

kj::Promise<ModelAnswer> Run::model(ModelCallData call, proto::ModelStream::Client sink) {
  return relay_.call(kj::mv(call), kj::mv(sink));
}

}  // namespace pine
