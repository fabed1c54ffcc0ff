// pinectl folder AGENT[/SESSION] [DIR | --close]: opens a folder of the owner's for one
// conversation (PUT /v1/agents/{id}/folder), closes it, or shows it. A relative DIR is taken
// from pinectl's working directory; the broker and pined check the rest.
#include <filesystem>

#include "pinectl/api_call.h"
#include "pinectl/commands.h"
#include "pinectl/http_client.h"

namespace pine {

std::string absoluteFolder(const std::string& dir) {
  if (dir.empty() || dir[0] == '/') return dir;
  std::error_code ec;
  auto abs = std::filesystem::absolute(dir, ec);
  return ec ? dir : abs.lexically_normal().string();
}

int cmdFolder(const std::string& home, const std::string& target, const std::string& dir, bool close,
              std::ostream& out, std::ostream& err) {
  std::string agent = target.substr(0, target.find('/'));
  std::string session = target.size() > agent.size() ? target.substr(agent.size() + 1) : "main";
  std::string path = "/v1/agents/" + urlEncode(agent) + "/folder";
  ApiAnswer a;
  if (close) a = callApi(home, "DELETE", path, nlohmann::json{{"session", session}});
  else if (dir.empty()) a = callApi(home, "GET", path + "?session=" + urlEncode(session));
  else a = callApi(home, "PUT", path, nlohmann::json{{"session", session}, {"path", absoluteFolder(dir)}});
  if (!a.ok()) return reportFailure(a, err);
  std::string open = a.body.value("path", "");
  if (open.empty()) out << "no folder is open in " << agent << "/" << session << "\n";
  else out << agent << "/" << session << ": folder " << open << " (its runs start there and may read and write it)\n";
  return 0;
}

}  // namespace pine
