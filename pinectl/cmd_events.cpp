#include "pinectl/api_call.h"
#include "pinectl/commands.h"
#include "pinectl/http_client.h"

namespace pine {

std::string formatEvent(const nlohmann::json& e) {
  // Topics and payloads are outside text: shown without terminal controls or invisible reordering,
  // on one line (before: a webhook's string payload could clear the screen or write the clipboard).
  auto text = [&](const char* key) { return shownField(e, key, "-"); };
  std::string time = e.contains("time") ? text("time") : text("createdAt");
  return text("seq") + "  " + time + "  " + text("topic") + "  " + text("trust") + "  " + text("payload");
}

int cmdEvents(const std::string& home, bool follow, const std::string& topic, bool json, std::ostream& out,
              std::ostream& err) {
  auto a = callApi(home, "GET", "/v1/events" + (topic.empty() ? "" : "?topic=" + urlEncode(topic)));
  if (!a.ok()) return reportFailure(a, err);
  long long last = 0;
  auto list = a.body.value("events", nlohmann::json::array());
  std::sort(list.begin(), list.end(),
            [](const nlohmann::json& x, const nlohmann::json& y) { return x.value("seq", 0LL) < y.value("seq", 0LL); });
  for (auto& e : list) {
    out << (json ? e.dump() : formatEvent(e)) << "\n";
    last = std::max(last, e.value("seq", 0LL));
  }
  if (!follow) return 0;
  out.flush();
  // Go on from the last one listed: the stream replays what came in between, so nothing is missed.
  std::string path = "/v1/events/stream?after=" + std::to_string(last);
  if (!topic.empty()) path += "&topic=" + urlEncode(topic);
  ControlClient client(home);
  bool fellBehind = false;
  HttpResult r = client.stream("GET", path, "", [&](const SseEvent& ev) {
    if (ev.event == "overflow") {
      fellBehind = true;
      return false;
    }
    auto e = nlohmann::json::parse(ev.data, nullptr, false);
    if (ev.event != "event" || !e.is_object()) return true;
    out << (json ? e.dump() : formatEvent(e)) << "\n";
    out.flush();
    return bool(out);  // its reader went away (`| head -1`): done, as tail -f | head ends
  });
  if (!out) return 0;
  if (r.status != 200) return reportFailure(ApiAnswer{r.status, nlohmann::json::parse(r.body, nullptr, false)}, err);
  err << (fellBehind ? "pinectl: this terminal fell behind the events; run it again to go on\n"
                     : "pinectl: pine closed the event stream\n");
  return 1;
}

}  // namespace pine
