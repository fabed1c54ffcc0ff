// One JSON call to the control API and the error line pinectl prints when it fails.
#pragma once
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

namespace pine {

struct ApiAnswer {
  int status = 0;
  nlohmann::json body;  // discarded (is_discarded()) when the answer was not JSON
  bool ok() const { return status >= 200 && status < 300 && !body.is_discarded(); }
};

ApiAnswer callApi(const std::string& home, const std::string& method, const std::string& path,
                  const nlohmann::json& body = nullptr);
// Prints "pinectl: <the API's error>" to err and returns 1.
int reportFailure(const ApiAnswer& a, std::ostream& err);

}  // namespace pine
