#include "broker/source_type_tool.h"

#include <fmt/format.h>

#include "broker/broker_tools.h"
#include "common/log.h"
#include "common/names.h"
#include "config/command_line.h"

namespace pine {

std::optional<std::string> checkSourceTypeArgs(const RunContext& run, const nlohmann::json& args) {
  if (!args.contains("name") || !args["name"].is_string() || !args.contains("path") || !args["path"].is_string())
    return "\"name\" (the new type's name) and \"path\" (the program, in your workspace) are required";
  std::string name = args["name"].get<std::string>(), path = args["path"].get<std::string>();
  if (!isValidAgentId(name)) return "a source type's name is 1 to 64 characters of [a-z0-9_-], not starting with '-'";
  for (const char* builtin : {"webhook", "mqtt", "folder", "http", "command", "telegram", "ftp"})
    if (name == builtin) return "'" + name + "' is a built-in source type; pick another name";
  for (const auto& t : run.config->pine.sourceTypes)
    if (t.name == name) return "a source type '" + name + "' exists; pick another name";
  if (path.empty() || path.size() > 4096) return "\"path\" names a file in your workspace";
  return std::nullopt;
}

kj::Promise<ProgramQuestion> programQuestion(RunContext& run, const nlohmann::json& args) {
  auto req = run.services.supervisor().sourceProgramRequest();
  req.setAgent(run.req.agent);
  req.setPath(args.value("path", ""));
  return req.send().then([path = args.value("path", ""), name = args.value("name", "")](auto&& r) {
    ProgramQuestion q;
    if (r.getError().size() > 0) {
      q.refused = std::string("the program cannot be registered: ") + r.getError().cStr();
      return q;
    }
    q.sha256 = r.getSha256();
    q.question = fmt::format(
        "\n\nadd_source_type '{}' registers a PROGRAM that pine will run with pine's own rights, outside any "
        "sandbox, whenever a source of this type is wanted.\n"
        "Program: {} (in main's workspace)\nSize: {} bytes\nSHA-256: {}\nFirst lines:\n{}"
        "If you say yes, exactly this content is copied into pine's home and runs from there.",
        // The path as a shell would take it: a newline or an invisible character in the file's name
        // (the agent chose it) shows as an escape, and cannot add lines of its own to the question.
        name, config::shownCommandLine({path}), r.getSize(), q.sha256, r.getHead().cStr());
    return q;
  });
}

kj::Promise<ToolAnswer> BrokerTools::addSourceType(const nlohmann::json& args) {
  const std::string name = args.value("name", ""), path = args.value("path", ""), sha = args.value("sha256", "");
  if (sha.size() != 64) return toolError("add_source_type was not confirmed for a file's content; ask again");
  auto req = run_.services.supervisor().sourceProgramRequest();
  req.setAgent(run_.req.agent);
  req.setPath(path);
  req.setName(name);
  req.setSha256(sha);
  return req.send()
      .then([this, name, sha](auto&& r) -> kj::Promise<std::optional<std::string>> {
        if (r.getError().size() > 0) return std::optional<std::string>(std::string(r.getError().cStr()));
        nlohmann::json entry = {{"name", name}, {"file", std::string(r.getFile().cStr())}};
        return addToPineYaml("sourceTypes", entry, "source type '" + name + "' (SHA-256 " + sha + ")");
      })
      .then([this, name, sha](std::optional<std::string> e) {
        if (e) return toolError("the source type was not registered:\n" + *e);
        run_.services.reloadConfiguration();
        audit("source_type.add", {{"agent", run_.req.agent}, {"session", run_.req.session}, {"task", run_.taskId},
                                  {"name", name}, {"sha256", sha}});
        return ToolAnswer{"source type '" + name + "' registered (SHA-256 " + sha.substr(0, 12) +
                              "...): a source runs it with type: " + name + "; later changes to your file do not "
                              "reach it",
                          false};
      });
}

}  // namespace pine
