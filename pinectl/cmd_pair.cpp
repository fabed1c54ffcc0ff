// pinectl pair telegram CODE, pinectl pairings: the owner's end of pairing. The code was sent
// by the bot to whoever wrote to it; typing it here names that account, and nothing is paired
// until the owner says yes to that name.
#include <unistd.h>

#include "pinectl/api_call.h"
#include "pinectl/commands.h"
#include "pinectl/http_client.h"

namespace pine {
namespace {

std::string accountOf(const nlohmann::json& p) {
  std::string name = p.value("name", "");
  std::string user = p.value("username", "");
  return (name.empty() ? "(no name)" : name) + " (" + (user.empty() ? "" : "@" + user + ", ") + "id " +
         p.value("userId", "?") + ")";
}

}  // namespace

int cmdPair(const std::string& home, const std::string& channel, const std::string& code, bool deny, bool yes,
            std::istream& in, std::ostream& out, std::ostream& err) {
  if (channel != "telegram") {
    err << "pinectl: pairing is for telegram only (pinectl pair telegram CODE)\n";
    return 2;
  }
  const std::string path = "/v1/telegram/codes/" + urlEncode(code);
  auto shown = callApi(home, "GET", path);
  if (!shown.ok()) return reportFailure(shown, err);
  const std::string who = accountOf(shown.body);
  const std::string source = shown.body.value("source", "");
  if (!deny && !yes) {
    out << "Telegram account " << who << " wrote to the bot of source '" << source << "'.\n"
        << "Pair it? Its messages will count as yours. [y/N] " << std::flush;
    std::string answer;
    if (!std::getline(in, answer) || (answer != "y" && answer != "Y" && answer != "yes")) {
      out << "not paired; the code stays valid until it expires\n";
      return 1;
    }
  }
  auto done = callApi(home, "POST", path + (deny ? "/deny" : "/pair"), nlohmann::json::object());
  if (!done.ok()) return reportFailure(done, err);
  if (deny) out << "denied " << who << ": it is never asked about again (pinectl pairings remove to undo)\n";
  else out << "paired " << who << " on source '" << source << "'\n";
  return 0;
}

int cmdPairings(const std::string& home, bool json, std::ostream& out, std::ostream& err) {
  auto a = callApi(home, "GET", "/v1/telegram/pairings");
  if (!a.ok()) return reportFailure(a, err);
  if (json) {
    out << a.body.dump(2) << "\n";
    return 0;
  }
  auto list = a.body.value("pairings", nlohmann::json::array());
  if (list.empty()) out << "no pairings\n";
  for (auto& p : list) {
    out << p.value("source", "") << "  " << p.value("state", "") << "  " << accountOf(p);
    if (p.contains("expiresAt")) out << "  code expires " << p["expiresAt"].get<std::string>();
    if (p.contains("note")) out << "  " << p["note"].get<std::string>();
    out << "\n";
  }
  return 0;
}

int cmdUnpair(const std::string& home, const std::string& source, const std::string& userId, std::ostream& out,
              std::ostream& err) {
  auto a = callApi(home, "DELETE", "/v1/telegram/pairings/" + urlEncode(source) + "/" + urlEncode(userId));
  if (!a.ok()) return reportFailure(a, err);
  out << "removed the pairing of account " << userId << " on source '" << source << "'\n";
  return 0;
}

}  // namespace pine
