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

namespace {

// The first line of a failed tool's result, at most 200 bytes cut on a character's boundary: the
// progress line says that it failed, the task record has the whole of it.
std::string failureLine(const std::string& result) {
  std::string line = result.substr(0, result.find('\n'));
  if (line.size() > 200) {
    size_t n = 200;
    while (n > 0 && (static_cast<unsigned char>(line[n]) & 0xC0) == 0x80) --n;
    line = line.substr(0, n) + "...";
  }
  return line;
}

}  // namespace

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

kj::Promise<ToolAnswer> Run::callTool(std::string tool, std::string argsJson) {
  return gate_.checkBrokerTool(tool, argsJson).then([this, tool](RunGate::BrokerCall c) -> kj::Promise<ToolAnswer> {
    if (!c.allowed) return ToolAnswer{c.answer, c.isError};
    long long seq = c.seq;
    // The journal says what came of it; a call that threw is journalled failed and the error passed on.
    return tools_.carryOut(tool, c.args)
        .then([this, seq, tool](ToolAnswer a) {
          ctx_.journal.end(seq, !a.isError, a.result);
          if (a.isError) ctx_.services.progress(ctx_.taskId, tool + ": failed: " + failureLine(a.result));
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
