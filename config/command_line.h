// How a command source's command line is shown to the owner (the add_source question,
// `pinectl check`, pined's log): every word, quoted for a POSIX shell where it needs it, so
// that what is shown is exactly what runs, word for word; a character that would not show as
// itself (a control, a bidirectional override, a zero-width mark) as an escape in $'...'.
#pragma once
#include <string>
#include <vector>

#include "config/model.h"

namespace pine::config {

std::string shownCommandLine(const std::vector<std::string>& argv);

// The agent whose sandbox a command source runs in: its own, or main's for a source of all agents.
inline const std::string& commandAgent(const Source& s) {
  static const std::string kMain = "main";
  return s.agent.empty() ? kMain : s.agent;
}

}  // namespace pine::config
