// pine-web as an MCP server: JSON-RPC 2.0, one message a line, on one socket (the stdio
// transport's framing). initialize, ping, tools/list and tools/call; notifications are read
// and dropped. Each tools/call runs on a thread of its own (at most four at once), so a slow
// page does not hold up a ping; answers are written whole, one at a time.
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "web/job/web_job.h"

namespace pine::web {

// The answer to one request, or nullopt for a notification or a response. tools/call is
// answered here too (synchronously): serve() moves it to a thread.
std::optional<nlohmann::json> answer(const nlohmann::json& message, const WebJob& job);

// The tools this job offers: fetch, and search when a search service is configured.
nlohmann::json toolList(const WebJob& job);

// Reads the job's line and then requests from `fd` until it closes; returns the exit status.
int serve(int fd);

}  // namespace pine::web
