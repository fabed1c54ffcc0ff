// pinectl's commands, one file each. Each returns the process exit status.
#pragma once
#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

namespace pine {

int cmdStatus(const std::string& home, bool json);
int cmdTasks(const std::string& home, bool json);
int cmdSend(const std::string& home, const std::string& agent, const std::string& text, bool wait, bool json);
int cmdLogs(const std::string& home, bool follow, bool json);
// Security notes of the home's configuration: exit 0 clean, 1 notes, 2 invalid configuration.
int cmdCheck(const std::string& home);
// Asks pined to re-read the configuration: exit 0 reloaded, 2 invalid (the old one stays).
int cmdReload(const std::string& home);
// secret set NAME (value from the terminal without echo, or stdin) | unset NAME | list.
int cmdSecret(const std::string& home, const std::string& action, const std::string& name);

// One audit line made readable: time, event, who, then the other fields as key=value.
std::string formatAuditLine(const std::string& line);
// "3s", "2m05s", "1h02m", "3d04h".
std::string formatDuration(double seconds);

}  // namespace pine
