#include <iostream>

#include "config/check.h"
#include "config/load.h"
#include "pinectl/commands.h"
#include "pinectl/http_client.h"
#include "sandbox/sandbox_host.h"

namespace pine {

int cmdCheck(const std::string& home) {
  // The sandbox this machine can give, probed the way pined probes it.
  const auto facts = sandbox::makeSandboxHost(sandbox::platformBackend())->facts();
  std::string backend = "full";
  if (facts.refused) backend = "none";
  else if (facts.degraded) backend = "degraded";
  int rc = config::runCheck(home, backend, facts.description, std::cout);
  if (rc != 2 && printLiveNotes(home, std::cout) > 0) rc = 1;
  return rc;
}

int cmdReload(const std::string& home) {
  ControlClient client(home);
  HttpResult r = client.request("POST", "/v1/reload", "{}");
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded() || r.status != 200) {
    std::cerr << "pinectl: reload failed: " << (j.is_discarded() ? r.body : j.value("error", r.body)) << "\n";
    return 1;
  }
  if (j.value("ok", false)) {
    std::cout << "configuration reloaded\n";
    return 0;
  }
  std::cerr << "configuration NOT reloaded; the previous one stays in force:\n";
  for (auto& e : j["errors"]) std::cerr << "  " << e.get<std::string>() << "\n";
  return 2;
}

}  // namespace pine
