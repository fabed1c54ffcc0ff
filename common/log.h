// Logging for every pine process: spdlog, one file per process under data/logs/,
// and the audit log (JSON lines, one event a line) shared by the supervisor and
// the broker. Each line is a single write() on an O_APPEND descriptor, so lines
// from the two processes never interleave.
#pragma once
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <functional>
#include <string>
#include <string_view>

namespace pine {

// Sets the default spdlog logger of this process: `role` names it; `file` may be
// empty (stderr only). With `alsoStderr` lines go to stderr too (foreground mode).
void setupLogging(const std::string& role, const std::string& file, bool alsoStderr);

// Opens the audit log. Until this is called audit() writes nothing.
void setupAudit(const std::string& file);

// Reopen every log file (after rotation, on SIGHUP).
void reopenLogs();

// A filter every log and audit line passes through before it is written (pined:
// its redactor of known secrets and patterns; the broker: patterns only). An audit
// line is one JSON document: `auditFilter`, when given, takes those instead, so that a
// JSON-aware redaction keeps them valid JSON (Redactor::redact(line, Format::kJson)).
// Set from the thread that logs; an empty function removes it.
void setLogFilter(std::function<std::string(std::string_view)> filter,
                  std::function<std::string(std::string_view)> auditFilter = {});

// One audit line: {"ts":..., "event":event, "pid":<this pid>, "role":<this role>, ...fields}.
void audit(const std::string& event, nlohmann::json fields = nlohmann::json::object());

// UTC time as 2026-11-30T05:49:41.123Z.
std::string isoTime(long long unixMs);
long long nowMs();

}  // namespace pine
