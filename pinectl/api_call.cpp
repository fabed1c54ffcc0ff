#include "pinectl/api_call.h"

#include <ostream>

#include "common/outside_text.h"
#include "pinectl/http_client.h"

namespace pine {

ApiAnswer callApi(const std::string& home, const std::string& method, const std::string& path,
                  const nlohmann::json& body) {
  ControlClient client(home);
  HttpResult r = client.request(method, path, body.is_null() ? "" : body.dump());
  return ApiAnswer{r.status, nlohmann::json::parse(r.body, nullptr, false)};
}

int reportFailure(const ApiAnswer& a, std::ostream& err) {
  if (a.body.is_object() && a.body.contains("error") && a.body["error"].is_string())
    err << "pinectl: " << a.body["error"].get<std::string>() << "\n";
  else
    err << "pinectl: pine answered " << a.status << (a.body.is_discarded() ? " with no JSON" : "") << "\n";
  return 1;
}

std::string shownField(const nlohmann::json& j, const char* key, const std::string& otherwise) {
  if (!j.is_object() || !j.contains(key)) return otherwise;
  std::string text = shownToOwner(j[key].is_string() ? j[key].get<std::string>() : j[key].dump());
  for (char& c : text)
    if (c == '\n' || c == '\t') c = ' ';
  return text;
}

}  // namespace pine
