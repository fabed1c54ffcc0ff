#include "pinectl/cmd_guard.h"

#include <istream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "sandbox/guard/bash_guard.h"

namespace pine {

int cmdGuardBash(std::istream& in, std::ostream& out, bool json) {
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::string command = line;
    if (json) {
      // A bad line still gets its answer, so that output lines match input lines.
      auto parsed = nlohmann::json::parse(line, nullptr, false);
      if (parsed.is_discarded() || !parsed.is_string()) {
        out << "block: invalid JSON line\n";
        out.flush();
        continue;
      }
      command = parsed.get<std::string>();
    }
    guard::Verdict v = guard::checkBashCommand(command);
    if (v.allowed)
      out << "allow\n";
    else
      out << "block: " << v.reason << "\n";
    out.flush();
  }
  return 0;
}

}  // namespace pine
