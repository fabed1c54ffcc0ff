// GET/PUT/DELETE /v1/agents/{id}/folder: the folder the owner opens for one conversation
// (pinectl chat /folder, pinectl folder). Checked here for a clear early error with the same
// rules pined applies again when it builds the worker's sandbox (sandbox/folder_rules.h); stored
// with the session so that it outlives a broker restart; a reset closes it.
#include "broker/owner_api.h"
#include "common/log.h"
#include "common/names.h"
#include "common/unix_socket.h"
#include "sandbox/folder_rules.h"

namespace pine {

ApiReply OwnerApi::folder(const std::string& method, const std::string& agent, const ApiQuery& query,
                          const nlohmann::json& body) {
  if (!p_.config->agents.count(agent)) return noAgent(agent);
  std::string session = "main";
  if (auto it = query.find("session"); it != query.end() && !it->second.empty()) session = it->second;
  if (body.is_object() && body.contains("session")) {
    if (!body["session"].is_string()) return apiError(400, "\"session\" must be a string");
    session = body["session"].get<std::string>();
  }
  if (!isValidTaskId(session)) return apiError(400, "\"session\" must be [A-Za-z0-9_.-], 1 to 64 characters");
  if (session.find('+') != std::string::npos)
    return apiError(400, "a sub-agent's session shares its conversation's folder: open it there");
  if (method == "GET") return {200, {{"agent", agent}, {"session", session}, {"path", p_.store.sessionFolder(agent, session)}}};
  if (method == "DELETE") {
    p_.store.setSessionFolder(agent, session, "", nowMs());
    audit("folder.close", {{"agent", agent}, {"session", session}});
    return {200, {{"agent", agent}, {"session", session}, {"path", ""}}};
  }
  if (!body.is_object() || !body.contains("path") || !body["path"].is_string())
    return apiError(400, "the body must be {\"session\": \"...\", \"path\": \"/absolute/folder\"}");
  std::string path = body["path"].get<std::string>();
  if (path.size() > 4096) return apiError(400, "\"path\" is longer than 4096 bytes");
  sandbox::AgentPaths paths;
  paths.agentId = agent;
  paths.pineHome = p_.home.root;
  paths.workspace = p_.home.root + "/agents/" + agent + "/workspace";
  paths.privateHome = p_.home.root + "/sandbox/" + agent;
  paths.tmpdir = paths.privateHome + "/tmp";
  paths.programDir = programDir();  // pine's programs live together
  std::string canonical;
  try {
    canonical = sandbox::checkOpenedFolder(path, paths);
  } catch (std::exception& e) {
    audit("folder.refused", {{"agent", agent}, {"session", session}, {"path", path}, {"reason", e.what()}});
    return apiError(403, e.what());
  }
  p_.store.setSessionFolder(agent, session, canonical, nowMs());
  audit("folder.open", {{"agent", agent}, {"session", session}, {"path", canonical}});
  return {200, {{"agent", agent}, {"session", session}, {"path", canonical}}};
}

}  // namespace pine
