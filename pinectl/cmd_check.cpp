#include <iostream>
#include <sstream>

#include "config/check.h"
#include "config/load.h"
#include "pinectl/cmd_redact.h"
#include "pinectl/commands.h"
#include "pinectl/http_client.h"
#include "sandbox/sandbox_host.h"

namespace pine {

namespace {

// JSON for scripts: {"valid", "errors": [{file, line, column, key, message, hint}], "notes": [{file,
// key, message, fix}], "running": [what the running pine reports]}; the same exit codes as the text.
int checkJson(const std::string& home, const std::string& backend, const std::string& detail, std::ostream& os) {
  nlohmann::json out = {{"valid", true}, {"errors", nlohmann::json::array()}, {"notes", nlohmann::json::array()}};
  config::LoadResult r = config::loadHome(home);
  int rc = 0;
  if (!r.ok()) {
    out["valid"] = false;
    for (auto& e : r.errors)
      out["errors"].push_back({{"file", e.file}, {"line", e.line}, {"column", e.column}, {"key", e.keyPath},
                               {"message", e.message}, {"hint", e.hint}});
    rc = 2;
  } else {
    for (auto& n : config::securityNotes(*r.home, config::gatherHomeFacts(*r.home, backend, detail)))
      out["notes"].push_back({{"file", n.file}, {"key", n.keyPath}, {"message", n.message}, {"fix", n.fix}});
    std::ostringstream live;
    if (printLiveNotes(home, live) > 0) {
      std::istringstream lines(live.str());
      for (std::string line; std::getline(lines, line);) out["running"].push_back(line);
    }
    rc = out["notes"].empty() && !out.contains("running") ? 0 : 1;
  }
  os << out.dump(2) << "\n";
  return rc;
}

}  // namespace

int cmdCheck(const std::string& home, bool json) {
  // The sandbox this machine can give, probed the way pined probes it.
  const auto facts = sandbox::makeSandboxHost(sandbox::platformBackend())->facts();
  std::string backend = "full";
  if (facts.refused) backend = "none";
  else if (facts.degraded) backend = "degraded";
  // Errors quote configuration lines, which may hold a .env value (a command line, a topic):
  // shown redacted like pined's log, since check's output is what gets pasted into a question.
  std::ostringstream text;
  int rc = 0;
  if (json) {
    rc = checkJson(home, backend, facts.description, text);
  } else {
    rc = config::runCheck(home, backend, facts.description, text);
    if (rc != 2 && printLiveNotes(home, text) > 0) rc = 1;
  }
  std::string error, shortKeys;
  auto redactor = homeRedactor(home, error, shortKeys);
  if (!redactor) redactor.emplace(std::vector<std::string>{});  // the patterns still apply
  std::cout << redactor->redact(text.str(), json ? redact::Format::kJson : redact::Format::kPlain);
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
    std::cout << "configuration reloaded"
              << (j.value("brokerRestarts", false) ? "; the broker restarts to apply it (its folders changed)" : "") << "\n";
    return 0;
  }
  std::cerr << "configuration NOT reloaded; the previous one stays in force:\n";
  for (auto& e : j["errors"]) std::cerr << "  " << e.get<std::string>() << "\n";
  return 2;
}

}  // namespace pine
