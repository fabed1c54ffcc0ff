#include "pinectl/api_call.h"
#include "pinectl/commands.h"
#include "pinectl/http_client.h"

namespace pine {

int cmdApprovals(const std::string& home, bool json, std::ostream& out, std::ostream& err) {
  auto a = callApi(home, "GET", "/v1/approvals");
  if (!a.ok()) return reportFailure(a, err);
  if (json) {
    out << a.body.dump(2) << "\n";
    return 0;
  }
  auto list = a.body.value("approvals", nlohmann::json::array());
  if (list.empty()) out << "no approvals waiting\n";
  for (auto& item : list) out << formatApproval(item);
  return 0;
}

static int answer(const std::string& home, const std::string& id, const std::string& action,
                  const nlohmann::json& body, std::ostream& out, std::ostream& err) {
  auto a = callApi(home, "POST", "/v1/approvals/" + urlEncode(id) + "/" + action, body);
  if (!a.ok()) return reportFailure(a, err);
  out << "approval " << id << ": " << (action == "approve" ? "approved" : "denied");
  if (body.is_object() && body.value("always", false)) out << " (always, in this conversation)";
  out << "\n";
  return 0;
}

int cmdApprove(const std::string& home, const std::string& id, bool always, std::ostream& out, std::ostream& err) {
  return answer(home, id, "approve", nlohmann::json{{"always", always}}, out, err);
}

int cmdDeny(const std::string& home, const std::string& id, std::ostream& out, std::ostream& err) {
  return answer(home, id, "deny", nlohmann::json::object(), out, err);
}

}  // namespace pine
