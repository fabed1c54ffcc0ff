#include <iostream>

#include "pinectl/commands.h"
#include "pinectl/http_client.h"

namespace pine {

int cmdSend(const std::string& home, const std::string& agent, const std::string& text, bool wait, bool json) {
  ControlClient client(home);
  nlohmann::json body = {{"text", text}, {"wait", wait}};
  HttpResult r = client.request("POST", "/v1/agents/" + agent + "/messages", body.dump());
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded()) {
    std::cerr << "pinectl: pine answered " << r.status << " with no JSON\n";
    return 1;
  }
  if (r.status != 200 && r.status != 202) {
    std::cerr << "pinectl: " << j.value("error", "the request failed") << "\n";
    return 1;
  }
  if (json) {
    std::cout << j.dump(2) << "\n";
  } else if (r.status == 202) {
    std::cout << "task " << j.value("task", "") << " started\n";
  } else if (j.value("state", "") == "done") {
    std::cout << j.value("answer", "") << "\n";
  } else {
    std::cerr << "task " << j.value("id", "") << " failed: " << j.value("error", "") << "\n";
  }
  return r.status == 202 || j.value("state", "") == "done" ? 0 : 1;
}

}  // namespace pine
