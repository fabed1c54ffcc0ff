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

// A field of an answer as one line for the terminal (`otherwise` when absent): a string as it is,
// anything else as JSON, terminal controls removed and line breaks as spaces, since status and
// error texts can carry what strangers wrote (a file's name, a server's answer).
std::string shownField(const nlohmann::json& j, const char* key, const std::string& otherwise = "");

}  // namespace pine
