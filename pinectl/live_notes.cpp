// What only the running daemon knows, added to `pinectl check`: an owner channel that does not
// work (a bot token Telegram refused, a server that keeps failing). Nothing when pine is not
// running or cannot be asked: the configuration's own notes stand alone then.
#include "pinectl/commands.h"
#include "pinectl/http_client.h"

namespace pine {

int printLiveNotes(const std::string& home, std::ostream& out) {
  nlohmann::json status;
  try {
    ControlClient client(home);
    HttpResult r = client.request("GET", "/v1/status");
    if (r.status != 200) return 0;
    status = nlohmann::json::parse(r.body, nullptr, false);
  } catch (std::exception&) {
    return 0;
  }
  if (!status.is_object()) return 0;
  int notes = 0;
  for (auto& c : status.value("channels", nlohmann::json::array())) {
    std::string state = c.value("state", "");
    if (state == "polling" || state == "starting") continue;
    out << "running pine: " << c.value("type", "") << " source '" << c.value("source", "") << "' is " << state;
    if (c.contains("detail")) out << ": " << c["detail"].get<std::string>();
    out << "\n";
    notes++;
  }
  return notes;
}

}  // namespace pine
