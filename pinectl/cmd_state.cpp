#include "pinectl/api_call.h"
#include "pinectl/commands.h"
#include "pinectl/http_client.h"

namespace pine {

int cmdStateGet(const std::string& home, const std::string& key, std::ostream& out, std::ostream& err) {
  auto a = callApi(home, "GET", "/v1/state/" + urlEncode(key));
  if (!a.ok()) return reportFailure(a, err);
  out << (a.body.contains("value") ? a.body["value"] : a.body).dump(2) << "\n";
  return 0;
}

int cmdStateSet(const std::string& home, const std::string& key, const std::string& jsonText, std::ostream& out,
                std::ostream& err) {
  auto value = nlohmann::json::parse(jsonText, nullptr, false);
  if (value.is_discarded()) {
    err << "pinectl: the value must be JSON, e.g. '\"text\"', 42 or '{\"a\": 1}' (quote it for the shell)\n";
    return 2;
  }
  auto a = callApi(home, "PUT", "/v1/state/" + urlEncode(key), {{"value", value}});
  if (!a.ok()) return reportFailure(a, err);
  out << key << " set\n";
  return 0;
}

int cmdSchedules(const std::string& home, bool json, std::ostream& out, std::ostream& err) {
  auto a = callApi(home, "GET", "/v1/schedules");
  if (!a.ok()) return reportFailure(a, err);
  if (json) {
    out << a.body.dump(2) << "\n";
    return 0;
  }
  auto list = a.body.value("schedules", nlohmann::json::array());
  if (list.empty()) out << "no schedules\n";
  auto text = [](const nlohmann::json& s, const char* key) {
    if (!s.contains(key)) return std::string("-");
    return s[key].is_string() ? s[key].get<std::string>() : s[key].dump();
  };
  for (auto& s : list)
    out << text(s, "id") << "  " << text(s, "agent") << "  " << text(s, "when") << "  next " << text(s, "next")
        << "\n  " << text(s, "task") << "\n";
  return 0;
}

}  // namespace pine
